"""Work over many PRs on a bounded pool: one PR's failure is listed, a run-wide one stops all."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from prhub.errors import (
    ConfigError,
    GitHubAuthError,
    GitHubUnavailable,
    Interrupted,
    LLMRequestError,
    LLMUnavailable,
    PrhubError,
    StoreError,
)
from prhub.github.ratelimit import LimitReached
from prhub.llm.limits import ContextTooLong
from prhub.model import FailedPR

V = TypeVar("V")
P = TypeVar("P")
T = TypeVar("T")

# Errors that would fail every PR alike: stop the run instead of listing each PR as failed.
FATAL = (ConfigError, GitHubAuthError, StoreError, LimitReached)
DOWN = 3  # this many PRs failing for an unreachable service, and none succeeding: stop


def stops_run(exc: PrhubError, failures: int, successes: int) -> bool:
    """Whether `exc` ends the whole run rather than only its PR."""
    if isinstance(exc, FATAL):
        return True
    if isinstance(exc, LLMRequestError) and not isinstance(exc, ContextTooLong):
        return True  # a refused request (bad key, unknown model) is refused for every PR
    return failures >= DOWN and not successes  # the service is down, not one PR


def each(
    inputs: Mapping[int, V],
    work: Callable[[int, V], T],
    jobs: int,
    tick: Callable[[int], None] = lambda _: None,
    stop: Callable[[], None] = lambda: None,
) -> tuple[dict[int, T], list[FailedPR]]:
    """Runs `work` per PR, in the order given, on `jobs` threads.

    Returns the results and the PRs that failed on their own; raises what stops the run,
    after calling `stop` so that the run's work in flight ends too.
    """
    results, _, failed = staged(inputs, work, None, jobs, lambda _, done, __: tick(done), stop)
    return results, failed


def staged(
    inputs: Mapping[int, V],
    fetch: Callable[[int, V], P],
    work: Callable[[int, P], T] | None,
    jobs: int,
    tick: Callable[[str, int, int], None] = lambda *_: None,
    stop: Callable[[], None] = lambda: None,
    size: Callable[[P], int] = lambda _: 0,
    fetch_jobs: int | None = None,
) -> tuple[dict[int, P], dict[int, T], list[FailedPR]]:
    """Fetches every input on `fetch_jobs` threads (default `jobs`) and works on each fetched
    one as soon as it arrives, on `jobs` threads more, the biggest first among those waiting.

    Returns what was fetched, the results of the work, and the PRs that failed on their own
    (at either stage); raises what stops the run, after calling `stop`. `tick` gets the stage
    ("fetch" or "summarize"), the PRs done in it and its total so far.
    """
    fetched: dict[int, P] = {}
    results: dict[int, T] = {}
    failed: list[FailedPR] = []
    lost = {"fetch": 0, "summarize": 0}  # PRs failed at each stage
    down = {"fetch": 0, "summarize": 0}  # of those, PRs lost to a service that kept failing
    waiting: list[tuple[int, int]] = []  # (-size, number): a heap, biggest first
    fetchers = ThreadPoolExecutor(max_workers=fetch_jobs or jobs)
    workers = ThreadPoolExecutor(max_workers=jobs)
    pending: dict[Future[Any], tuple[str, int]] = {
        fetchers.submit(fetch, n, value): ("fetch", n) for n, value in inputs.items()
    }
    tick("fetch", 0, len(inputs))
    if work is not None:
        tick("summarize", 0, len(inputs))
    try:
        while pending:
            for future in wait(pending, return_when=FIRST_COMPLETED).done:
                stage, number = pending.pop(future)
                done: dict[int, Any] = fetched if stage == "fetch" else results
                try:
                    value = future.result()
                except PrhubError as exc:
                    lost[stage] += 1
                    down[stage] += isinstance(exc, LLMUnavailable | GitHubUnavailable)
                    if stops_run(exc, down[stage], len(done)):
                        raise
                    failed.append(FailedPR(number=number, error=str(exc)))
                else:
                    done[number] = value
                    if stage == "fetch":
                        heapq.heappush(waiting, (-size(value), number))
                if stage == "fetch":
                    tick("fetch", len(fetched) + lost["fetch"], len(inputs))
                if work is not None and (stage == "summarize" or number not in fetched):
                    tick("summarize", len(results) + lost["summarize"], len(inputs) - lost["fetch"])
            running = sum(stage == "summarize" for stage, _ in pending.values())
            while work is not None and waiting and running < jobs:
                number = heapq.heappop(waiting)[1]
                pending[workers.submit(work, number, fetched[number])] = ("summarize", number)
                running += 1
    except Interrupted:
        # Start nothing more and do not wait for requests in flight: the process ends now.
        for pool in (fetchers, workers):
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        # A fatal error or a bug: start nothing more, and the run's workers in flight stop at
        # their next request or pause.
        stop()
        for pool in (fetchers, workers):
            pool.shutdown(wait=True, cancel_futures=True)
        raise
    for pool in (fetchers, workers):
        pool.shutdown()
    return fetched, results, sorted(failed, key=lambda f: f.number)
