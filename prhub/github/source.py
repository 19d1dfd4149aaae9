"""GitHub through PyGithub: merged PRs in a window, one PR with files, reviews and discussion."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from github.Issue import Issue
from github.PullRequest import PullRequest as GithubPullRequest

from prhub import retry, transport
from prhub.config import REPO_SHAPE, Settings
from prhub.errors import (
    ConfigError,
    GitHubAuthError,
    GitHubUnavailable,
    PrhubError,
    PRNotFound,
    RepoNotFound,
    set_secret,
)
from prhub.github import pygithub
from prhub.github.ratelimit import (
    Budget,
    Countdown,
    Limited,
    Validators,
    budget_for,
    is_rate_limit,
    pr_requests,
)
from prhub.github.source_http import IncompleteSearch, guard, retry_hint
from prhub.github.source_payload import attributes_text, pull_request_from_payload, same_time
from prhub.logmask import shown_url
from prhub.model import PullRequest

T = TypeVar("T")
SEARCH_LIMIT = 1000  # GitHub serves at most this many results of one search
SMALLEST_WINDOW = timedelta(minutes=2)
# GitHub requests of one run open at once, whatever --jobs says: GitHub answers more than a few
# concurrent requests from one token with its secondary rate limit, and prhub's time goes to
# the LLM anyway. A fixed bound, not a setting: no value above it is safe to offer.
GITHUB_IN_FLIGHT = 4


def connect(
    settings: Settings, stop: retry.StopToken | None = None, budget: Budget | None = None
) -> Github:
    """A PyGithub client whose own retries and throttling are off: prhub's policy owns retries,
    and `budget`, GitHub's rate limits."""
    if not (transport.origin(settings.github_url) or "").startswith(("http://", "https://")):
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
        # One connection per request in flight: a smaller pool drops connections, with a warning.
        pool_size=GITHUB_IN_FLIGHT,
        seconds_between_requests=None,
        seconds_between_writes=None,
        user_agent="prhub",
    )
    guard(client, GITHUB_IN_FLIGHT, stop, budget)
    return client


