"""The week's discussion on GitHub: a Discussion in the category named (GraphQL), or an issue
where the repository has Discussions off; created once, then updated in place."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import requests
from github import Github, GithubException
from pydantic import StrictBool, StrictInt, StrictStr, TypeAdapter
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from prhub import retry, transport
from prhub.config import Settings
from prhub.errors import ConfigError, PostError, PrhubError, set_secret
from prhub.names import on_github, web_host
from prhub.store.records import Post, post_hash

T = TypeVar("T")

PLACE = """
query($owner: String!, $name: String!) {
  repository(owner: $owner, name: $name) {
    id
    hasDiscussionsEnabled
    discussionCategories(first: 100) { nodes { id name slug } }
  }
}
"""
DISCUSSION = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) { discussion(number: $number) { id url } }
}
"""
_PAGE = re.compile(r"https?://[^/?#]+/([^/?#]+/[^/?#]+)/(discussions|issues)/(\d+)")
ACCESS = (
    "the token needs write access to its discussions (or issues); in GitHub Actions: "
    "`permissions: discussions: write` (and `issues: write`)"
)


# The parts of GitHub's answers prhub reads, with the types it assumes.
class _Category(TypedDict):
    id: StrictStr
    name: StrictStr
    slug: StrictStr


class _Categories(TypedDict):
    nodes: list[_Category]


class _Repository(TypedDict):
    id: StrictStr
    hasDiscussionsEnabled: StrictBool
    discussionCategories: _Categories


class _Page(TypedDict):
    id: StrictStr
    url: StrictStr


class _Made(TypedDict):
    discussion: _Page


class _Issue(TypedDict):
    number: StrictInt
    html_url: StrictStr


REPOSITORY: TypeAdapter[Any] = TypeAdapter(_Repository)
ISSUE: TypeAdapter[Any] = TypeAdapter(_Issue)
MADE: TypeAdapter[Any] = TypeAdapter(_Made)
PAGE: TypeAdapter[Any] = TypeAdapter(_Page)


class Place(NamedTuple):
    """A repository as a discussion needs it: its node, whether Discussions are on, and its
    categories by name."""

    repo: str
    node: str
    enabled: bool
    categories: list[dict[str, str]]  # each with its id, name and slug

    def category(self, wanted: str) -> str:
        """The id of the category named `wanted` (by name or slug, in any case)."""
        for category in self.categories:
            if wanted.casefold() in (category["name"].casefold(), category["slug"].casefold()):
                return category["id"]
        have = ", ".join(c["name"] for c in self.categories) or "none"
        raise ConfigError(
            f"{self.repo} has no discussion category {wanted!r} (it has: {have}): pass one of "
            "them to --discuss, or add it in the repository's Discussions"
        )


