"""One error hierarchy; each class carries the exit code the CLI returns for it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prhub.logmask import hidden


class PrhubError(Exception):
    """An error the user can act on: the message says what failed and what to do."""

    exit_code = 1

    def __init__(self, message: Any = "", *args: Any) -> None:
        # A server's words go into many messages: what it echoed of a secret never shows.
        super().__init__(hidden(message) if isinstance(message, str) else message, *args)


class ConfigError(PrhubError):
    """A setting is missing or malformed."""

    exit_code = 3


class GitHubAuthError(PrhubError):
    """GitHub rejected the token."""

    exit_code = 4


class RepoNotFound(PrhubError):
    """The repository does not exist or the token cannot see it."""

    exit_code = 5


class PRNotFound(PrhubError):
    """The pull request does not exist in the repository."""

    exit_code = 6


class PRNotMerged(PrhubError):
    """The pull request is not merged and --allow-unmerged was not given."""

    exit_code = 7


class GitHubUnavailable(PrhubError):
    """GitHub could not be reached or kept failing after retries."""

    exit_code = 8


class LLMUnavailable(PrhubError):
    """The LLM endpoint could not be reached or kept failing after retries."""

    exit_code = 9


class LLMRequestError(PrhubError):
    """The LLM endpoint refused the request (bad key, unknown model, bad request)."""

    exit_code = 10


class LLMInvalidReply(PrhubError):
    """The model's reply failed validation twice."""

    exit_code = 11


class PartialFailure(PrhubError):
    """Some PRs of a weekly run failed; the report was written with the rest."""

    exit_code = 12


class StoreError(PrhubError):
    """The local store cannot be opened or written."""

    exit_code = 13


class OutputError(PrhubError):
    """The output file cannot be written."""

    exit_code = 14


class PdfUnavailable(PrhubError):
    """No PDF could be printed: Chromium is missing, failed or took too long."""

    exit_code = 15


class BatchPending(PrhubError):
    """--wait waited as long as it may and a batch still runs; a rerun collects it."""

    exit_code = 16


class ReposFailed(PrhubError):
    """Repositories of a --all run failed for different reasons; the others are complete."""

    exit_code = 17

    def __init__(self, message: str, exit_code: int = 17) -> None:
        # Repositories that all failed alike exit as that failure does.
        super().__init__(message)
        self.exit_code = exit_code


class EmptySite(PrhubError):
    """The store holds nothing a site could show."""

    exit_code = 18


class PostError(PrhubError):
    """The week's discussion or chat message could not be posted; the report was written."""

    exit_code = 19


class ImportRefused(PrhubError):
    """`prhub import` refused files that claim to be prhub's; the valid ones were imported."""

    exit_code = 20


class NoCJKFont(PdfUnavailable):
    """No installed font covers the page's Chinese: its PDF would print boxes."""

    exit_code = 21


class RestoreError(PrhubError):
    """A published site could not be restored whole into the store: nothing of it was kept."""

    exit_code = 22


def set_secret(name: str, env: Mapping[str, str] | None = None) -> str:
    """How to provide a missing secret: in CI, where to add it; on a terminal, to export it."""
    env = os.environ if env is None else env
    if env.get("GITHUB_ACTIONS") == "true" and name == "GITHUB_TOKEN":  # Actions makes this one
        return (
            "pass the workflow's token to the step as env GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}"
        )
    if env.get("GITHUB_ACTIONS") == "true":
        return (
            f"add the secret {name} in the repository's Settings > Secrets and variables > "
            f"Actions, and pass it to the step as env {name}: ${{{{ secrets.{name} }}}}"
        )
    if env.get("CI", "").lower() in ("true", "1"):
        return f"set {name} as a secret variable of this CI job"
    return f"export {name}"


class Interrupted(BaseException):  # noqa: N818 (a signal, not an error)
    """SIGINT or SIGTERM stopped the run; `kept` says what was stored before it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_code = 128 + signum
        self.kept = ""
