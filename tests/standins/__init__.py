"""Stand-ins for GitHub and an OpenAI-compatible endpoint, served on 127.0.0.1 for tests."""

from tests.standins.github import GitHubStandIn
from tests.standins.llm import LLMStandIn, schema_instance

__all__ = ["GitHubStandIn", "LLMStandIn", "schema_instance"]
