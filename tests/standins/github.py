"""A GitHub REST stand-in on 127.0.0.1 that serves pull requests stored as JSON files."""

from __future__ import annotations

import json
import math
import random
import re
import socket
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

API = "https://api.github.com"
DOCS = "https://docs.github.com/rest"
SEARCH_LIMIT = 1000

# A body of bytes is sent as is: for answers that are not JSON, or not whole.
Answer = tuple[int, dict[str, str], Any]


class StandIn:
    """An HTTP server in a daemon thread that records requests and can be scripted to misbehave.

    Scripted items every stand-in takes: "reset" (the connection reset, no answer), ("sleep", s)
    (the normal answer after s seconds), ("trickle", s) and ("trickle", s, n) (the normal answer,
    its body sent n bytes at a time, default 1, every s seconds), and (status, headers, body);
    a body of bytes is sent as is, and headers {"Transfer-Encoding": "chunked"} send it in chunks
    without a Content-Length.
    """

    prefix = ""  # path of the API root, part of .url
    fault_kinds: tuple[str, ...] = ()

    def __init__(
        self, *, port: int = 0, fault_rate: float = 0.0, seed: int = 0, trickle: float = 0.0
    ) -> None:
        self.port = port
        self.url = ""
        self.fault_rate = fault_rate
        # Seconds between the bytes of every answer's body: a server that never stalls long
        # enough for a read to time out, yet never finishes.
        self.trickle = trickle
        self.requests: list[dict[str, Any]] = []
        self.faults: list[tuple[str, str]] = []
        # Exceptions raised while answering, i.e. stand-in bugs; the fixtures assert it is empty.
        self.errors: list[str] = []
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._scripts: list[tuple[re.Pattern[str], deque[Any]]] = []
        self._server: ThreadingHTTPServer | None = None
        self._stopping = threading.Event()  # ends trickles, so stop() need not wait for them
        # A file that gets one JSON line a request, for a stand-in run in its own process.
        self.log: Any = None

    def start(self) -> StandIn:
        """Bind 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"standin": self})
        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{self.prefix}"
        # A short poll interval keeps stop() quick; the default makes it wait up to 0.5 s.
        serve = self._server.serve_forever
        threading.Thread(target=serve, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _queue(self, pattern: str, responses: list[Any]) -> None:
        with self._lock:
            self._scripts.append((re.compile(pattern), deque(responses)))

    def _scripted(self, path: str) -> Any:
        with self._lock:
            for pattern, queue in self._scripts:
                if queue and pattern.search(path):
                    return queue.popleft()
        return None

    def _fault(self, path: str) -> str | None:
        with self._lock:
            if not self.fault_rate or self._random.random() >= self.fault_rate:
                return None
            kind = self._random.choice(self.fault_kinds)
            self.faults.append((path, kind))
            return kind

    def fault_answer(self, kind: str) -> Answer:
        """The answer for an injected fault of `kind`."""
        raise NotImplementedError

    def scripted_answer(self, item: Any, request: dict[str, Any]) -> Answer:
        """The answer for one scripted item other than "reset", ("sleep", s), ("trickle", ...)."""
        status, headers, body = item
        return status, headers, body

    def answer(self, request: dict[str, Any]) -> Answer:
        """The normal answer to `request`."""
        raise NotImplementedError

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        """Headers sent with every answer; an answer's own headers win."""
        return {"Content-Type": "application/json"}

    def render(self, body: Any) -> Any:
        """The body as sent."""
        return body


