"""GitHub through PyGithub: merged PRs in a window, one PR with files and reviews."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timedelta
from typing import Any

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from github.Issue import Issue
from github.PullRequest import PullRequest as GithubPullRequest

from prhub import retry
from prhub.config import Settings, shown_url
from prhub.errors import (
    ConfigError,
    GitHubAuthError,
    GitHubUnavailable,
    PrhubError,
    PRNotFound,
    RepoNotFound,
)
from prhub.model import FileChange, PullRequest, Review
from prhub.source_http import IncompleteSearch, Overdue, guard, origin

_REFERENCE = re.compile(
    r"(?:(?<![\w/])#|github\.com/[\w.-]+/[\w.-]+/(?:pull|issues)/)(\d{1,7})\b", re.IGNORECASE
)
SEARCH_LIMIT = 1000  # GitHub serves at most this many results of one search
SMALLEST_WINDOW = timedelta(minutes=2)


def connect(settings: Settings) -> Github:
    """A PyGithub client whose own retries and throttling are off: prhub's policy owns retries."""
    if not (origin(settings.github_url) or "").startswith(("http://", "https://")):
        raise ConfigError(  # PyGithub crashes on these
            f"bad GitHub API URL {shown_url(settings.github_url)!r}: use e.g. https://api.github.com"
        )
    token = settings.github_token.get_secret_value() if settings.github_token else None
    client = Github(
        base_url=settings.github_url.rstrip("/"),
        auth=Auth.Token(token) if token else None,
        timeout=math.ceil(settings.timeout),  # int() turns 0.5 s into 0, which requests refuses
        per_page=100,
        retry=None,
        # One connection per worker thread: a smaller pool drops connections, with a warning.
        pool_size=settings.jobs,
        seconds_between_requests=None,
        seconds_between_writes=None,
        user_agent="prhub",
    )
    guard(client)
    return client


def references(text: str, own: int | None = None) -> list[int]:
    """Issue and PR numbers a text refers to ("fixes #12", "#34", a GitHub URL), in order."""
    found = dict.fromkeys(int(m) for m in _REFERENCE.findall(text or ""))
    return [n for n in found if n != own]


def pull_request_from_payload(
    repo: str,
    pull: dict[str, Any],
    files: list[dict[str, Any]],
    reviews: list[dict[str, Any]] | None = None,
) -> PullRequest:
    """A PullRequest from GitHub REST payloads (pull, its files, its reviews)."""
    number = pull["number"]
    title, body = _text(pull.get("title")), _text(pull.get("body"))
    return PullRequest(
        repo=repo,
        number=number,
        title=title,
        body=body,
        author=(pull.get("user") or {}).get("login", "ghost"),
        author_association=pull.get("author_association"),
        labels=[label["name"] for label in pull.get("labels") or []],
        url=pull.get("html_url") or "",
        created_at=pull["created_at"],
        merged_at=pull.get("merged_at"),
        merged=bool(pull.get("merged") or pull.get("merged_at")),
        merge_commit_sha=pull.get("merge_commit_sha") if pull.get("merged_at") else None,
        base_ref=(pull.get("base") or {}).get("ref", ""),
        head_ref=(pull.get("head") or {}).get("ref", ""),
        head_sha=(pull.get("head") or {}).get("sha", ""),
        additions=pull.get("additions", 0),
        deletions=pull.get("deletions", 0),
        changed_files=pull.get("changed_files", len(files)),
        files=[
            FileChange(
                path=_text(f["filename"]),
                previous_path=_text(f.get("previous_filename")) or None,
                status=f.get("status", "modified"),
                additions=f.get("additions", 0),
                deletions=f.get("deletions", 0),
                patch=None if f.get("patch") is None else _text(f["patch"]),
            )
            for f in files
        ],
        reviews=[
            Review(author=(r.get("user") or {}).get("login", "ghost"), state=r.get("state", ""))
            for r in reviews or []
        ],
        referenced_issues=references(f"{title}\n{body}", own=number),
    )


