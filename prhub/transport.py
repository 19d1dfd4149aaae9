"""What prhub asks of every HTTP answer, GitHub's and the LLM endpoint's alike: whole by its
deadline, under a size cap, redirected only within its origin, and JSON of the expected shape.

Each side words the errors its own way; this module raises only TooBig and Late."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import TypeAdapter, ValidationError

from prhub import retry

MAX_REDIRECTS = 5  # followed for one answer; one more is a loop


class TooBig(Exception):
    """The answer is longer than its cap: no more of it is read."""


class Late(Exception):
    """The answer was not whole by its deadline."""


class Deadline:
    """When a whole answer must be in, on time.monotonic(): `seconds` after it is asked for,
    and no later than the end of its attempts' time (retry.deadline()).

    A library's read timeout bounds each read, never all of them: a server sending a byte a
    second would hold a request for ever."""

    def __init__(self, seconds: float) -> None:
        budget = retry.deadline()  # asked first: it starts the attempts' clock
        now = time.monotonic()
        self.seconds = seconds if budget is None else min(seconds, budget - now)
        self.at = now + self.seconds

    def left(self) -> float:
        """Seconds left, at least a millisecond: a timeout of 0 means no timeout to some."""
        return max(self.at - time.monotonic(), 0.001)

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def cap(self, timeout: float | None) -> float:
        """A wait's timeout (connecting, the headers, a read), cut to the time left."""
        return min(math.inf if timeout is None else timeout, self.left())


def body(
    chunks: Iterable[bytes],
    deadline: Deadline,
    cap: int,
    cut: Callable[[], object],
    length: str | None = None,
) -> Iterator[bytes]:
    """The chunks of an answer's body as they come: TooBig past `cap` bytes (at once for a
    Content-Length `length` over it), Late once `deadline` passed. A read still waiting then
    ends as `cut` shuts the connection under it."""
    if length and length.isdigit() and int(length) > cap:
        raise TooBig()
    late = threading.Event()

    def shut() -> None:
        late.set()
        with contextlib.suppress(Exception):  # closed already, or nothing left to shut
            cut()

    timer = threading.Timer(deadline.left(), shut)
    timer.daemon = True
    if math.isfinite(deadline.at):
        timer.start()
    size = 0
    try:
        for chunk in chunks:
            size += len(chunk)
            if size > cap:
                raise TooBig()
            if late.is_set() or deadline.passed():  # a trickle: each read in time, not all
                raise Late()
            yield chunk
    except (TooBig, Late):
        raise
    except Exception:
        if late.is_set():  # the read failed because the connection was shut under it
            raise Late() from None
        raise
    finally:
        timer.cancel()
    if late.is_set():  # a body without a length just ends when its connection is shut
        raise Late()


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


def other_origin(url: str, target: str) -> str | None:
    """The origin a redirect or link from `url` to `target` (maybe relative) leads to, when it
    is not `url`'s own and so is not followed; None when it is the same."""
    there = origin(urljoin(url, target))
    if there == origin(url):
        return None
    return there or "an unreadable address"


def problem(shape: TypeAdapter[Any], data: Any) -> str | None:
    """The first thing wrong with the JSON value `data` as `shape`, on one short line; None when
    nothing is."""
    try:
        shape.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        at = ".".join(str(part) for part in error["loc"])
        expected = {"dict_type": "an object", "list_type": "a list"}.get(error["type"])
        if not at and expected:
            return f"{_kind(data)} instead of {expected}"
        if error["type"] == "too_short":  # a list that must not be empty
            return f"no {at}"
        return " ".join(f"{at or '(root)'}: {error['msg']}".split())[:200]
    return None


def _kind(data: Any) -> str:
    """What a JSON value is, in words."""
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "true or false"
    kinds = {int: "a number", float: "a number", str: "a string", list: "a list"}
    return kinds.get(type(data), "an object")
