"""GitHub's answers as prhub accepts them, checked under PyGithub before it reads them."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import threading
from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import Annotated, Any, NotRequired
from urllib.parse import urlsplit

import requests
from github import Github, GithubException
from pydantic import AfterValidator, StrictBool, StrictInt, StrictStr, TypeAdapter
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from prhub import retry, transport
from prhub.errors import GitHubUnavailable
from prhub.github import pygithub
from prhub.github.ratelimit import Budget, resource

log = logging.getLogger("prhub")

MAX_ANSWER = 64 * 2**20  # a page of 100 files with their patches is a few MB
ADVICE = "rerun later, or check --github-url"


class IncompleteSearch(GitHubUnavailable):
    """GitHub's search timed out and answered with part of the results; `why` says how, in
    words that fit into a message naming the search."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


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


# Endpoint (end of the path) -> the shape of its answer.
SHAPES: list[tuple[re.Pattern[str], TypeAdapter[Any]]] = [
    (re.compile(r"/search/issues$"), TypeAdapter(_Search)),
    (re.compile(r"/repos/[^/]+/[^/]+/pulls/\d+$"), TypeAdapter(_Pull)),
    (re.compile(r"/pulls/\d+/files$"), TypeAdapter(list[_File])),
    (re.compile(r"/pulls/\d+/reviews$"), TypeAdapter(list[_Review])),
    (re.compile(r"/pulls/\d+/comments$"), TypeAdapter(list[_InlineComment])),
    (re.compile(r"/issues/\d+/comments$"), TypeAdapter(list[_Comment])),
    (re.compile(r"/contents/\.gitattributes$"), TypeAdapter(_Content)),
]


def guard(
    client: Github,
    in_flight: int | None = None,
    stop: retry.StopToken | None = None,
    budget: Budget | None = None,
) -> None:
    """Makes every answer to `client` pass `checked` before PyGithub reads it, and, given
    `in_flight`, keeps at most that many of its requests open at once, whatever the threads;
    a request that waited for its slot is not sent once the run (`stop`) stopped. Given a
    `budget`, no request goes out while its limit is known spent, every answer's limits are
    read into it, and a rate-limit refusal leaves as budget.Limited, for the caller to wait."""
    # This client's own bound, shared by its connections, not by all clients.
    slots = threading.BoundedSemaphore(in_flight) if in_flight else None
    base = urlsplit(client.requester.base_url).path.rstrip("/")  # "/api/v3" on an Enterprise

    def send(
        session: requests.Session, verb: str, url: str, *, timeout: float | None, **asked: Any
    ) -> requests.Response:
        with slots or contextlib.nullcontext():
            retry.check(stop)  # stopped while waiting for its slot: never sent
            bucket = resource(urlsplit(url).path.removeprefix(base))
            sent = budget.admit(bucket) if budget else 0.0
            deadline = transport.Deadline(math.inf if timeout is None else timeout)
            session.max_redirects = transport.MAX_REDIRECTS
            answer = None
            try:
                answer = session.request(
                    verb,
                    url,
                    timeout=deadline.cap(timeout),
                    # Followed within the origin only: `checked` refuses a redirect elsewhere.
                    allow_redirects=True,
                    hooks={"response": partial(checked, deadline)},  # each hop of this request
                    **asked,  # headers, data, verify
                )
            except requests.exceptions.TooManyRedirects as exc:
                last = exc.response
                if last is not None:
                    last.close()  # requests leaves the last redirect open
                where = urlsplit(last.url if last is not None else url).path
                raise GitHubUnavailable(f"GitHub redirected {where} in a loop: {ADVICE}") from None
            finally:
                limited = budget.settle(bucket, sent, *_told(answer)) if budget else None
            if answer is not None and limited is not None:
                answer.close()  # PyGithub never sees this answer, so nothing else would close it
                raise limited
            return answer

    pygithub.route(client, send)


def _told(answer: requests.Response | None) -> tuple[int | None, dict[str, str], str]:
    """What the budget reads of an answer: its status, headers (lower-case) and message."""
    if answer is None:
        return None, {}, ""
    data = _json(answer.content) if answer.status_code >= 400 else None
    message = data.get("message") if isinstance(data, dict) else None
    headers = {name.lower(): value for name, value in answer.headers.items()}
    return answer.status_code, headers, str(message or "")


