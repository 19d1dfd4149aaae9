"""The one retry policy: Retry-After reading, bounded attempts, waits and total time."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from prhub import retry
from prhub.config import Settings
from prhub.retry import StopToken, retry_after
from tests.factories import settings


class Flaky(Exception):
    """A failure the classifier below calls transient."""


class Fatal(Exception):
    """A failure the classifier below refuses to retry."""


class Clock:
    """A monotonic clock that only moves when the policy sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def failing(times: int, exc: Exception, result: str = "ok"):
    """A function that raises `exc` `times` times, then returns `result`; counts its calls."""
    calls = []

    def fn() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return result

    return fn, calls


def run(fn, config: Settings, classify, clock: Clock, stop: StopToken | None = None):
    return retry.call(
        fn, config, classify, what="test call", stop=stop, sleep=clock.sleep, clock=clock
    )


def backoff(exc: BaseException) -> float | None:
    return 0.0 if isinstance(exc, Flaky) else None


# retry_after


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("5", 5.0), ("0", 0.0), ("1.5", 1.5), (" 7 ", 7.0), ("-3", 0.0)],
)
def test_retry_after_reads_seconds(value, seconds):
    assert retry_after(value) == seconds


@pytest.mark.parametrize("value", [None, "", "soon", "Thu, 99 Foo 2026", "1e", "12 seconds"])
def test_retry_after_is_none_for_what_it_cannot_read(value):
    assert retry_after(value) is None


def test_retry_after_reads_an_http_date():
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 27.0 <= retry_after(later) <= 30.0
    earlier = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    assert retry_after(earlier) == 0.0


# call


def test_success_after_transient_failures_counts_the_retries():
    fn, calls = failing(2, Flaky())
    clock, counter = Clock(), StopToken()
    assert run(fn, settings(), backoff, clock, counter) == "ok"
    assert len(calls) == 3
    assert counter.retries == 2 and len(clock.sleeps) == 2


def test_attempts_are_bounded_and_the_last_error_propagates_unchanged():
    error = Flaky("still down")
    fn, calls = failing(99, error)
    clock, counter = Clock(), StopToken()
    with pytest.raises(Flaky) as raised:
        run(fn, settings(max_attempts=4), backoff, clock, counter)
    assert raised.value is error
    assert len(calls) == 4
    assert counter.retries == 3  # retries, not attempts


def test_an_error_the_classifier_refuses_is_not_retried():
    fn, calls = failing(1, Fatal("bad request"))
    clock, counter = Clock(), StopToken()
    with pytest.raises(Fatal, match="bad request"):
        run(fn, settings(), backoff, clock, counter)
    assert len(calls) == 1 and clock.sleeps == [] and counter.retries == 0


def test_backoff_doubles_with_jitter_and_is_capped():
    fn, _ = failing(99, Flaky())
    clock = Clock()
    config = settings(max_attempts=5, retry_base_wait=1.0, max_retry_wait=3.0)
    with pytest.raises(Flaky):
        run(fn, config, backoff, clock)
    first, second, third, fourth = clock.sleeps
    assert 1.0 <= first <= 1.5
    assert 2.0 <= second <= 3.0
    assert third == fourth == 3.0  # 4 s and 8 s, capped at max_retry_wait


def test_retry_after_from_the_server_sets_the_wait():
    fn, calls = failing(2, Flaky())
    clock = Clock()
    assert run(fn, settings(retry_base_wait=5.0), lambda exc: 0.25, clock) == "ok"
    assert clock.sleeps == [0.25, 0.25]
    assert len(calls) == 3


def test_a_longer_retry_after_than_allowed_fails_at_once():
    fn, calls = failing(1, Flaky())
    clock = Clock()
    with pytest.raises(Flaky):
        run(fn, settings(max_retry_wait=10.0), lambda exc: 60.0, clock)
    assert len(calls) == 1 and clock.sleeps == []


def test_total_time_bounds_the_attempts():
    fn, calls = failing(99, Flaky())
    clock = Clock()
    config = settings(max_attempts=50, timeout=0.5, max_retry_time=1.0)
    with pytest.raises(Flaky):
        run(fn, config, lambda exc: 0.3, clock)
    # Waits of 0.3 s fit three times in 1 s; the fourth would pass the bound, so no 5th try.
    assert clock.sleeps == [0.3, 0.3, 0.3]
    assert len(calls) == 4


def test_real_sleeps_with_tiny_waits():
    fn, calls = failing(2, Flaky())
    counter = StopToken()
    config = settings(retry_base_wait=0.01, max_retry_wait=0.02)
    started = time.monotonic()
    assert retry.call(fn, config, backoff, what="tiny", stop=counter) == "ok"
    assert time.monotonic() - started < 1.0
    assert len(calls) == 3 and counter.retries == 2


def test_each_retry_is_logged_with_what_failed(caplog):
    fn, _ = failing(1, Flaky())
    with caplog.at_level(logging.INFO, logger="prhub"):
        run(fn, settings(), backoff, Clock())
    assert [r.getMessage() for r in caplog.records] == ["test call failed (Flaky); retry 1"]


def test_retry_counter_is_safe_across_threads():
    counter = StopToken()

    def add_many() -> None:
        for _ in range(2000):
            counter.count_retry()

    threads = [threading.Thread(target=add_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.retries == 8000


def test_no_attempt_starts_once_the_run_is_halted():
    calls = []
    retry.halt()
    with pytest.raises(retry.Halted):
        retry.call(lambda: calls.append(1), settings(), backoff, what="x")
    assert calls == [] and retry.halted()
    retry.resume()
    assert retry.call(lambda: "ok", settings(), backoff, what="x") == "ok"


def test_a_halt_cuts_a_pause_between_attempts_short():
    config = settings(max_attempts=5, retry_base_wait=30.0, max_retry_wait=60.0)
    calls = []

    def fn() -> None:  # the halt comes while the pause after the first attempt runs
        calls.append(1)
        threading.Timer(0.2, retry.halt).start()
        raise Flaky("down")

    started = time.monotonic()
    with pytest.raises(retry.Halted):
        retry.call(fn, config, backoff, what="x")
    assert time.monotonic() - started < 5 and len(calls) == 1  # not the 30 s pause


def test_a_runs_stop_halts_its_own_requests_only():
    mine, other = StopToken(), StopToken()
    mine.stop()
    with pytest.raises(retry.Halted):
        retry.call(lambda: "sent", settings(), backoff, what="x", stop=mine)
    assert retry.call(lambda: "sent", settings(), backoff, what="x", stop=other) == "sent"
    assert not retry.halted()  # the process goes on


def test_a_runs_stop_cuts_its_pause_short():
    counter = StopToken()
    config = settings(max_attempts=5, retry_base_wait=30.0, max_retry_wait=60.0)
    threading.Timer(0.2, counter.stop).start()
    fn, calls = failing(5, Flaky("down"))
    started = time.monotonic()
    with pytest.raises(retry.Halted):
        retry.call(fn, config, backoff, what="x", stop=counter)
    assert time.monotonic() - started < 5 and len(calls) == 1
