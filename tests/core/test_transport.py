"""What every HTTP answer must be, GitHub's and the LLM endpoint's alike (prhub/transport.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
from pydantic import Field, StrictInt, TypeAdapter
from typing_extensions import TypedDict

from prhub import retry, transport

# Deadlines: from the answer's start, and never past its attempts' time


def test_a_deadline_is_its_seconds_from_now() -> None:
    deadline = transport.Deadline(3)
    assert deadline.seconds == 3 and not deadline.passed()
    assert 2.9 < deadline.left() <= 3
    assert deadline.cap(0.5) == 0.5 and 2.9 < deadline.cap(None) <= 3


def test_a_deadline_ends_with_its_attempts_time() -> None:
    config: Any = SimpleNamespace(
        max_attempts=1, timeout=0.5, max_retry_time=1.0, max_retry_wait=1.0, retry_base_wait=0.01
    )
    deadline = retry.call(lambda: transport.Deadline(60), config, lambda _: None, what="x")
    assert deadline.seconds <= 1 and deadline.cap(60) <= 1


def test_a_passed_deadline_leaves_a_timeout_that_still_times_out() -> None:
    deadline = transport.Deadline(0)
    assert deadline.passed() and deadline.cap(5) == deadline.left() == 0.001


# Bodies: whole by the deadline, under the cap


def read(chunks: Any, seconds: float = 5, cap: int = 100, **kwargs: Any) -> bytes:
    return b"".join(
        transport.body(chunks, transport.Deadline(seconds), cap, lambda: None, **kwargs)
    )


def test_a_body_in_time_and_under_the_cap_is_read_whole() -> None:
    assert read([b"ab", b"cd"], cap=4, length="4") == b"abcd"


def test_a_body_over_the_cap_is_refused_before_more_is_read() -> None:
    def chunks() -> Iterator[bytes]:
        yield b"x" * 60
        yield b"x" * 60
        raise AssertionError("read past the cap")

    with pytest.raises(transport.TooBig):
        read(chunks())


def test_a_length_over_the_cap_is_refused_before_anything_is_read() -> None:
    with pytest.raises(transport.TooBig):
        read(iter(()), length="101")


def trickle(pace: float) -> Iterator[bytes]:
    while True:
        time.sleep(pace)
        yield b"x"


def test_a_trickle_ends_at_the_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(transport.Late):
        read(trickle(0.1), seconds=0.5, cap=10**6)
    assert 0.5 <= time.monotonic() - started < 1


class Waiting:
    """A read that waits for ever unless its connection is shut, as a socket's does."""

    def __init__(self, then: str) -> None:
        self.shut = threading.Event()
        self.then = then  # "fail" as a body with a length does, or "end" as one without

    def __iter__(self) -> Iterator[bytes]:
        yield b"x"
        self.shut.wait(30)
        if self.then == "fail":
            raise OSError("the connection was shut")


@pytest.mark.parametrize("then", ["fail", "end"])
def test_a_read_still_waiting_at_the_deadline_is_cut(then: str) -> None:
    waiting = Waiting(then)
    started = time.monotonic()
    with pytest.raises(transport.Late):
        b"".join(transport.body(waiting, transport.Deadline(0.5), 100, waiting.shut.set))
    assert 0.5 <= time.monotonic() - started < 1.5


def test_a_failing_read_before_the_deadline_fails_as_itself() -> None:
    def broken() -> Iterator[bytes]:
        yield b"x"
        raise OSError("reset")

    with pytest.raises(OSError, match="reset"):
        read(broken())


def test_a_cut_that_fails_still_ends_the_answer_late() -> None:
    def cut() -> None:
        raise OSError("already closed")

    with pytest.raises(transport.Late):
        b"".join(transport.body(trickle(0.2), transport.Deadline(0.3), 100, cut))


# Origins: redirects and links are followed on the same scheme, host and port only


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://api.github.com/repos", "https://api.github.com:443"),
        ("http://127.0.0.1:8080/v1?key=x", "http://127.0.0.1:8080"),
        ("http://bob:hunter2@host/x", "http://host:80"),
        ("http://[::1]:9/x", "http://[::1]:9"),
        ("/relative", None),
        ("http://host:notaport/", None),
    ],
)
def test_an_origin_is_scheme_host_and_port(url: str, origin: str | None) -> None:
    assert transport.origin(url) == origin


@pytest.mark.parametrize(
    ("target", "other"),
    [
        ("/moved", None),
        ("http://host:80/moved", None),
        ("https://host/moved", "https://host:443"),
        ("http://localhost/moved", "http://localhost:80"),
        ("http://host:81/", "http://host:81"),
        ("http://user:pw@:81/", "an unreadable address"),
    ],
)
def test_another_origin_is_named_and_the_same_is_none(target: str, other: str | None) -> None:
    assert transport.other_origin("http://host/x", target) == other


# Shapes: the first thing wrong, on one short line


class _Item(TypedDict):
    n: StrictInt


class _Answer(TypedDict):
    items: Annotated[list[_Item], Field(min_length=1)]


ANSWER: TypeAdapter[Any] = TypeAdapter(_Answer)


@pytest.mark.parametrize(
    ("shape", "data", "says"),
    [
        (ANSWER, {"items": [{"n": 1}]}, None),
        (ANSWER, [], "a list instead of an object"),
        (ANSWER, None, "null instead of an object"),
        (ANSWER, True, "true or false instead of an object"),
        (TypeAdapter(list[_Item]), {"n": 1}, "an object instead of a list"),
        (TypeAdapter(list[_Item]), "ok", "a string instead of a list"),
        (ANSWER, {"items": []}, "no items"),
        (ANSWER, {"items": [{"n": "1"}]}, "items.0.n: Input should be a valid integer"),
        (ANSWER, {}, "items: Field required"),
    ],
)
def test_a_shape_problem_is_one_short_line(shape: Any, data: Any, says: str | None) -> None:
    assert transport.problem(shape, data) == says


def test_a_long_problem_is_cut_short() -> None:
    shape: TypeAdapter[Any] = TypeAdapter(dict[str, int])
    problem = transport.problem(shape, {"k" * 500: "x"})
    assert problem is not None and len(problem) == 200 and "\n" not in problem
