"""GitHub's answers as prhub accepts them, checked under PyGithub before it reads them."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import threading
import time
from datetime import datetime
from functools import partial
from typing import Annotated, Any, NotRequired
from urllib.parse import urljoin, urlsplit

import requests
from github import Github
from github.Requester import (
    HTTPRequestsConnectionClass,
    HTTPSRequestsConnectionClass,
    RequestsResponse,
)
from pydantic import AfterValidator, StrictBool, StrictInt, StrictStr, TypeAdapter, ValidationError
from requests.hooks import default_hooks
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from prhub import retry
from prhub.errors import GitHubUnavailable

log = logging.getLogger("prhub")

MAX_REDIRECTS = 5
MAX_ANSWER = 64 * 2**20  # a page of 100 files with their patches is a few MB
ADVICE = "rerun later, or check --github-url"


class IncompleteSearch(GitHubUnavailable):
    """GitHub's search timed out and answered with part of the results."""


class Overdue(GitHubUnavailable):
    """GitHub's answer was not whole by the deadline: a read timeout bounds each read, not all."""


def _aware(value: str) -> str:
    # PyGithub parses times with fromisoformat; a time without offset cannot be compared.
    if datetime.fromisoformat(value).tzinfo is None:
        raise ValueError("a time without a UTC offset")
    return value


Time = Annotated[StrictStr, AfterValidator(_aware)]


# The fields prhub and PyGithub read, with the types they assume; other fields pass unchecked.
class _Login(TypedDict):
    login: StrictStr
    type: NotRequired[StrictStr]  # "User", "Bot", "Organization"


class _Label(TypedDict):
    name: StrictStr


class _Ref(TypedDict):
    ref: NotRequired[StrictStr]
    sha: NotRequired[StrictStr]


class _Pull(TypedDict):
    url: StrictStr
    number: StrictInt
    title: NotRequired[StrictStr | None]
    body: NotRequired[StrictStr | None]
    user: NotRequired[_Login | None]  # None for a deleted account: the "ghost" author
    author_association: NotRequired[StrictStr | None]
    labels: NotRequired[list[_Label] | None]
    html_url: NotRequired[StrictStr | None]
    created_at: Time
    updated_at: NotRequired[Time | None]
    merged_at: NotRequired[Time | None]
    merged: NotRequired[StrictBool | None]
    merge_commit_sha: NotRequired[StrictStr | None]
    head: NotRequired[_Ref | None]
    base: NotRequired[_Ref | None]
    additions: NotRequired[StrictInt]
    deletions: NotRequired[StrictInt]
    changed_files: NotRequired[StrictInt]
    # How much discussion there is: prhub lists it only when these say there is some.
    comments: NotRequired[StrictInt]
    review_comments: NotRequired[StrictInt]


class _File(TypedDict):
    filename: StrictStr
    previous_filename: NotRequired[StrictStr | None]
    status: NotRequired[StrictStr]
    additions: NotRequired[StrictInt]
    deletions: NotRequired[StrictInt]
    patch: NotRequired[StrictStr | None]


class _Review(TypedDict):
    user: NotRequired[_Login | None]
    state: NotRequired[StrictStr]
    body: NotRequired[StrictStr | None]
    author_association: NotRequired[StrictStr]
    submitted_at: NotRequired[Time | None]  # None while the review is pending


class _Comment(TypedDict):
    """A conversation comment (on the PR's issue)."""

    user: NotRequired[_Login | None]
    body: NotRequired[StrictStr | None]
    author_association: NotRequired[StrictStr]
    created_at: Time


class _InlineComment(_Comment):
    """A review comment on a line of the diff (or on a whole file: no line)."""

    path: StrictStr
    line: NotRequired[StrictInt | None]  # None once the line is outdated
    original_line: NotRequired[StrictInt | None]


class _Content(TypedDict):
    type: StrictStr  # "file"; a symlink or submodule has no content to read
    encoding: NotRequired[StrictStr]  # "base64"; "none" for a file over 1 MB
    content: NotRequired[StrictStr]


class _HitPull(TypedDict):
    merged_at: NotRequired[Time | None]


class _Hit(TypedDict):
    # Required, so PyGithub never fetches the issue again to fill them in.
    number: StrictInt
    updated_at: Time
    pull_request: _HitPull | None


class _Search(TypedDict):
    total_count: StrictInt
    incomplete_results: StrictBool
    items: list[_Hit]


