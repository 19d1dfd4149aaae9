"""The LLM endpoint's answers as prhub accepts them: whole by the deadline, of bounded size, from
the endpoint's own host, and shaped as a chat completion; checked before the openai SDK reads them.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from typing import Annotated, Any, NotRequired, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
import openai
from pydantic import Field, StrictInt, StrictStr, TypeAdapter
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from prhub import retry, transport
from prhub.defaults import CHARS_PER_TOKEN
from prhub.errors import LLMUnavailable

MAX_BODY = 8 * 2**20  # a reply of a few thousand tokens is tens of kB, reasoning included
MAX_FILE = 512 * 2**20  # a batch's output file: OpenAI takes input files of up to 200 MB
_DEADLINE = "prhub.deadline"  # request extension: the transport.Deadline of the whole answer
_NAMES_FORMAT = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
_ADVICE = "check that OPENAI_BASE_URL points at an OpenAI-compatible endpoint"


class MalformedAnswer(LLMUnavailable):
    """The endpoint's answer is no chat completion.

    Transient ones (a body cut short: truncated JSON, a Content-Length the body does not reach,
    an empty body) are retried, as a dropped connection is. The rest fail at once, since the
    endpoint answers them again alike: an HTML page, an event stream, JSON of the wrong shape or
    types, no choices, a body over MAX_BODY, a redirect to another host or in a loop.
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(" ".join(message.split()))  # one line, whatever the server sent
        self.transient = transient


# The fields prhub reads, with the types it assumes; other fields pass unchecked.
class _Message(TypedDict):
    content: NotRequired[StrictStr | None]  # null with tool calls or a refusal: an empty reply


class _Choice(TypedDict):
    message: _Message
    finish_reason: NotRequired[StrictStr | None]


class _Details(TypedDict):
    cached_tokens: NotRequired[StrictInt | None]


class _Usage(TypedDict):
    prompt_tokens: NotRequired[StrictInt | None]
    completion_tokens: NotRequired[StrictInt | None]
    prompt_tokens_details: NotRequired[_Details | None]  # OpenAI, vLLM, llama.cpp
    prompt_cache_hit_tokens: NotRequired[StrictInt | None]  # DeepSeek


class _Completion(TypedDict):
    choices: Annotated[list[_Choice], Field(min_length=1)]
    usage: NotRequired[_Usage | None]


COMPLETION: TypeAdapter[Any] = TypeAdapter(_Completion)


def endpoint(url: str | None) -> tuple[str | None, dict[str, str]]:
    """The base URL without its query, and the query's parameters to send with every request.

    The SDK appends paths to the base URL's text, so a query left in it ends up in the path.
    """
    if not url:
        return url, {}
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((*parts[:3], "", "")), query


def http_client(timeout: float, where: str) -> httpx2.Client:
    """An HTTP client for the SDK with its defaults, whose answers are checked as this module
    says; `timeout` bounds each whole answer, `where` names the endpoint in messages."""
    checks = _Checks(timeout, where)
    return _Client(
        where,
        max_redirects=transport.MAX_REDIRECTS,
        event_hooks={"request": [checks.started], "response": [checks.answered]},
    )