def retry_hint(exc: BaseException) -> float | None:
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
    if exc.status >= 500:
        return 0.0
    return None  # rate limits included: the budget waits them out, outside these attempts


def checked(
    deadline: transport.Deadline, response: requests.Response, **_: Any
) -> requests.Response:
    """Each answer, every redirect of it too: logged; read whole by the deadline; a redirect
    within its origin, an error status, or 200 with valid JSON of the endpoint's shape."""
    log.info("GitHub %s %s: %s", response.request.method, response.url, response.status_code)
    where = urlsplit(response.url).path
    try:
        if response.is_redirect:
            if other := transport.other_origin(response.url, response.headers["location"]):
                raise GitHubUnavailable(
                    f"GitHub redirected {where} to another host, {other}: not followed; {ADVICE}"
                )
        _read(response, deadline)  # a redirect's too, so the connection can serve the next one
        if not response.is_redirect:
            _check(response)
    except Exception:
        response.close()  # PyGithub never sees this answer, so nothing else would close it
        raise
    return response


def _read(response: requests.Response, deadline: transport.Deadline) -> None:
    """Reads the whole body, by the deadline, refused past MAX_ANSWER before more is held."""
    where = urlsplit(response.url).path
    chunks = transport.body(
        response.iter_content(2**16),
        deadline,
        MAX_ANSWER,
        lambda: response.raw.shutdown(),  # urllib3 2.3 on; before, a read waits its timeout
        response.headers.get("content-length"),
    )
    try:
        response._content = b"".join(chunks)  # what .content gives PyGithub, read once
    except transport.TooBig:
        raise GitHubUnavailable(
            f"GitHub's answer to {where} is over {MAX_ANSWER // 2**20} MB: not read; {ADVICE}"
        ) from None
    except transport.Late:
        raise Overdue(
            f"GitHub did not send its whole answer to {where} within {deadline.seconds:g} s: "
            "raise PRHUB_TIMEOUT, or rerun later"
        ) from None


def _check(response: requests.Response) -> None:
    status, where = response.status_code, urlsplit(response.url).path
    body = response.content
    if status >= 400:
        # PyGithub reads a text error page as the error's message, but fails on broken JSON.
        if body[:1] in (b"{", b"[") and _json(body) is None:
            raise GitHubUnavailable(f"GitHub answered {status} to {where} with broken JSON")
        return
    if status == 304 and _conditional(response.request.headers):
        return  # not modified: what the caller holds is current, at no cost to the budget
    if 300 <= status < 400:
        raise GitHubUnavailable(f"GitHub answered {status} to {where} without a Location: {ADVICE}")
    # 201: an issue prhub posted. PyGithub would wait on a 202 forever; the others mean nothing.
    if status not in (200, 201):
        raise GitHubUnavailable(f"GitHub answered {status} to {where}, not 200: {ADVICE}")
    for link in response.links.values():  # pagination that PyGithub would follow
        if other := transport.other_origin(response.url, link.get("url", "")):
            raise GitHubUnavailable(
                f"GitHub's answer to {where} links to another host, {other}: not followed; "
                "check --github-url"
            )
    if (data := _json(body)) is None:
        kind = (response.headers.get("content-type") or "no type").split(";")[0][:40]
        bare = body.strip()
        looks = "no body" if not bare else "null" if bare == b"null" else f"not JSON ({kind})"
        raise GitHubUnavailable(f"GitHub sent a malformed answer to {where}: {looks}; {ADVICE}")
    for pattern, shape in SHAPES:
        if pattern.search(where):
            if (wrong := transport.problem(shape, data)) is not None:
                raise GitHubUnavailable(
                    f"GitHub sent a malformed answer to {where}: {wrong}; {ADVICE}"
                )
            if isinstance(data, dict) and data.get("incomplete_results") is True:
                raise IncompleteSearch(
                    f"GitHub's search answered {where} with incomplete results (it timed out)",
                    "it answered with incomplete results: it timed out",
                )


def _conditional(headers: Mapping[str, Any]) -> bool:
    """Whether a request asked for its answer only if changed (If-None-Match, -Modified-Since)."""
    return "If-None-Match" in headers or "If-Modified-Since" in headers


def _json(body: bytes) -> Any:
    """The JSON value of a body; None when it is not JSON (or is the JSON null)."""
    try:
        return json.loads(body)
    except ValueError:
        return None