# Endpoint (end of the path) -> the shape of its answer and what its top level is.
SHAPES: list[tuple[re.Pattern[str], TypeAdapter[Any], str]] = [
    (re.compile(r"/search/issues$"), TypeAdapter(_Search), "an object"),
    (re.compile(r"/repos/[^/]+/[^/]+/pulls/\d+$"), TypeAdapter(_Pull), "an object"),
    (re.compile(r"/pulls/\d+/files$"), TypeAdapter(list[_File]), "a list"),
    (re.compile(r"/pulls/\d+/reviews$"), TypeAdapter(list[_Review]), "a list"),
    (re.compile(r"/pulls/\d+/comments$"), TypeAdapter(list[_InlineComment]), "a list"),
    (re.compile(r"/issues/\d+/comments$"), TypeAdapter(list[_Comment]), "a list"),
    (re.compile(r"/contents/\.gitattributes$"), TypeAdapter(_Content), "an object"),
]


def origin(url: str) -> str | None:
    """scheme://host:port of a URL, the default port spelled out; None when it names no host."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
    if not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port}"


def guard(
    client: Github, in_flight: int | None = None, counter: retry.RetryCounter | None = None
) -> None:
    """Makes every answer to `client` pass `checked` before PyGithub reads it, and, given
    `in_flight`, keeps at most that many of its requests open at once, whatever the threads;
    a request that waited for its slot is not sent once the run (`counter`) stopped."""
    # PyGithub builds its requests sessions inside its connection classes and offers no hook;
    # it looks the classes up on the requester, so replacing them there changes this client
    # only (its injectConnectionClasses would change every client in the process).
    state = vars(client.requester)
    if "_Requester__connectionClass" not in state:
        raise RuntimeError("this PyGithub version hides its connection classes: cannot guard")
    # Classes of this client alone: the bound is shared by its connections, not by all clients.
    slots = {
        "slots": threading.BoundedSemaphore(in_flight) if in_flight else None,
        "counter": counter,
    }
    http = type("GuardedHTTP", (_HTTP,), slots)
    https = type("GuardedHTTPS", (_HTTPS,), slots)
    secure = urlsplit(client.requester.base_url).scheme == "https"
    state["_Requester__connectionClass"] = https if secure else http
    state["_Requester__httpConnectionClass"] = http
    state["_Requester__httpsConnectionClass"] = https


class _Guarded:
    """What both connection classes add: checked answers, a bound, requests kept per thread."""

    slots: threading.BoundedSemaphore | None = None
    counter: retry.RetryCounter | None = None  # the run whose stop a waiting request heeds
    session: requests.Session
    protocol: str
    host: str
    port: int
    timeout: int | None
    verify: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session.hooks["response"].append(partial(checked, self.session))
        self._asked = threading.local()

    def request(
        self, verb: str, url: str, input: Any, headers: dict[str, str], stream: bool = False
    ) -> None:
        # PyGithub shares one connection object between threads and keeps the request on it
        # until getresponse(): kept per thread, one thread's request never leaves as another's.
        self._asked.request = (verb, url, input, headers)

    def getresponse(self) -> RequestsResponse:
        """The answer, read whole within a slot of the bound (as PyGithub's own, otherwise)."""
        verb, url, data, headers = self._asked.request
        send = getattr(self.session, verb.lower())
        # PyGithub keeps the host without the brackets an IPv6 literal needs in a URL.
        host = f"[{self.host}]" if ":" in self.host else self.host
        with self.slots or contextlib.nullcontext():
            retry.check(self.counter)  # stopped while waiting for its slot: never sent
            timeout: float | None = self.timeout
            if (budget := retry.deadline()) is not None:  # the last attempt gets what is left
                timeout = max(min(timeout or math.inf, budget - time.monotonic()), 0.001)
            answer = send(
                f"{self.protocol}://{host}:{self.port}{url}",
                headers=headers,
                data=data,
                timeout=timeout,
                verify=self.verify,
                allow_redirects=False,
            )
        return RequestsResponse(answer)


class _HTTP(_Guarded, HTTPRequestsConnectionClass):
    pass


class _HTTPS(_Guarded, HTTPSRequestsConnectionClass):
    pass


def checked(session: requests.Session, response: requests.Response, **send: Any) -> Any:
    """The answer after redirects within its origin: an error status, or 200 with valid JSON;
    whole within the request's timeout of its start, redirects included."""
    log.info("GitHub %s %s: %s", response.request.method, response.url, response.status_code)
    timeout = send.get("timeout")
    timeout = timeout[-1] if isinstance(timeout, tuple) else timeout  # (connect, read)
    deadline = None
    if isinstance(timeout, int | float):
        deadline = time.monotonic() + timeout - response.elapsed.total_seconds()
    try:
        hops = 0
        while response.is_redirect:
            where = urlsplit(response.url).path
            target = urljoin(response.url, response.headers["location"])
            if origin(target) != origin(response.url):
                other = origin(target) or "an unreadable address"
                raise GitHubUnavailable(
                    f"GitHub redirected {where} to another host, {other}: not followed; {ADVICE}"
                )
            hops += 1
            if hops > MAX_REDIRECTS:
                raise GitHubUnavailable(f"GitHub redirected {where} in a loop: {ADVICE}")
            request = response.request.copy()
            request.prepare_url(target, None)
            request.hooks = default_hooks()  # the chain is followed here, not by nested hooks
            _body(response, deadline, timeout)  # read, so the connection can serve the next one
            response.close()
            response = session.send(request, allow_redirects=False, **send)
        if not send.get("stream"):
            _body(response, deadline, timeout)
        _check(response, stream=bool(send.get("stream")))
    except Exception:
        response.close()  # PyGithub never sees this answer, so nothing else would close it
        raise
    return response


def _body(response: requests.Response, deadline: float | None, timeout: Any) -> bytes:
    """The whole body, by `deadline`: a read still waiting then ends as its socket is shut."""
    if deadline is None:
        return _read(response)
    late = threading.Event()

    def cut() -> None:
        late.set()
        with contextlib.suppress(Exception):  # released already, or urllib3 before 2.3
            response.raw.shutdown()

    if deadline > time.monotonic():  # else the headers alone took all the time
        timer = threading.Timer(deadline - time.monotonic(), cut)
        timer.daemon = True
        timer.start()
        try:
            body = _read(response)
        except requests.exceptions.RequestException:
            if not late.is_set():
                raise
        else:
            if not late.is_set():  # a body without a length just ends when its socket is shut
                return body
        finally:
            timer.cancel()
    where = urlsplit(response.url).path
    raise Overdue(
        f"GitHub did not send its whole answer to {where} within {timeout:g} s: "
        "raise PRHUB_TIMEOUT, or rerun later"
    )


def _read(response: requests.Response) -> bytes:
    """The whole body, refused past MAX_ANSWER before more of it is held in memory."""
    where = urlsplit(response.url).path
    too_big = GitHubUnavailable(
        f"GitHub's answer to {where} is over {MAX_ANSWER // 2**20} MB: not read; {ADVICE}"
    )
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_ANSWER:
        raise too_big
    parts, size = [], 0
    for part in response.iter_content(2**16):
        size += len(part)
        if size > MAX_ANSWER:
            raise too_big
        parts.append(part)
    response._content = b"".join(parts)  # what .content gives PyGithub, read once
    return response._content


def _check(response: requests.Response, stream: bool) -> None:
    status, where = response.status_code, urlsplit(response.url).path
    if status >= 400:
        # PyGithub reads a text error page as the error's message, but fails on broken JSON.
        body = b"" if stream else response.content
        if body[:1] in (b"{", b"[") and _json(body) is None:
            raise GitHubUnavailable(f"GitHub answered {status} to {where} with broken JSON")
        return
    if 300 <= status < 400:
        raise GitHubUnavailable(f"GitHub answered {status} to {where} without a Location: {ADVICE}")
    if status != 200:  # PyGithub would wait on a 202 forever; the others mean nothing here
        raise GitHubUnavailable(f"GitHub answered {status} to {where}, not 200: {ADVICE}")
    for link in response.links.values():  # pagination that PyGithub would follow
        target = urljoin(response.url, link.get("url", ""))
        if origin(target) != origin(response.url):
            other = origin(target) or "an unreadable address"
            raise GitHubUnavailable(
                f"GitHub's answer to {where} links to another host, {other}: not followed; "
                "check --github-url"
            )
    if stream:
        return
    body = response.content
    if (data := _json(body)) is None:
        kind = (response.headers.get("content-type") or "no type").split(";")[0][:40]
        bare = body.strip()
        looks = "no body" if not bare else "null" if bare == b"null" else f"not JSON ({kind})"
        raise GitHubUnavailable(f"GitHub sent a malformed answer to {where}: {looks}; {ADVICE}")
    for pattern, shape, top in SHAPES:
        if pattern.search(where):
            try:
                shape.validate_python(data)
            except ValidationError as exc:
                raise GitHubUnavailable(_malformed(where, exc, data, top)) from None
            if isinstance(data, dict) and data.get("incomplete_results") is True:
                raise IncompleteSearch(
                    f"GitHub's search answered {where} with incomplete results (it timed out)"
                )


def _json(body: bytes) -> Any:
    """The JSON value of a body; None when it is not JSON (or is the JSON null)."""
    try:
        return json.loads(body)
    except ValueError:
        return None


def _malformed(where: str, exc: ValidationError, data: Any, top: str) -> str:
    error = exc.errors()[0]
    at = ".".join(str(part) for part in error["loc"])
    what = f"{at}: {error['msg']}" if at else f"{_kind(data)} instead of {top}"
    return " ".join(f"GitHub sent a malformed answer to {where}: {what}; {ADVICE}".split())


def _kind(data: Any) -> str:
    if isinstance(data, bool):
        return "true or false"
    kinds = {int: "a number", float: "a number", str: "a string", list: "a list"}
    return kinds.get(type(data), "an object")