def _text(value: str | None) -> str:
    """Text safe to store and send: a lone surrogate (bytes that were not UTF-8) becomes U+FFFD."""
    return (value or "").encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class GitHubSource:
    """Reads merged pull requests; every GitHub failure leaves as a PrhubError."""

    def __init__(
        self,
        settings: Settings,
        client: Github | None = None,
        counter: retry.RetryCounter | None = None,
    ) -> None:
        self.settings = settings
        self.client = client or connect(settings)
        self.counter = counter

    def close(self) -> None:
        self.client.close()

    def pull_payload(self, repo: str, number: int) -> dict[str, Any]:
        """The pull payload alone: one request, enough to tell whether a PR changed."""

        def fetch() -> dict[str, Any]:
            # Through PyGithub's requester, the documented way to call an endpoint directly:
            # one request, where get_repo().get_pull() would first fetch the repository.
            _, data = self.client.requester.requestJsonAndCheck(
                "GET", f"/repos/{repo}/pulls/{number}"
            )
            return data

        payload = self._call(fetch, f"fetching {repo}#{number}", repo=repo, number=number)
        if payload["number"] != number:
            raise GitHubUnavailable(
                f"GitHub answered #{payload['number']} when asked for {repo}#{number}: rerun later"
            )
        return payload

    def pull(self, repo: str, number: int, payload: dict[str, Any] | None = None) -> PullRequest:
        """One PR with every changed file over all pages, its reviews and references."""
        payload = payload or self.pull_payload(repo, number)
        other = origin(payload["url"])  # where PyGithub would list the files and reviews
        if other != origin(self.settings.github_url):
            raise GitHubUnavailable(
                f"GitHub's answer for {repo}#{number} points to another host, "
                f"{other or 'an unreadable address'}: not followed; check --github-url"
            )
        # Built from the payload in hand, so listing files and reviews does not refetch it.
        pull = self.client.create_from_raw_data(GithubPullRequest, payload)
        # One call per list, and the same list object on every attempt: a retry resumes at the
        # page that failed, so one attempt costs one request and a fault costs one more.
        pages, reviewed = pull.get_files(), pull.get_reviews()
        files = self._call(
            lambda: [f.raw_data for f in pages],
            f"fetching files of {repo}#{number}",
            repo=repo,
            number=number,
        )
        reviews = self._call(
            lambda: [r.raw_data for r in reviewed],
            f"fetching reviews of {repo}#{number}",
            repo=repo,
            number=number,
        )
        return pull_request_from_payload(repo, payload, files, reviews)

    def merged_between(self, repo: str, start: datetime, end: datetime) -> list[dict[str, Any]]:
        """Search hits of PRs merged in [start, end): all pages, windows split past 1,000."""
        hits = self._search(repo, start, end)
        inside = {h["number"]: h for h in hits if start <= h["merged_at"] < end}
        return [inside[n] for n in sorted(inside)]

    def _search(
        self, repo: str, lo: datetime, hi: datetime, halve: bool = True
    ) -> list[dict[str, Any]]:
        """Every hit in [lo, hi); halved past 1,000 hits, and once when it stays incomplete."""
        last = hi - timedelta(seconds=1)  # GitHub's a..b range includes both ends
        window = f"{lo.isoformat()}..{last.isoformat()}"
        small = hi - lo <= SMALLEST_WINDOW
        # Whole seconds: GitHub's search reads times to the second.
        middle = lo + timedelta(seconds=(hi - lo).total_seconds() // 2)
        try:
            hits = self._search_once(repo, window)
        except IncompleteSearch:
            # Retried already; a smaller window gives GitHub's search less to do in its time.
            if not halve or small:
                raise GitHubUnavailable(
                    f"GitHub's search for PRs of {repo} merged {window} stayed incomplete "
                    "(GitHub's search timed out) after retries and halving: rerun later"
                ) from None
            return self._search(repo, lo, middle, False) + self._search(repo, middle, hi, False)
        if hits is not None:
            return hits
        if small:
            raise GitHubUnavailable(
                f"GitHub counts {SEARCH_LIMIT} or more PRs of {repo} merged {window}, "
                "more than its search lists: prhub will not report part of them"
            )
        return self._search(repo, lo, middle, halve) + self._search(repo, middle, hi, halve)

    def _search_once(self, repo: str, window: str) -> list[dict[str, Any]] | None:
        """The hits of one search; None when GitHub counts 1,000 or more, as many as it lists."""
        what = f"searching {repo}"
        results = self.client.search_issues(
            f"repo:{repo} is:pr is:merged merged:{window}", sort="created", order="asc"
        )
        # totalCount is capped at 1,000 before pages are read: the cap means "maybe more".
        if self._call(lambda: results.totalCount, what, repo=repo) >= SEARCH_LIMIT:
            return None
        # Attributes, not raw_data: reading raw_data of a search item refetches the issue.
        # A retry iterates the same list again: read pages are kept, the failed one refetched.
        return self._call(lambda: [_hit(repo, item) for item in results], what, repo=repo)

    def _call(self, fn: Any, what: str, *, repo: str, number: int | None = None) -> Any:
        try:
            return retry.call(fn, self.settings, _retry_hint, what=what, counter=self.counter)
        except PrhubError:
            raise
        except GithubException as exc:
            raise self._translate(exc, repo, number) from None
        except requests.exceptions.SSLError:
            raise GitHubUnavailable(
                f"TLS failure talking to {shown_url(self.settings.github_url)}: "
                "check the URL and certificates"
            ) from None
        except (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
        ):
            raise ConfigError(
                f"bad GitHub API URL {shown_url(self.settings.github_url)!r}: "
                "use e.g. https://api.github.com"
            ) from None
        except requests.exceptions.Timeout:
            raise GitHubUnavailable(
                f"GitHub at {shown_url(self.settings.github_url)} did not answer within "
                f"{self.settings.timeout:g} s while {what}: raise PRHUB_TIMEOUT, or rerun later"
            ) from None
        except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError):
            raise GitHubUnavailable(
                f"GitHub's answer was cut short or garbled while {what} "
                f"({shown_url(self.settings.github_url)}): rerun later"
            ) from None
        except requests.exceptions.RequestException as exc:
            raise GitHubUnavailable(
                f"cannot reach GitHub at {shown_url(self.settings.github_url)} "
                f"({type(exc).__name__}): "
                "check the network or --github-url, then rerun"
            ) from None

    def _translate(self, exc: GithubException, repo: str, number: int | None) -> PrhubError:
        message = _message(exc)
        if exc.status == 401:
            return GitHubAuthError(f"GitHub rejected the token ({message}): check GITHUB_TOKEN")
        if exc.status == 404:
            if number is not None and self._repo_exists(repo):
                return PRNotFound(f"{repo}#{number} does not exist")
            return RepoNotFound(
                f"repository {repo} not found (or GITHUB_TOKEN cannot see it): check --repo"
            )
        if exc.status == 403 and not _is_rate_limit(exc):
            return GitHubAuthError(
                f"GitHub refused access to {repo} ({message}): check the token's scopes"
            )
        if _is_rate_limit(exc):
            token = self.settings.github_token
            advice = "" if token else "; export GITHUB_TOKEN for a higher limit"
            return GitHubUnavailable(
                f"GitHub rate limit reached ({message}); rerun after {_reset_hint(exc)}{advice}"
            )
        return GitHubUnavailable(f"GitHub answered {exc.status} ({message}); rerun later")

    def _repo_exists(self, repo: str) -> bool:
        """Whether the repository answers: tells a missing PR from a missing repository."""

        def look_up() -> bool:
            try:
                self.client.requester.requestJsonAndCheck("GET", f"/repos/{repo}")
            except GithubException as exc:
                if exc.status == 404:
                    return False
                raise  # a failing GitHub says nothing about the repository: _call reports it
            return True

        return self._call(look_up, f"looking up {repo}", repo=repo)