class _Handler(BaseHTTPRequestHandler):
    standin: StandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:
            pass  # a client dropped a kept-alive connection, as clients may; no one to answer

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        standin = self.standin
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = {
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query, keep_blank_values=True),
            "headers": {name.lower(): value for name, value in self.headers.items()},
            "body": body,
        }
        with standin._lock:
            standin.requests.append(request)
        item = standin._scripted(parts.path)
        pace, piece = standin.trickle, 1
        if item is not None and item[0] == "sleep":
            time.sleep(item[1])
            item = None
        elif item is not None and item[0] == "trickle":
            pace, piece = item[1], (*item[2:], 1)[0]
            item = None
        kind = None if item is not None else standin._fault(parts.path)
        if standin.log is not None:
            line = {"method": self.command, "path": parts.path}
            with standin._lock:  # with the injected fault's kind, for a bench to count
                standin.log.write(json.dumps({**line, **({"fault": kind} if kind else {})}) + "\n")
                standin.log.flush()
        if item == "reset":
            return self._reset()
        if kind == "reset":
            return self._reset()
        try:
            if item is not None:
                answer = standin.scripted_answer(item, request)
            else:
                answer = standin.fault_answer(kind) if kind else standin.answer(request)
        except Exception as exc:
            # A stand-in bug must fail the test, not pass for a transient server error.
            with standin._lock:
                standin.errors.append(repr(exc))
            answer = 500, {}, {"message": f"stand-in error: {exc!r}"}
        status, extra, payload = answer
        if isinstance(payload, bytes):
            data = payload
        else:
            rendered = standin.render(payload)
            try:
                data = json.dumps(rendered, ensure_ascii=False).encode()
            except UnicodeEncodeError:  # lone surrogates: valid JSON only as \u escapes
                data = json.dumps(rendered).encode()
        headers = {**standin.headers(request), **extra}
        chunked = headers.get("Transfer-Encoding") == "chunked"
        if not chunked:
            # A scripted Content-Length may lie about the body; closing after it keeps the lie
            # to this one answer instead of leaving stray bytes for the next request to read.
            headers.setdefault("Content-Length", str(len(data)))
            if headers["Content-Length"] != str(len(data)):
                self.close_connection = True
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self._write(data, pace, piece if pace else 2**16, chunked)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (a timeout test); there is no one left to answer.
            self.close_connection = True

    def _write(self, data: bytes, pace: float, piece: int, chunked: bool) -> None:
        """The body, `piece` bytes at a time with `pace` seconds before each, maybe chunked."""
        for start in range(0, len(data), piece):
            if pace and self.standin._stopping.wait(pace):
                self.close_connection = True  # the stand-in stops: the rest never comes
                return
            part = data[start : start + piece]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _reset(self) -> None:
        # SO_LINGER 0 makes close() send RST: the client sees a reset, not a clean EOF.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()
        self.connection.close()
        self.close_connection = True


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
    """GitHub's REST API for pull requests, files, reviews and issue search over a data dir."""

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
    ) -> None:
        super().__init__(port=port, fault_rate=fault_rate, seed=seed, trickle=trickle)
        self.data_dir = Path(data_dir)
        self.token = token
        # resource -> [limit, window seconds, used, reset epoch], as GitHub counts per hour/minute
        self._limits = {"core": [5000, 3600, 0, 0], "search": [30, 60, 0, 0]}

    def script(self, path_regex: str, responses: list[Any]) -> None:
        """Answer the next requests whose path matches with `responses`, in order.

        Besides "reset", ("sleep", s) and (status, headers, body): ("redirect", status, base)
        sends the request on to the same path and query under `base`, as GitHub does for a
        renamed repository, and ("redirect", status, base, prefix) with `prefix` dropped from
        the path; ("incomplete",) is the normal answer cut short with incomplete_results true,
        as GitHub answers when its search times out.
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

    def _rate(self, resource: str, spend: int) -> tuple[int, int, int]:
        """Limit, used and reset time of `resource` after spending `spend` requests of it."""
        with self._lock:
            entry = self._limits[resource]
            now = int(time.time())
            if now >= entry[3]:
                entry[2], entry[3] = 0, now + entry[1]
            entry[2] += spend
            return entry[0], entry[2], entry[3]

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        resource = "search" if request["path"].startswith("/search/") else "core"
        limit, used, reset = self._rate(resource, 0 if request["path"] == "/rate_limit" else 1)
        return {
            "Content-Type": "application/json; charset=utf-8",
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-GitHub-Api-Version-Selected": "2022-11-28",
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - used, 0)),
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Resource": resource,
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

    def answer(self, request: dict[str, Any]) -> Answer:
        if self.token is not None:
            auth = request["headers"].get("authorization", "")
            if auth not in (f"token {self.token}", f"Bearer {self.token}"):
                body = {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}
                return 401, {}, body
        if request["method"] != "GET":
            return _not_found()
        path, query = request["path"], request["query"]
        if path == "/rate_limit":
            return 200, {}, self._rate_limit()
        if path == "/search/issues":
            return self._search(query)
        match = re.fullmatch(r"/repos/(\w[\w.-]*)/(\w[\w.-]*)(/.*)?", path)
        if not match or not (self.data_dir / match[1] / match[2]).is_dir():
            return _not_found()
        owner, repo, rest = match[1], match[2], match[3] or ""
        if not rest:
            return 200, {}, self._repository(owner, repo)
        match = re.fullmatch(r"/(pulls|issues)/(\d+)(/files|/reviews)?", rest)
        pull = match and self._pull(owner, repo, int(match[2]))
        if not match or not pull:
            return _not_found()
        kind, number, sub = match[1], int(match[2]), match[3]
        if kind == "issues":
            return (200, {}, self._issue(pull)) if not sub else _not_found()
        if not sub:
            return 200, {}, pull
        folder = self.data_dir / owner / repo / "pulls"
        extra = folder / f"{number}{sub.replace('/', '.')}.json"
        items = json.loads(extra.read_text()) if extra.exists() else []
        return self._page(items, request)

    def _rate_limit(self) -> dict[str, Any]:
        resources = {}
        for name in self._limits:
            limit, used, reset = self._rate(name, 0)
            resources[name] = {
                "limit": limit,
                "used": used,
                "remaining": max(limit - used, 0),
                "reset": reset,
            }
        return {"resources": resources, "rate": resources["core"]}

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
        path = self.data_dir / owner / repo / "pulls" / f"{number}.json"
        return json.loads(path.read_text()) if path.exists() else None

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
        folders = [self.data_dir / r / "pulls" for r in repos] or self.data_dir.glob("*/*/pulls")
        pulls = [
            json.loads(path.read_text())
            for folder in folders
            for path in sorted(folder.glob("*.json"))
            if path.stem.isdigit()
        ]
        found = [p for p in pulls if all(test(p) for test in tests)]
        sort = (query.get("sort") or [""])[0]
        if sort in ("created", "updated"):
            descending = (query.get("order") or ["desc"])[0] != "asc"
            found.sort(key=lambda p: p[f"{sort}_at"], reverse=descending)
        else:
            found.sort(key=lambda p: (p["merged_at"] or p["created_at"], p["number"]))
        items = [self._issue(p) for p in found]
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
            per_page = min(max(int(query.get("per_page", 30)), 1), 100)
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