class GitHubPosts:
    """GitHub's GraphQL and REST calls a week's discussion or issue takes, under prhub's retry
    policy; every failure leaves as one PostError (ConfigError for an unknown category)."""

    def __init__(self, client: Github, settings: Settings) -> None:
        self.client = client
        self.settings = settings

    def place(self, repo: str) -> Place:
        owner, name = repo.split("/")
        data = self._graphql(PLACE, {"owner": owner, "name": name}, f"looking up {repo}")
        found = self._shaped(REPOSITORY, data.get("repository"), repo)
        categories = found["discussionCategories"]["nodes"]
        return Place(repo, found["id"], found["hasDiscussionsEnabled"], categories)

    def discussion(self, repo: str, number: int) -> str | None:
        """The node id of the repository's discussion `number`; None when there is none."""
        owner, name = repo.split("/")
        variables = {"owner": owner, "name": name, "number": number}
        what = f"looking up discussion {number} of {repo}"
        try:
            data = self._graphql(DISCUSSION, variables, what, gone=True)
        except _Gone:
            return None
        found = (data.get("repository") or {}).get("discussion")
        return None if found is None else self._shaped(PAGE, found, repo)["id"]

    def create(self, place: Place, category: str, title: str, body: str) -> tuple[str, str]:
        """A new discussion's node id and page."""
        asked = {"repositoryId": place.node, "categoryId": category, "title": title, "body": body}
        made = self._mutation("createDiscussion", asked, place.repo)
        return made["id"], self._page(made["url"], place.repo)

    def update(self, repo: str, node: str, category: str, title: str, body: str) -> str | None:
        """The discussion's page after its update; None when it no longer exists."""
        asked = {"discussionId": node, "categoryId": category, "title": title, "body": body}
        try:
            return self._page(str(self._mutation("updateDiscussion", asked, repo)["url"]), repo)
        except _Gone:
            return None

    def create_issue(self, repo: str, title: str, body: str) -> tuple[str, str]:
        """A new issue's number and page."""
        made = self._rest("POST", f"/repos/{repo}/issues", title, body, repo)
        return str(made["number"]), self._page(made["html_url"], repo)

    def update_issue(self, repo: str, number: int, title: str, body: str) -> str | None:
        """The issue's page after its update; None when it no longer exists."""
        try:
            made = self._rest("PATCH", f"/repos/{repo}/issues/{number}", title, body, repo)
        except _Gone:
            return None
        return self._page(str(made["html_url"]), repo)

    def _page(self, url: str, repo: str) -> str:
        """The page GitHub named for a post, when it is one of `repo`'s on the GitHub prhub
        talks to, over https: any other is never stored, printed as posted, nor linked."""
        if page(url, repo, self.settings.github_url):
            return url
        raise PostError(
            f"GitHub named the week's post in {repo} at a page that is not one of its own on "
            f"https://{web_host(self.settings.github_url)} ({transport.origin(url) or 'no page'}"
            "): not kept nor linked; check --github-url, and the post on GitHub before a rerun"
        )

    def _rest(self, verb: str, path: str, title: str, body: str, repo: str) -> dict[str, Any]:
        """An issue opened or edited (through PyGithub's requester: one request each)."""
        made = verb == "POST"
        what = f"{'opening' if made else 'updating'} the week's issue in {repo}"
        asked = {"title": title, "body": body}
        _, data = self._ask(
            lambda: self.client.requester.requestJsonAndCheck(verb, path, input=asked),
            what,
            repo,
            once=made,
            gone=not made,
        )
        return self._shaped(ISSUE, data, repo)  # type: ignore[no-any-return]

    def _mutation(self, name: str, asked: dict[str, Any], repo: str) -> dict[str, Any]:
        """The discussion a mutation made or changed: its id and page."""
        made = name.startswith("create")
        what = f"{'posting' if made else 'updating'} the week's discussion in {repo}"
        _, data = self._ask(
            lambda: self.client.requester.graphql_named_mutation(
                name, asked, "discussion { id url }"
            ),
            what,
            repo,
            once=made,
            gone=not made,
        )
        return self._shaped(MADE, data, repo)["discussion"]  # type: ignore[no-any-return]

    def _graphql(
        self, query: str, variables: dict[str, Any], what: str, gone: bool = False
    ) -> dict[str, Any]:
        repo = f"{variables['owner']}/{variables['name']}"
        _, data = self._ask(
            lambda: self.client.requester.graphql_query(query, variables), what, repo, gone=gone
        )
        found = data.get("data") if isinstance(data, dict) else None
        if not isinstance(found, dict):
            raise PostError(f"GitHub's answer while {what} holds no data: rerun later")
        return found

    def _shaped(self, shape: TypeAdapter[Any], data: Any, repo: str) -> Any:
        if (wrong := transport.problem(shape, data)) is not None:
            raise PostError(f"GitHub sent a malformed answer about {repo}: {wrong}; rerun later")
        return data

    def _ask(
        self, fn: Callable[[], T], what: str, repo: str, *, once: bool = False, gone: bool = False
    ) -> T:
        """`fn` under the retry policy. A request that makes something (`once`) is tried again
        only when GitHub surely did not take it; given `gone`, a 404 or 410 is _Gone."""
        try:
            return retry.call(
                fn, self.settings, lambda exc: _hint(exc, once), what=what, level=logging.WARNING
            )
        except GithubException as exc:
            if gone and exc.status in (404, 410):
                raise _Gone(_message(exc)) from None
            if exc.status == 401 and self.settings.github_token is None:
                raise PostError(
                    f"GitHub wants a token with write access for {what}, and none is set: "
                    f"{set_secret('GITHUB_TOKEN')} (or GH_TOKEN)"
                ) from None
            raise _translate(exc, what, repo) from None
        except requests.exceptions.RequestException as exc:
            raise PostError(
                f"cannot reach GitHub while {what} ({type(exc).__name__}): rerun to post it"
            ) from None
        except PostError:
            raise
        except PrhubError as exc:  # the answer failed prhub's checks (size, time, redirects)
            raise PostError(f"{exc} (while {what})") from None


