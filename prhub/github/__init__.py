"""Stage github: PyGithub calls, their HTTP adapter and the payloads' checks.

Owns fetching and GitHub's errors; never touches tokens, prompts or output."""
