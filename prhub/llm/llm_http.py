"""The LLM endpoint's answers as prhub accepts them: whole by the deadline, of bounded size, from
the endpoint's own host, and shaped as a chat completion; checked before the openai SDK reads them.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from typing import Annotated, Any, NotRequired
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx2
import openai
from pydantic import Field, StrictInt, StrictStr, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from prhub import retry
from prhub.config import shown_url
from prhub.errors import LLMUnavailable

MAX_BODY = 8 * 2**20  # a reply of a few thousand tokens is tens of kB, reasoning included
MAX_REDIRECTS = 5
# The most characters one token can stand for, generously: a reply of more than max_tokens
# times this was not held to max_tokens (o200k's tokens average about 4 characters of English).
CHARS_PER_TOKEN = 16
_DEADLINE = "prhub.deadline"  # request extension: when the whole answer must be in (monotonic)
_HOPS = "prhub.hops"  # request extension, shared by the hops of one call: redirects followed
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
    return openai.DefaultHttpxClient(
        event_hooks={"request": [checks.started], "response": [checks.answered]}
    )


class _Checks:
    def __init__(self, timeout: float, where: str) -> None:
        self.timeout = timeout
        self.where = where

    def started(self, request: httpx2.Request) -> None:
        # Set by the first hop only: the hops of one call share their extensions. An attempt
        # ends by its own timeout and by the end of all attempts' time (retry.deadline).
        now = time.monotonic()
        budget = retry.deadline()
        deadline = request.extensions.setdefault(
            _DEADLINE, min(now + self.timeout, budget if budget is not None else math.inf)
        )
        # No wait (connect, headers) may outlast the deadline either.
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            left = max(deadline - now, 0.001)
            request.extensions["timeout"] = {
                k: min(v, left) if isinstance(v, int | float) else left for k, v in timeouts.items()
            }

    def answered(self, response: httpx2.Response) -> None:
        request = response.request
        deadline: float = request.extensions[_DEADLINE]
        left = deadline - time.monotonic()
        if left <= 0:
            raise httpx2.ReadTimeout("no whole answer by the deadline", request=request)
        # httpcore reads the body's read timeout when the body is first read: no read may
        # wait past the deadline, and the stream checks it between reads.
        timeouts = request.extensions.get("timeout")
        if isinstance(timeouts, dict):
            read = timeouts.get("read")
            request.extensions["timeout"] = {**timeouts, "read": min(read or left, left)}
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_BODY:
            raise _too_big(self.where)
        response.stream = _Bounded(response.stream, request, deadline, self.where)
        if response.has_redirect_location:
            self._redirect(response)
        elif response.is_redirect or 300 <= response.status_code < 400:
            raise MalformedAnswer(
                f"the LLM endpoint {self.where} answered {response.status_code} without a "
                f"Location: {_ADVICE}"
            )
        elif response.is_success and request.url.path.endswith("/chat/completions"):
            self._completion(response)  # read whole here: prhub never asks for a stream

    def _redirect(self, response: httpx2.Response) -> None:
        """Lets the client follow a redirect within the endpoint's origin, a few times."""
        target = response.url.join(response.headers["location"])
        if _origin(target) != _origin(response.url):
            raise MalformedAnswer(
                f"the LLM endpoint {self.where} redirected {response.url.path} to another host, "
                f"{_origin(target)}: not followed; check OPENAI_BASE_URL"
            )
        extensions = response.request.extensions
        extensions[_HOPS] = extensions.get(_HOPS, 0) + 1
        if extensions[_HOPS] > MAX_REDIRECTS:
            raise MalformedAnswer(
                f"the LLM endpoint {self.where} redirected {response.url.path} in a loop: "
                "check OPENAI_BASE_URL"
            )

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
        if isinstance(data, dict) and "choices" not in data and data.get("error"):
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise MalformedAnswer(
                f"{what} answered 200 with an error: {str(message)[:200]}; rerun later"
            )
        try:
            COMPLETION.validate_python(data)
        except ValidationError as exc:
            raise MalformedAnswer(
                f"{what} sent a malformed answer: {_problem(exc)}; {_ADVICE}"
            ) from None
        _within_max_tokens(data, response.request, what)


def _within_max_tokens(data: dict[str, Any], request: httpx2.Request, what: str) -> None:
    """Refuses a reply longer than the request's max_tokens lets a model write, or whose usage
    says so (thinking aside: some servers leave it out of max_tokens)."""
    try:
        limit = json.loads(request.content).get("max_tokens")
    except (ValueError, AttributeError, httpx2.RequestNotRead):
        return
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
    """A response body that must arrive by a deadline and stay under MAX_BODY."""

    def __init__(self, stream: Any, request: httpx2.Request, deadline: float, where: str) -> None:
        self.stream = stream
        self.request = request
        self.deadline = deadline
        self.where = where

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        for chunk in self.stream:
            size += len(chunk)
            if size > MAX_BODY:
                raise _too_big(self.where)
            if time.monotonic() > self.deadline:  # a trickle: every read is in time, not all
                raise httpx2.ReadTimeout("no whole answer by the deadline", request=self.request)
            yield chunk

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


def _too_big(where: str) -> MalformedAnswer:
    return MalformedAnswer(
        f"the LLM endpoint {where} sent an answer over {MAX_BODY // 2**20} MB: {_ADVICE}"
    )


def _origin(url: httpx2.URL) -> str:
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    host = f"[{url.host}]" if ":" in url.host else url.host
    return shown_url(f"{url.scheme}://{host}:{port}")


def _problem(exc: ValidationError) -> str:
    """The first thing wrong with an answer, in one short line."""
    error = exc.errors()[0]
    at = ".".join(str(part) for part in error["loc"]) or "(root)"
    if error["loc"] == ("choices",) and error["type"] == "too_short":
        return "no choices"
    return f"{at}: {error['msg']}"[:200]