class _Client(openai.DefaultHttpxClient):
    """The SDK's client, to which a redirect loop is a malformed answer, not a lost connection:
    the endpoint answers it again alike."""

    def __init__(self, where: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.where = where

    def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        try:
            return super().send(request, **kwargs)
        except httpx2.TooManyRedirects:
            raise MalformedAnswer(
                f"the LLM endpoint {self.where} redirected {request.url.path} in a loop: "
                "check OPENAI_BASE_URL"
            ) from None


class _Checks:
    def __init__(self, timeout: float, where: str) -> None:
        self.timeout = timeout
        self.where = where

    def started(self, request: httpx2.Request) -> None:
        # Set by the first hop only: the hops of one call share their extensions.
        if _DEADLINE not in request.extensions:
            request.extensions[_DEADLINE] = transport.Deadline(self.timeout)
        deadline: transport.Deadline = request.extensions[_DEADLINE]
        # No wait (connect, headers, a read) may outlast the deadline either.
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            request.extensions["timeout"] = {
                k: deadline.cap(v if isinstance(v, int | float) else None)
                for k, v in timeouts.items()
            }

    def answered(self, response: httpx2.Response) -> None:
        request = response.request
        deadline: transport.Deadline = request.extensions[_DEADLINE]
        if deadline.passed():
            raise httpx2.ReadTimeout("no whole answer by the deadline", request=request)
        # A file's content (a batch's output) may hold thousands of replies.
        limit = MAX_FILE if request.url.path.endswith("/content") else MAX_BODY
        response.stream = _Bounded(response, deadline, self.where, limit)
        if response.has_redirect_location:
            location = response.headers["location"]
            if other := transport.other_origin(str(response.url), location):
                raise MalformedAnswer(
                    f"the LLM endpoint {self.where} redirected {response.url.path} to another "
                    f"host, {other}: not followed; check OPENAI_BASE_URL"
                )
        elif response.is_redirect or 300 <= response.status_code < 400:
            raise MalformedAnswer(
                f"the LLM endpoint {self.where} answered {response.status_code} without a "
                f"Location: {_ADVICE}"
            )
        elif response.is_success and request.url.path.endswith("/chat/completions"):
            self._completion(response)  # read whole here: prhub never asks for a stream

    def _completion(self, response: httpx2.Response) -> None:
        """Reads a successful answer and checks it is one chat completion."""
        what = f"the LLM endpoint {self.where}"
        kind = (response.headers.get("content-type") or "no type").split(";")[0].strip()[:40]
        if response.status_code != 200:
            raise MalformedAnswer(f"{what} answered {response.status_code}, not 200: {_ADVICE}")
        try:
            body = response.read()
        except httpx2.RemoteProtocolError:  # the connection closed before Content-Length
            raise MalformedAnswer(
                f"{what} cut its answer short (it closed before the length it announced); "
                "rerun later",
                transient=True,
            ) from None
        except httpx2.DecodingError:
            raise MalformedAnswer(f"{what} sent a garbled answer ({kind}): {_ADVICE}") from None
        # Told apart by the body, not its type: the SDK reads JSON whatever its type says.
        text = body.decode("utf-8", "replace").strip()
        if text.startswith(("data:", "event:")):
            raise MalformedAnswer(
                f"{what} answered with an event stream ({kind}) though prhub asked for one "
                f"answer: {_ADVICE}"
            )
        if text.startswith("<"):
            raise MalformedAnswer(
                f"{what} sent an HTML page ({kind}), not a chat completion: {_ADVICE}"
            )
        if not text:
            raise MalformedAnswer(f"{what} sent an empty answer; rerun later", transient=True)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated string") or exc.pos >= len(text):
                raise MalformedAnswer(
                    f"{what} cut its answer short (truncated JSON); rerun later", transient=True
                ) from None
            raise MalformedAnswer(
                f"{what} sent an answer that is not JSON ({kind}): {_ADVICE}"
            ) from None
        try:
            limit = json.loads(response.request.content).get("max_tokens")
        except (ValueError, AttributeError, httpx2.RequestNotRead):
            limit = None
        check_completion(data, limit, what)


def check_completion(data: Any, limit: Any, what: str) -> None:
    """Refuses what is no chat completion, or one longer than max_tokens `limit` lets a model
    write: an answer online, or one line of a batch's output."""
    if isinstance(data, dict) and "choices" not in data and data.get("error"):
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise MalformedAnswer(
            f"{what} answered 200 with an error: {str(message)[:200]}; rerun later"
        )
    if (wrong := transport.problem(COMPLETION, data)) is not None:
        raise MalformedAnswer(f"{what} sent a malformed answer: {wrong}; {_ADVICE}")
    _within_max_tokens(data, limit, what)


def _within_max_tokens(data: dict[str, Any], limit: Any, what: str) -> None:
    """Refuses a reply longer than the request's max_tokens lets a model write, or whose usage
    says so (thinking aside: some servers leave it out of max_tokens)."""
    if not isinstance(limit, int) or limit < 1:
        return
    written = len(data["choices"][0]["message"].get("content") or "")
    usage = data.get("usage") or {}
    details = usage.get("completion_tokens_details")
    thinking = details.get("reasoning_tokens") if isinstance(details, dict) else None
    out = (usage.get("completion_tokens") or 0) - (thinking if isinstance(thinking, int) else 0)
    if written > limit * CHARS_PER_TOKEN or out > 2 * limit:
        raise MalformedAnswer(
            f"{what} sent a reply of {written} characters and {usage.get('completion_tokens')} "
            f"output tokens by its count for max_tokens {limit}, more than that limit lets a "
            "model write: not used; check that the server honours max_tokens"
        )


class _Bounded(httpx2.SyncByteStream):
    """A response body that must arrive by the deadline and stay under MAX_BODY."""

    def __init__(
        self, response: httpx2.Response, deadline: transport.Deadline, where: str, limit: int
    ) -> None:
        self.response = response
        self.limit = limit
        self.stream = cast(httpx2.SyncByteStream, response.stream)  # a sync client's
        self.deadline = deadline
        self.where = where

    def __iter__(self) -> Iterator[bytes]:
        response = self.response
        length = response.headers.get("content-length")
        chunks = transport.body(self.stream, self.deadline, self.limit, self._cut, length)
        try:
            yield from chunks
        except transport.TooBig:
            raise _too_big(self.where, self.limit) from None
        except transport.Late:
            raise httpx2.ReadTimeout(
                "no whole answer by the deadline", request=response.request
            ) from None

    def _cut(self) -> None:
        """Shuts the connection under a read that waits past the deadline."""
        stream = self.response.extensions["network_stream"]
        stream.get_extra_info("socket").shutdown(socket.SHUT_RD)

    def close(self) -> None:
        self.stream.close()


def detail(exc: openai.APIStatusError) -> str:
    """The whole error message the endpoint sent."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or exc.message)


def refuses_format(exc: openai.APIStatusError) -> bool:
    """Whether the endpoint refused the request's response_format: 400/422 from most servers,
    500 from llama-cpp-python, each naming what it refused."""
    refusal = exc.status_code in (400, 422) or exc.status_code >= 500
    return refusal and bool(_NAMES_FORMAT.search(detail(exc)))


def error_message(exc: openai.APIStatusError) -> str:
    """The endpoint's error message on one short line: servers send tracebacks and pages."""
    return " ".join(detail(exc).split())[:300]


def error_code(exc: openai.APIStatusError) -> str:
    """The error's code or type (e.g. context_length_exceeded), lowercased; "" if none."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    if not isinstance(error, dict):
        return ""
    return f"{error.get('code') or ''} {error.get('type') or ''}".strip().lower()


def retry_hint(exc: BaseException) -> float | None:
    """Seconds to wait before retrying an LLM failure, or None when retrying cannot help."""
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return 0.0
    if isinstance(exc, MalformedAnswer):
        return 0.0 if exc.transient else None
    if isinstance(exc, openai.APIStatusError) and "insufficient_quota" in error_code(exc):
        return None  # a 429 that waiting does not cure
    if isinstance(exc, openai.APIStatusError) and refuses_format(exc):
        return None  # a refused response_format is refused again: the caller falls back
    if isinstance(exc, openai.APIStatusError) and exc.status_code == 501:
        return None  # not implemented: no API here, and asking again will not make one
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408:
            headers = exc.response.headers
            if headers.get("retry-after-ms"):
                return float(headers["retry-after-ms"]) / 1000
            wait = retry.retry_after(headers.get("retry-after"))
            return 0.0 if wait is None else wait
    return None


def _too_big(where: str, limit: int = MAX_BODY) -> MalformedAnswer:
    return MalformedAnswer(
        f"the LLM endpoint {where} sent an answer over {limit // 2**20} MB: {_ADVICE}"
    )
