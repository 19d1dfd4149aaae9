"""One retry policy for GitHub and the LLM: bounded attempts, waits and time; Retry-After heeded."""

from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import tenacity

from prhub.config import Settings

log = logging.getLogger("prhub")
T = TypeVar("T")

# Says whether an error is worth another attempt: None for no, else the wait in seconds the
# server asked for (0.0 when it named none, so the policy's own backoff applies).
Classifier = Callable[[BaseException], float | None]


def retry_after(value: str | None) -> float | None:
    """Seconds a Retry-After header asks for: a number, or an HTTP date; None if unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class Halted(BaseException):
    """The run stopped (a signal, or an error that ends it): no new request may start.

    A BaseException, so no handler of ordinary errors keeps a stopped worker going.
    """


# The whole process, halted by a signal: a plain flag, since a signal handler must take no
# lock (an Event's set() takes the one its wait() holds in the very thread the signal runs in).
_halted = False


def halt() -> None:
    """Stops every request not yet sent and every pause between attempts, in all threads."""
    global _halted
    _halted = True


def resume() -> None:
    """Lets requests start again (for a process that goes on after a halt, such as tests)."""
    global _halted
    _halted = False


def halted() -> bool:
    return _halted


def pause(seconds: float, stop: StopToken | None = None) -> None:
    """A pause that a halt of the process, or a stop of the run, cuts short (raising Halted)."""
    deadline = time.monotonic() + seconds
    while not _stopped(stop):
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.1))  # a halt or a run's stop is seen within a tenth of a second
    raise Halted()


_budget = threading.local()  # this thread's request under call(): [seconds, deadline]


def deadline() -> float | None:
    """When the request this thread is making must be answered, on time.monotonic(): its
    attempts' time limit (max_retry_time) from the first time it is asked, once the request
    holds its slot and is sent; None outside call()."""
    state = getattr(_budget, "state", None)
    if state is None:
        return None
    if state[1] is None:
        state[1] = time.monotonic() + state[0]
    return float(state[1])


def check(stop: StopToken | None = None) -> None:
    """Raises Halted once the process halted or the run stopped: no request may start then."""
    if _stopped(stop):
        raise Halted()


def _stopped(stop: StopToken | None) -> bool:
    return _halted or (stop is not None and stop.stopped.is_set())


class StopToken:
    """One run's stop, and its retries counted across threads for its summary: once the run
    ends for an error, its requests in other threads stop too, and other runs' do not."""

    def __init__(self) -> None:
        self.retries = 0
        self._lock = threading.Lock()
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()

    def count_retry(self) -> None:
        with self._lock:
            self.retries += 1


def call(
    fn: Callable[[], T],
    settings: Settings,
    classify: Classifier,
    *,
    what: str,
    stop: StopToken | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    level: int = logging.INFO,
) -> T:
    """Runs fn, retrying the errors `classify` accepts; the last error propagates unchanged;
    each retry is logged at `level`.

    No attempt starts once the run is halted.
    """
    started = clock()
    # One attempt always has its whole timeout: a budget shorter than it would cut the answer
    # that a raised PRHUB_TIMEOUT was meant to wait for.
    budget = max(settings.max_retry_time, settings.timeout)

    def attempt() -> T:
        check(stop)
        return fn()

    def should_retry(state: tenacity.RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if exc is None:
            return False
        hint = classify(exc)
        # A server asking for a longer pause than we allow is a failure to report, not to sit out.
        return hint is not None and hint <= settings.max_retry_wait

    def wait(state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hint: float | None = classify(exc) if exc else None
        if hint:
            return hint
        backoff = settings.retry_base_wait * 2.0 ** (state.attempt_number - 1)
        return min(backoff * (1 + random.random() / 2), settings.max_retry_wait)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if stop:
            stop.count_retry()
        exc = state.outcome.exception() if state.outcome else None
        log.log(level, "%s failed (%s); retry %d", what, type(exc).__name__, state.attempt_number)

    def give_up(state: tenacity.RetryCallState) -> bool:
        # Runs after wait(): upcoming_sleep is the pause before the next attempt.
        spent = clock() - started + state.upcoming_sleep
        return state.attempt_number >= settings.max_attempts or spent > budget

    outer = getattr(_budget, "state", None)
    _budget.state = [budget, None]
    retrying = tenacity.Retrying(
        stop=give_up,
        wait=wait,
        retry=should_retry,
        before_sleep=before_sleep,
        reraise=True,
        sleep=sleep or (lambda seconds: pause(seconds, stop)),
    )
    try:
        return retrying(attempt)
    finally:
        _budget.state = outer
