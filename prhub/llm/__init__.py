"""Stage llm: prompt templates, the one OpenAI-compatible client, its HTTP checks and reply reading.

Owns calls and validation; never touches GitHub or PRs' meaning."""
