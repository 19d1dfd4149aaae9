"""A GitHub REST stand-in on 127.0.0.1 that serves pull requests stored as JSON files."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import time
import zlib
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.standins.graphql import Posts
from tests.standins.limits import Limits, charged, revalidated
from tests.standins.server import Answer, StandIn

__all__ = ["Answer", "GitHubStandIn", "StandIn", "pr_of"]

API = "https://api.github.com"
DOCS = "https://docs.github.com/rest"
SEARCH_LIMIT = 1000


def pr_of(path: str) -> int | None:
    """The PR a request path is about (its pull, lists or comments); None for other paths."""
    match = re.fullmatch(r"/repos/[^/]+/[^/]+/(?:pulls|issues)/(\d+)(?:/[a-z_]+)?", path)
    return int(match[1]) if match else None


def _not_found() -> Answer:
    return 404, {}, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _bounds(value: str) -> tuple[datetime, datetime]:
    """The first instant of a search date or datetime, and the first instant after it."""
    start = _when(value)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    step = timedelta(days=1) if len(value) == 10 else timedelta(seconds=1)
    return start, start + step


def _merged_test(value: str) -> Callable[[datetime], bool]:
    """A predicate on merge time for a `merged:` qualifier value (GitHub's range syntax)."""
    if ".." in value:
        low, high = value.split("..", 1)
        lo = None if low == "*" else _bounds(low)[0]
        hi = None if high == "*" else _bounds(high)[1]
        return lambda t: (lo is None or t >= lo) and (hi is None or t < hi)
    op = re.match(r"[<>]=?", value)
    first, after = _bounds(value[op.end() :] if op else value)
    tests: dict[str, Callable[[datetime], bool]] = {
        ">=": lambda t: t >= first,
        ">": lambda t: t >= after,
        "<=": lambda t: t < after,
        "<": lambda t: t < first,
        "": lambda t: first <= t < after,
    }
    return tests[op.group() if op else ""]


class GitHubStandIn(StandIn):
    """GitHub's REST API over a data dir: pull requests, their files, reviews, review comments
    and conversation comments, repository contents, and issue search.

    `<owner>/<repo>/pulls/<N>.json` is a pull; `<N>.files.json`, `<N>.reviews.json`,
    `<N>.comments.json` (review comments) and `<N>.issue_comments.json` (conversation comments)
    are its lists, paged as GitHub pages them; `<owner>/<repo>/contents/<path>` is a file of the
    default branch. `latency` delays every answer; `page_limit` caps a page below GitHub's 100.
    `mirrors` serves a folder under other names too ({"acme/a": "verl-project/verl"}), its
    payloads naming the mirror; a repository in `down` answers every request with a 502.
    `requests`, `paths()`, `per_pr()` and `most_in_flight` tell what a client asked, `charged()`
    what it cost of the rate limit.

    GitHub's primary limits are kept on `clock`: `core_limit` requests a `core_window` seconds,
    `search_limit` searches a minute, refused with `limited_status` past them; an answer has its
    ETag, and a request that holds it gets a 304, free. The search index reports each PR's
    updated_at `index_lag` earlier than its pull does, as a lagging index would.
    """

    fault_kinds = ("500", "502", "503", "secondary", "reset")

    def __init__(
        self,
        data_dir: Path,
        *,
        token: str | None = None,
        port: int = 0,
        fault_rate: float = 0.0,
        seed: int = 0,
        trickle: float = 0.0,
        latency: float = 0.0,
        page_limit: int = 100,
        mirrors: dict[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        core_limit: int = 5000,
        core_window: float = 3600.0,
        search_limit: int = 30,
        limited_status: int = 403,
        index_lag: timedelta = timedelta(0),
    ) -> None:
        super().__init__(port=port, fault_rate=fault_rate, seed=seed, trickle=trickle)
        self.data_dir = Path(data_dir)
        self.token = token
        self.latency = latency  # seconds before every answer
        self.page_limit = page_limit  # most items a page holds, whatever per_page asks
        self.mirrors = dict(mirrors or {})  # a name served -> the folder that holds its data
        self.down: set[str] = set()  # repositories GitHub fails for, in any case
        self.limits = Limits(
            clock,
            core=(core_limit, core_window),
            search=(search_limit, 60.0),
            status=limited_status,
        )
        self.index_lag = index_lag
        self.posts = Posts(self)  # discussions (GraphQL) and issues prhub posts

    def script(self, path_regex: str, responses: list[Any]) -> None:
        """Answer the next requests whose path matches with `responses`, in order.

        Besides "reset", ("sleep", s) and (status, headers, body): ("redirect", status, base)
        sends the request on to the same path and query under `base`, as GitHub does for a
        renamed repository, and ("redirect", status, base, prefix) with `prefix` dropped from
        the path; ("incomplete",) is the normal answer cut short with incomplete_results true,
        as GitHub answers when its search times out; ("short", n) is the normal answer with
        only its first n items, its total_count unchanged.
        """
        self._queue(path_regex, responses)

    def scripted_answer(self, item: Any, request: dict[str, Any]) -> Answer:
        if item[0] == "redirect":
            status, base, prefix = (*item[1:], "")[:3]
            query = urlencode(request["query"], doseq=True)
            path = request["path"].removeprefix(prefix)
            location = f"{base}{path}{'?' + query if query else ''}"
            docs = f"{DOCS}/using-the-rest-api/best-practices-for-using-the-rest-api"
            moved = {301: "Moved Permanently", 308: "Permanent Redirect"}
            body = {"message": moved.get(status, "Temporary Redirect"), "url": location}
            return status, {"Location": location}, {**body, "documentation_url": docs}
        if item[0] == "incomplete":
            status, headers, body = self.answer(request)
            items = body["items"]
            return status, headers, {**body, "incomplete_results": True, "items": items[:-1]}
        if item[0] == "short":
            status, headers, body = self.answer(request)
            return status, headers, {**body, "items": body["items"][: item[1]]}
        return super().scripted_answer(item, request)

    def render(self, body: Any) -> Any:
        # PyGithub follows the url fields it is given, so they must point here.
        if isinstance(body, str) and body.startswith(API):
            return self.url + body[len(API) :]
        if isinstance(body, list):
            return [self.render(item) for item in body]
        if isinstance(body, dict):
            return {key: self.render(value) for key, value in body.items()}
        return body

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        if "charge" not in request:  # a scripted answer or a fault: it spends a request too
            self.limits.charge(request, refuse=False)
        return {
            "Content-Type": "application/json; charset=utf-8",
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-GitHub-Api-Version-Selected": "2022-11-28",
            **self.limits.headers(request["path"]),
        }

    def fault_answer(self, kind: str) -> Answer:
        if kind == "secondary":
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes before you "
                "try again. If you reach out to GitHub Support for help, please include the "
                "request ID 0000:STANDIN."
            )
            url = f"{DOCS}/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
            body = {"message": message, "documentation_url": url, "status": "403"}
            return 403, {"Retry-After": "1"}, body
        message = {"500": "Server Error", "502": "Server Error", "503": "Service Unavailable"}[kind]
        return int(kind), {}, {"message": message, "status": kind}

    def per_pr(self) -> Counter[int]:
        """How many requests each PR cost: its pull, lists and comments (search aside)."""
        with self._lock:
            numbers = [pr_of(r["path"]) for r in self.requests]
        return Counter(n for n in numbers if n is not None)

    def charged(self) -> Counter[str]:
        """What the requests so far cost: "core", "search", "free" (304s) or "refused"."""
        with self._lock:
            return charged(self.requests)

    def charged_per_pr(self, kind: str = "core") -> Counter[int]:
        """How many requests of each PR cost `kind` ("core": the primary limit)."""
        with self._lock:
            numbers = [pr_of(r["path"]) for r in self.requests if r.get("charge") == kind]
        return Counter(n for n in numbers if n is not None)

    def answer(self, request: dict[str, Any]) -> Answer:
        """The answer within GitHub's primary limits, revalidated by its ETag."""
        if (refused := self.limits.charge(request)) is not None:
            return refused
        return self.limits.settle(request, revalidated(request, self._answer(request)))

    def _answer(self, request: dict[str, Any]) -> Answer:
        if self.latency:
            time.sleep(self.latency)
        if self.token is not None:
            auth = request["headers"].get("authorization", "")
            if auth not in (f"token {self.token}", f"Bearer {self.token}"):
                body = {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}
                return 401, {}, body
        if self._is_down(request):
            return 502, {}, {"message": "Server Error", "status": "502"}
        if (posted := self.posts.answer(request)) is not None:
            return posted
        if request["method"] != "GET":
            return _not_found()
        path, query = request["path"], request["query"]
        if path == "/rate_limit":
            return 200, {}, self.limits.overview()
        if path == "/search/issues":
            return self._search(query)
        match = re.fullmatch(r"/repos/(\w[\w.-]*)/(\w[\w.-]*)(/.*)?", path)
        found = match and self._folder(match[1], match[2])
        if not match or not found:
            return _not_found()
        (owner, repo), rest = found, match[3] or ""
        if not rest:
            return 200, {}, self._repository(owner, repo)
        if rest.startswith("/contents/"):
            return self._contents(owner, repo, rest.removeprefix("/contents/"))
        if commit := re.fullmatch(r"/commits/([0-9a-fA-F]{7,40})/pulls", rest):
            return self._commit_pulls(owner, repo, commit[1].lower(), request)
        match = re.fullmatch(r"/(pulls|issues)/(\d+)(/files|/reviews|/comments)?", rest)
        pull = match and self._pull(owner, repo, int(match[2]))
        if not match or not pull:
            return _not_found()
        kind, number, sub = match[1], int(match[2]), match[3]
        if kind == "issues" and not sub:
            return 200, {}, self._issue(pull)
        if kind == "issues" and sub != "/comments":
            return _not_found()
        if not sub:
            return 200, {}, pull
        name = "issue_comments" if kind == "issues" else sub.removeprefix("/")
        items = self._read(owner, repo, f"pulls/{number}.{name}.json") or []
        return self._page(items, request)

    def _is_down(self, request: dict[str, Any]) -> bool:
        """Whether the request is about a repository in `down`: by its path, or a search's repo:."""
        match = re.match(r"/repos/([^/]+/[^/]+)", request["path"])
        named = [match[1]] if match else []
        if request["path"] == "/search/issues":
            terms = (request["query"].get("q") or [""])[0].split()
            named = [t.removeprefix("repo:") for t in terms if t.startswith("repo:")]
        down = {name.lower() for name in self.down}
        return any(name.lower() in down for name in named)

    def _dir(self, owner: str, repo: str) -> Path:
        """The folder that holds a repository's data: its own, or the one it mirrors."""
        return self.data_dir / self.mirrors.get(f"{owner}/{repo}", f"{owner}/{repo}")

    def _read(self, owner: str, repo: str, name: str) -> Any:
        """A JSON file of the repository's folder, None if absent; a mirror's names itself."""
        path = self._dir(owner, repo) / name
        if not path.exists():
            return None
        text = path.read_text()
        if (source := self.mirrors.get(f"{owner}/{repo}")) is not None:
            text = text.replace(source, f"{owner}/{repo}")
        return json.loads(text)

    def _folder(self, owner: str, repo: str) -> tuple[str, str] | None:
        """The repository's folder names: GitHub matches owner and name in any case."""
        for name in self.mirrors:
            if f"{owner}/{repo}".lower() == name.lower():
                return name.split("/")[0], name.split("/")[1]
        for folder in self.data_dir.glob("*/*"):
            if folder.is_dir() and f"{owner}/{repo}".lower() == "/".join(folder.parts[-2:]).lower():
                return folder.parts[-2], folder.parts[-1]
        return None

    def _contents(self, owner: str, repo: str, path: str) -> Answer:
        """A file of the default branch as GET /repos/{o}/{r}/contents/{path} returns it."""
        root = (self._dir(owner, repo) / "contents").resolve()
        file = (root / path).resolve()
        if not path or not file.is_relative_to(root) or not file.is_file():
            return _not_found()
        data = file.read_bytes()
        # GitHub wraps the base64 text at 60 characters, each line ending in a newline.
        encoded = base64.b64encode(data).decode()
        wrapped = "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))
        sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        full = f"{owner}/{repo}"
        url = f"{API}/repos/{full}/contents/{path}?ref=main"
        body = {
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": sha,
            "size": len(data),
            "url": url,
            "html_url": f"https://github.com/{full}/blob/main/{path}",
            "git_url": f"{API}/repos/{full}/git/blobs/{sha}",
            "download_url": f"https://raw.githubusercontent.com/{full}/main/{path}",
            "type": "file",
            "content": wrapped,
            "encoding": "base64",
            "_links": {
                "self": url,
                "git": f"{API}/repos/{full}/git/blobs/{sha}",
                "html": f"https://github.com/{full}/blob/main/{path}",
            },
        }
        return 200, {}, body

    def _commit_pulls(self, owner: str, repo: str, sha: str, request: dict[str, Any]) -> Answer:
        """GET /repos/{o}/{r}/commits/{sha}/pulls: the PRs whose merge commit it is, as GitHub
        lists a squash-merged commit's PR; 422 for a SHA no commit has."""
        pulls = [
            self._read(owner, repo, f"pulls/{path.name}")
            for path in sorted((self._dir(owner, repo) / "pulls").glob("*.json"))
            if path.stem.isdigit()
        ]
        found = [p for p in pulls if (p.get("merge_commit_sha") or "").lower().startswith(sha)]
        if not found:
            message = f"No commit found for SHA: {sha}"
            return 422, {}, {"message": message, "documentation_url": DOCS, "status": "422"}
        return self._page(found, request)

    def _repository(self, owner: str, repo: str) -> dict[str, Any]:
        full = f"{owner}/{repo}"
        return {
            "id": zlib.crc32(full.encode()),
            "name": repo,
            "full_name": full,
            "owner": {
                "login": owner,
                "id": zlib.crc32(owner.encode()),
                "type": "Organization",
                "url": f"{API}/users/{owner}",
                "html_url": f"https://github.com/{owner}",
            },
            "private": False,
            "html_url": f"https://github.com/{full}",
            "description": None,
            "fork": False,
            "url": f"{API}/repos/{full}",
            "pulls_url": f"{API}/repos/{full}/pulls{{/number}}",
            "issues_url": f"{API}/repos/{full}/issues{{/number}}",
            "default_branch": "main",
            "visibility": "public",
            "archived": False,
        }

    def _pull(self, owner: str, repo: str, number: int) -> dict[str, Any] | None:
        pull: dict[str, Any] | None = self._read(owner, repo, f"pulls/{number}.json")
        return pull

    def _issue(self, pull: dict[str, Any]) -> dict[str, Any]:
        """The issue GitHub keeps for a pull request, as search and /issues/N return it."""
        repo_url = pull["url"].rsplit("/pulls/", 1)[0]
        issue_url = f"{repo_url}/issues/{pull['number']}"
        return {
            "url": issue_url,
            "repository_url": repo_url,
            "labels_url": f"{issue_url}/labels{{/name}}",
            "comments_url": f"{issue_url}/comments",
            "events_url": f"{issue_url}/events",
            "html_url": pull["html_url"],
            "id": pull["id"],
            "number": pull["number"],
            "title": pull["title"],
            "user": pull["user"],
            "labels": pull["labels"],
            "state": pull["state"],
            "locked": pull["locked"],
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": pull["comments"],
            "created_at": pull["created_at"],
            "updated_at": pull["updated_at"],
            "closed_at": pull["closed_at"],
            "author_association": pull["author_association"],
            "active_lock_reason": None,
            "draft": pull["draft"],
            "pull_request": {
                "url": pull["url"],
                "html_url": pull["html_url"],
                "diff_url": pull["diff_url"],
                "patch_url": pull["html_url"] + ".patch",
                "merged_at": pull["merged_at"],
            },
            "body": pull["body"],
            "timeline_url": f"{issue_url}/timeline",
            "performed_via_github_app": None,
            "state_reason": None,
            "score": 1.0,
        }

    def _indexed(self, pull: dict[str, Any]) -> dict[str, Any]:
        """A PR as the search index has it: its issue, updated `index_lag` before the pull."""
        issue = self._issue(pull)
        if self.index_lag:
            updated = _when(pull["updated_at"]) - self.index_lag
            issue["updated_at"] = updated.isoformat().replace("+00:00", "Z")
        return issue

    def _search(self, query: dict[str, list[str]]) -> Answer:
        terms = (query.get("q") or [""])[0].split()
        if not terms:
            errors = [{"resource": "Search", "field": "q", "code": "missing"}]
            return 422, {}, {"message": "Validation Failed", "errors": errors, "status": "422"}
        repos: list[str] = []
        tests: list[Callable[[dict[str, Any]], bool]] = []
        for term in terms:
            key, _, value = term.partition(":")
            if key == "repo":
                if not re.fullmatch(r"\w[\w.-]*/\w[\w.-]*", value):
                    return 422, {}, {"message": "Validation Failed", "status": "422"}
                repos.append(value)
            elif term in ("is:pr", "type:pr"):
                pass
            elif term in ("is:issue", "type:issue"):
                tests.append(lambda p: False)
            elif term in ("is:merged", "is:unmerged"):
                merged = term == "is:merged"
                tests.append(lambda p, m=merged: (p["merged_at"] is not None) == m)
            elif term in ("is:open", "is:closed"):
                tests.append(lambda p, s=value: p["state"] == s)
            elif key == "merged":
                try:
                    when = _merged_test(value)
                except ValueError:
                    message = f"merged:{value} is not a date, a datetime or a range of them"
                    return 422, {}, {"message": message, "status": "422"}
                tests.append(lambda p, w=when: p["merged_at"] and w(_when(p["merged_at"])))
            elif key == "author":
                tests.append(lambda p, a=value: p["user"]["login"] == a)
            elif key == "label":
                tests.append(lambda p, n=value: n in [label["name"] for label in p["labels"]])
            else:
                text = term.lower()
                tests.append(lambda p, t=text: t in f"{p['title']}\n{p['body']}".lower())
        every = [f.parts[-3:-1] for f in self.data_dir.glob("*/*/pulls")]
        named = [self._folder(*r.split("/")) for r in repos]
        pulls = [
            self._read(owner, name, f"pulls/{path.name}")
            for owner, name in ([n for n in named if n] if repos else every)
            for path in sorted((self._dir(owner, name) / "pulls").glob("*.json"))
            if path.stem.isdigit()
        ]
        found = [p for p in pulls if all(test(p) for test in tests)]
        sort = (query.get("sort") or [""])[0]
        if sort in ("created", "updated"):
            descending = (query.get("order") or ["desc"])[0] != "asc"
            found.sort(key=lambda p: p[f"{sort}_at"], reverse=descending)
        else:
            found.sort(key=lambda p: (p["merged_at"] or p["created_at"], p["number"]))
        items = [self._indexed(p) for p in found]
        request = {"path": "/search/issues", "query": query}
        status, headers, page = self._page(items[:SEARCH_LIMIT], request)
        if status != 200:
            return status, headers, page
        body = {"total_count": len(items), "incomplete_results": False, "items": page}
        return status, headers, body

    def _page(self, items: list[Any], request: dict[str, Any]) -> Answer:
        """One page of `items` with GitHub's Link header; the search limit answers 422."""
        query = {key: values[0] for key, values in request["query"].items()}
        try:
            page = max(int(query.get("page", 1)), 1)
            per_page = min(max(int(query.get("per_page", 30)), 1), 100, self.page_limit)
        except ValueError:
            return 422, {}, {"message": "Validation Failed", "status": "422"}
        start = (page - 1) * per_page
        if request["path"] == "/search/issues" and start >= SEARCH_LIMIT:
            message = "Only the first 1000 search results are available"
            return 422, {}, {"message": message, "documentation_url": DOCS, "status": "422"}
        last = max(math.ceil(len(items) / per_page), 1)

        def link(number: int) -> str:
            return f"<{self.url}{request['path']}?{urlencode({**query, 'page': number})}>"

        rels = []
        if page > 1:
            rels.append(f'{link(min(page - 1, last))}; rel="prev"')
        if page < last:
            rels += [f'{link(page + 1)}; rel="next"', f'{link(last)}; rel="last"']
        if page > 1:
            rels.append(f'{link(1)}; rel="first"')
        headers = {"Link": ", ".join(rels)} if rels else {}
        return 200, headers, items[start : start + per_page]
