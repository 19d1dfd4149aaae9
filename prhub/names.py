"""What people type for a repository or a PR: owner/name, owner/name.git, a GitHub URL, #N."""

from __future__ import annotations

import re

# A repository URL (https, ssh or scp-like), or a PR's URL; host and scheme are not checked
# beyond looking like GitHub's shapes: GitHub Enterprise hosts differ.
_URL = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://(?:[^@/]+@)?[^/]+/|[^@/\s]+@[^:/\s]+:)"
    r"(?P<repo>[^/\s]+/[^/\s]+?)(?:\.git)?/?(?:/pull/(?P<pr>\d+)\S*)?",
    re.IGNORECASE,
)


def repo_name(text: str) -> str:
    """owner/name from owner/name, owner/name.git or a repository or PR URL; else `text`."""
    text = text.strip()
    match = _URL.fullmatch(text)
    if match:
        return match["repo"]
    return text.removesuffix(".git").rstrip("/") if text.count("/") == 1 else text


def pr_ref(text: str) -> tuple[str | None, int | None]:
    """The repository (when a URL names one) and number of `7372`, `#7372` or a PR URL."""
    text = text.strip()
    match = _URL.fullmatch(text)
    if match and match["pr"]:
        return match["repo"], int(match["pr"])
    bare = text.removeprefix("#")
    return None, int(bare) if bare.isdigit() and bare.isascii() else None
