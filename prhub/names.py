"""What people type for a repository or a PR: owner/name, owner/name.git, a GitHub URL, #N."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from prhub.text import PR_REF, ref_repo

# A repository URL (https, ssh or scp-like); host and scheme are not checked beyond looking
# like GitHub's shapes: GitHub Enterprise hosts differ. A PR's URL is a PR reference (text.PR_REF).
_URL = re.compile(
    r"(?:[a-z][a-z0-9+.-]*://(?:[^@/]+@)?[^/]+/|[^@/\s]+@[^:/\s]+:)"
    r"(?P<repo>[^/\s]+/[^/\s]+?)(?:\.git)?/?",
    re.IGNORECASE,
)


def repo_name(text: str) -> str:
    """owner/name from owner/name, owner/name.git or a repository or PR URL; else `text`."""
    text = text.strip()
    _, repo, _ = _pr_url(text)
    if repo is not None:
        return repo
    match = _URL.fullmatch(text)
    if match:
        return match["repo"]
    return text.removesuffix(".git").rstrip("/") if text.count("/") == 1 else text


def pr_ref(text: str) -> tuple[str | None, int | None]:
    """The repository (when a URL names one) and number of `7372`, `#7372` or a PR URL."""
    text = text.strip()
    found, repo, number = _pr_url(text)
    if found:
        return repo, number
    bare = text.removeprefix("#")
    return None, int(bare) if bare.isdigit() and bare.isascii() else None


def _pr_url(text: str) -> tuple[bool, str | None, int | None]:
    """Whether `text` is a PR reference naming its repository (a PR's page, maybe with a tab
    such as /files after it, or owner/name#N), with that repository and the number."""
    found = PR_REF.match(text)
    if found is None or "/issues/" in found.group(0) or ref_repo(found) is None:
        return False, None, None
    if found.end() < len(text) and text[found.end()] not in "/?#":
        return False, None, None
    return True, ref_repo(found), int(found.group(1))


def git_origin(cwd: Path) -> str | None:
    """owner/name of the checkout's `origin` remote, when `cwd` is in one with a URL remote."""
    try:
        done = subprocess.run(
            ["git", "remote", "get-url", "origin"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or not a directory git can read
    match = _URL.fullmatch(done.stdout.strip()) if done.returncode == 0 else None
    return match["repo"] if match else None


def web_host(api_url: str) -> str:
    """The host of GitHub's pages for its API at `api_url`: github.com for api.github.com and
    for anything else that serves its API (a proxy, a mirror), NAME.ghe.com for api.NAME.ghe.com,
    and the API's own host for GitHub Enterprise Server, whose API is under /api/v3."""
    try:
        parts = urlsplit(api_url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return "github.com"
    if host.startswith("api.") and host.endswith(".ghe.com"):
        return host.removeprefix("api.")
    if parts.path.rstrip("/").lower().endswith("/api/v3") and host:
        return host
    return "github.com"


def on_github(url: str, api_url: str) -> bool:
    """Whether `url` is a page of the GitHub that `api_url` serves, over https."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
    except ValueError:
        return False
    return parts.scheme == "https" and host == web_host(api_url) and not parts.username