class GitHubSource:
    """Reads merged pull requests; every GitHub failure leaves as a PrhubError.

    Its `budget` may be shared with other sources on the same token and host; `countdown`
    shows a wait for GitHub's rate limit."""

    def __init__(
        self,
        settings: Settings,
        client: Github | None = None,
        stop: retry.StopToken | None = None,
        budget: Budget | None = None,
        countdown: Countdown | None = None,
    ) -> None:
        self.settings = settings
        self.budget = budget or budget_for(settings)
        self.client = client or connect(settings, stop, self.budget)
        self.stop_token = stop
        self.countdown = countdown

    def close(self) -> None:
        self.client.close()

    def pull_payload(self, repo: str, number: int) -> dict[str, Any]:
        """The pull payload alone: one request, enough to tell whether a PR changed."""
        payload, _ = self.revalidate(repo, number)
        if payload is None:  # only an answer to a conditional request may be "not modified"
            raise GitHubUnavailable(f"GitHub answered 304 for {repo}#{number}: rerun later")
        return payload

    def revalidate(
        self, repo: str, number: int, since: Validators | None = None
    ) -> tuple[dict[str, Any] | None, Validators]:
        """The pull payload and the validators to revalidate it with later; given those of a
        stored copy (`since`), None instead of the payload when GitHub says it has not changed
        (a 304, which costs no rate limit). One request."""
        asked = since.headers() if since else {}

        def fetch() -> tuple[dict[str, Any], Any]:
            # Through PyGithub's requester, the documented way to call an endpoint directly:
            # one request, where get_repo().get_pull() would first fetch the repository. A 304
            # has no body: PyGithub gives None (a 200 without JSON never gets past the guard).
            return self.client.requester.requestJsonAndCheck(
                "GET", f"/repos/{repo}/pulls/{number}", headers=asked or None
            )

        headers, payload = self._call(fetch, f"fetching {repo}#{number}", repo=repo, number=number)
        if payload is None and asked:
            return None, since or Validators()
        if not isinstance(payload, dict) or payload.get("number") != number:
            told = payload.get("number") if isinstance(payload, dict) else None
            raise GitHubUnavailable(
                f"GitHub answered #{told} when asked for {repo}#{number}: rerun later"
            )
        return payload, Validators(headers.get("etag", ""), headers.get("last-modified", ""))

    def pull(self, repo: str, number: int, payload: dict[str, Any] | None = None) -> PullRequest:
        """One PR with every changed file over all pages, its reviews, its review and
        conversation comments (asked only when GitHub counts some) and references."""
        payload = payload or self.pull_payload(repo, number)
        other = transport.origin(payload["url"])  # where PyGithub lists the files and reviews
        if other != transport.origin(self.settings.github_url):
            raise GitHubUnavailable(
                f"GitHub's answer for {repo}#{number} points to another host, "
                f"{other or 'an unreadable address'}: not followed; check --github-url"
            )
        # Built from the payload in hand, so listing files and reviews does not refetch it.
        pull = self.client.create_from_raw_data(GithubPullRequest, payload)
        files = self._list(pull.get_files(), "files", repo, number)
        reviews = self._list(pull.get_reviews(), "reviews", repo, number)
        inline: list[dict[str, Any]] = []
        conversation: list[dict[str, Any]] = []
        if payload.get("review_comments"):
            inline = self._list(pull.get_review_comments(), "review comments", repo, number)
        if payload.get("comments"):
            conversation = self._list(pull.get_issue_comments(), "comments", repo, number)
        return pull_request_from_payload(repo, payload, files, reviews, inline, conversation)

    def _list(self, pages: Any, what: str, repo: str, number: int) -> list[dict[str, Any]]:
        """Every item of a paginated list, as GitHub sent it."""
        # One list object for every attempt: a retry resumes at the page that failed, so one
        # attempt costs one request a page and a fault costs one more.
        return self._call(
            lambda: [pygithub.page_data(item) for item in pages],
            f"fetching {what} of {repo}#{number}",
            repo=repo,
            number=number,
        )

    def attributes(self, repo: str) -> str:
        """The root .gitattributes of the default branch; "" when there is none. One request."""

        def fetch() -> dict[str, Any]:
            try:
                _, data = self.client.requester.requestJsonAndCheck(
                    "GET", f"/repos/{repo}/contents/.gitattributes"
                )
                found: dict[str, Any] = data
            except GithubException as exc:
                if exc.status == 404:
                    return {"type": "none"}
                raise
            return found

        content = self._call(fetch, f"fetching .gitattributes of {repo}", repo=repo)
        return attributes_text(repo, content)

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
        except IncompleteSearch as exc:
            # Retried already; a smaller window gives GitHub's search less to do in its time.
            if not halve or small:
                raise GitHubUnavailable(
                    f"GitHub's search for PRs of {repo} merged {window} stayed incomplete "
                    f"after retries and halving ({exc.why}): rerun later"
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
        # The first page carries the count (capped at 1,000: the cap means "maybe more");
        # totalCount asked first would cost a request of its own.
        counted = self._call(lambda: _first_page(results), what, repo=repo)
        if counted >= SEARCH_LIMIT:
            return None
        # Attributes, not raw_data: reading raw_data of a search item refetches the issue.
        # A retry iterates the same list again: read pages are kept, the failed one refetched.
        hits = self._call(lambda: [_hit(repo, item) for item in results], what, repo=repo)
        listed = len({h["number"] for h in hits})
        if listed < counted:  # part of the week: searched again in halves, else an error
            raise IncompleteSearch(
                f"GitHub's search for PRs of {repo} merged {window} counted {counted} "
                f"but listed {listed}",
                f"it counted {counted} but listed {listed}",
            )
        return hits

    def plan(self, what: str, hits: Iterable[dict[str, Any]], stored: dict[int, str]) -> None:
        """Logs what fetching the PRs of search `hits` needs of the rate limit, given the
        updated_at of the PRs stored (none when they are refetched anyway)."""
        needed = sum(
            0 if same_time(stored.get(hit["number"]), hit.get("updated_at")) else pr_requests(hit)
            for hit in hits
        )
        self.budget.plan(needed, what)

    def _call(self, fn: Callable[[], T], what: str, *, repo: str, number: int | None = None) -> T:
        """`fn` under the retry policy, waiting out GitHub's rate limits (as long as allowed);
        a failure leaves as a PrhubError."""
        while True:
            try:
                return self._attempts(fn, what, repo=repo, number=number)
            except Limited as limited:
                self.budget.wait(limited, what, self.stop_token, self.countdown)

    def _attempts(
        self, fn: Callable[[], T], what: str, *, repo: str, number: int | None = None
    ) -> T:
        try:
            # Each GitHub retry is a line without --verbose: a slow GitHub is not silent.
            return retry.call(
                fn,
                self.settings,
                retry_hint,
                what=what,
                stop=self.stop_token,
                level=logging.WARNING,
            )
        except PrhubError:
            raise
        except GithubException as exc:
            raise self._translate(exc, what, repo, number) from None
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

    def _translate(
        self, exc: GithubException, what: str, repo: str, number: int | None
    ) -> PrhubError:
        message = _message(exc)
        if exc.status == 401 and self.settings.github_token is None:
            return GitHubAuthError(
                f"GitHub at {shown_url(self.settings.github_url)} wants a token and none is set "
                f"({message}): {set_secret('GITHUB_TOKEN')} (or GH_TOKEN)"
            )
        if exc.status == 401:
            return GitHubAuthError(f"GitHub rejected the token ({message}): check GITHUB_TOKEN")
        if exc.status == 404:
            if number is not None and self._repo_exists(repo):
                return PRNotFound(f"{repo}#{number} does not exist")
            return RepoNotFound(
                f"repository {repo} not found (or GITHUB_TOKEN cannot see it): check --repo"
            )
        if _is_rate_limit(exc):  # a client without the budget's guard
            return GitHubUnavailable(f"GitHub's rate limit refused {what} ({message}): rerun later")
        if exc.status == 403:
            return GitHubAuthError(
                f"GitHub refused access to {repo} ({message}): check the token's scopes"
            )
        return GitHubUnavailable(
            f"GitHub answered {exc.status} ({message}) while {what}; rerun later"
        )

    def full_name(self, repo: str) -> str:
        """The repository's name as GitHub spells it (`Owner/Name` for `owner/name`): one
        request, which also finds a missing repository before any other."""

        def look_up() -> Any:
            _, data = self.client.requester.requestJsonAndCheck("GET", f"/repos/{repo}")
            return data.get("full_name") if isinstance(data, dict) else None

        name = self._call(look_up, f"looking up {repo}", repo=repo)
        if not (isinstance(name, str) and REPO_SHAPE.fullmatch(name)):
            raise GitHubUnavailable(
                f"GitHub's answer for {repo} names no repository ({str(name)[:80]!r}): rerun later"
            )
        return name

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


def _first_page(results: Any) -> int:
    """GitHub's count of a search, read with its first page."""
    next(iter(results), None)
    return int(results.totalCount)


def _hit(repo: str, item: Issue) -> dict[str, Any]:
    """What a search hit tells: number, last update, merge time."""
    merged = item.pull_request.merged_at if item.pull_request else None
    if merged is None:  # the query asked for merged PRs only
        raise GitHubUnavailable(
            f"GitHub's search for merged PRs of {repo} answered #{item.number}, "
            "which is not a merged PR: rerun later"
        )
    return {
        "number": item.number,
        "updated_at": item.updated_at.isoformat(),
        "merged_at": merged,
        # How much conversation it has, from the page: an attribute it lacks would refetch it.
        "comments": pygithub.page_data(item).get("comments") or 0,
    }


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    # One line, and short: the text is the server's, whatever it is.
    return " ".join(str(data.get("message") or exc.status).split())[:200]


def _is_rate_limit(exc: GithubException) -> bool:
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    return isinstance(exc, RateLimitExceededException) or is_rate_limit(
        exc.status, headers, _message(exc)
    )