class _Gone(PostError):
    """What an update addressed no longer exists: a new one is made."""


def _first_error(exc: GithubException) -> dict[str, Any]:
    """The first of a GraphQL answer's errors; {} for a REST one."""
    data = exc.data if isinstance(exc.data, dict) else {}
    errors = data.get("errors")
    first = errors[0] if isinstance(errors, list) and errors else {}
    return first if isinstance(first, dict) else {}


def _message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    text = _first_error(exc).get("message") or data.get("message") or exc.status
    return " ".join(str(text).split())[:200]  # one short line, whatever the server sent


def _limited(exc: GithubException) -> bool:
    """Whether GitHub refused for its rate limit: nothing was done."""
    headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
    secondary = "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"
    limited = exc.status == 429 or (exc.status == 403 and secondary)
    return limited or _first_error(exc).get("type") == "RATE_LIMITED"


def _hint(exc: BaseException, once: bool) -> float | None:
    """Seconds to wait before another attempt, or None when none should be made."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return 0.0  # never sent
    if isinstance(exc, GithubException) and _limited(exc):
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        return retry.retry_after(headers.get("retry-after")) or 0.0
    if once:
        return None  # a lost answer may hide a discussion made: another attempt would repeat it
    if isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout):
        return 0.0
    if isinstance(exc, GithubException) and exc.status >= 500:
        return 0.0
    return None


def _translate(exc: GithubException, what: str, repo: str) -> PostError:
    message = _message(exc)
    if exc.status == 401:
        return PostError(f"GitHub rejected the token while {what} ({message}): check GITHUB_TOKEN")
    if exc.status == 404:
        return PostError(
            f"repository {repo} not found while {what} (or the token cannot see it): "
            "check --discuss-repo"
        )
    if _limited(exc):
        return PostError(f"GitHub's rate limit held back {what} ({message}): rerun later")
    if exc.status == 403 or _first_error(exc).get("type") in ("FORBIDDEN", "INSUFFICIENT_SCOPES"):
        return PostError(f"GitHub refused {what} ({message}): {ACCESS}")
    return PostError(f"GitHub answered {exc.status} while {what} ({message}): rerun to post it")


def page(url: str, repo: str, api_url: str) -> bool:
    """Whether `url` is a discussion or issue page of `repo` on the GitHub at `api_url`."""
    found = _PAGE.fullmatch(url)
    return bool(found and found[1].lower() == repo.lower() and on_github(url, api_url))


def known(url: str, repo: str) -> Post | None:
    """The post a report's discussion page names, when it is in `repo` (a store imported from a
    site knows the page alone): updated once, then recorded."""
    found = _PAGE.match(url)
    if not found or found[1].lower() != repo.lower():
        return None
    kind = "discussion" if found[2] == "discussions" else "issue"
    return Post(kind, repo.lower(), url, "" if kind == "discussion" else found[3], "")


def publish(
    github: GitHubPosts, repo: str, category: str, post: tuple[str, str], was: Post | None
) -> tuple[Post, str]:
    """The week's discussion in `repo` as it is now: posted, or updated when `post` (its title
    and body) changed since `was`; and a line saying what was done."""
    title, body = post
    key = repo.lower()  # the post's target, in whatever case the repository was named
    digest = post_hash(title, body, category)
    if was is not None and was.hash == digest:
        return was, f"the week's {was.kind} is up to date: {was.url}"
    place = github.place(repo)
    url: str | None = None
    if was is not None and was.kind == "issue":
        url = github.update_issue(repo, int(was.node), title, body)
    elif was is not None and place.enabled:
        chosen = place.category(category)
        node = was.node or github.discussion(repo, int(was.url.rsplit("/", 1)[1]))
        url = node and github.update(repo, node, chosen, title, body)
        was = was._replace(node=node or "")
    if was is not None and url:  # updated in place
        return Post(was.kind, key, url, was.node, digest), f"updated the week's {was.kind} {url}"
    if not place.enabled:
        number, url = github.create_issue(repo, title, body)
        line = f"{repo} has Discussions off: posted the week as issue {url}"
        return Post("issue", key, url, number, digest), line
    node, url = github.create(place, place.category(category), title, body)
    return Post("discussion", key, url, node, digest), f"posted the week's discussion {url}"
