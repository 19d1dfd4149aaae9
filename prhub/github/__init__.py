"""Stage github: PyGithub calls, the checks of GitHub's answers and the payloads' checks; what
PyGithub offers no public API for, in `pygithub` alone.

Owns fetching and GitHub's errors; never touches tokens, prompts or output."""