def _hit(repo: str, item: Issue) -> dict[str, Any]:
    """What a search hit tells: number, last update, merge time."""
    merged = item.pull_request.merged_at if item.pull_request else None
    if merged is None:  # the query asked for merged PRs only
        raise GitHubUnavailable(
            f"GitHub's search for merged PRs of {repo} answered #{item.number}, "
            "which is not a merged PR: rerun later"
        )
    return {"number": item.number, "updated_at": item.updated_at.isoformat(), "merged_at": merged}


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    # One line, and short: the text is the server's, whatever it is.
    return " ".join(str(data.get("message") or exc.status).split())[:200]


def _is_rate_limit(exc: GithubException) -> bool:
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    return (
        isinstance(exc, RateLimitExceededException)
        or exc.status == 429
        or (
            exc.status == 403
            and ("retry-after" in headers or headers.get("x-ratelimit-remaining") == "0")
        )
        or "rate limit" in _message(exc).lower()
    )


def _reset_hint(exc: GithubException) -> str:
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    if "retry-after" in headers:  # a secondary limit: the primary window's reset would mislead
        return f"{headers['retry-after']} s"
    reset = headers.get("x-ratelimit-reset")
    if reset and reset.isdigit():
        minutes = math.ceil(max(0, int(reset) - time.time()) / 60)
        at = datetime.fromtimestamp(int(reset)).astimezone()
        return f"{at:%Y-%m-%d %H:%M:%S %z}, when the limit resets (in {minutes} min)"
    return "a while"


def _retry_hint(exc: BaseException) -> float | None:
    """Seconds to wait before retrying a GitHub failure, or None when retrying cannot help."""
    if isinstance(exc, requests.exceptions.SSLError | requests.exceptions.InvalidURL):
        return None
    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        return 0.0
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return 0.0
    if isinstance(exc, IncompleteSearch | Overdue):  # timed out: it may not next time
        return 0.0
    if not isinstance(exc, GithubException):
        return None
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    if exc.status >= 500:
        return 0.0
    if _is_rate_limit(exc):
        if (wait := retry.retry_after(headers.get("retry-after"))) is not None:
            return wait
        reset = headers.get("x-ratelimit-reset")
        if reset and reset.isdigit():
            return max(0.0, int(reset) - datetime.now().timestamp()) + 1
        return 60.0
    return None
