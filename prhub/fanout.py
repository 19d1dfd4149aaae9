"""Work over many PRs on a bounded pool: one PR's failure is listed, a run-wide one stops all."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

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
from prhub.llm import ContextTooLong
from prhub.report import FailedPR

V = TypeVar("V")
T = TypeVar("T")

# Errors that would fail every PR alike: stop the run instead of listing each PR as failed.
FATAL = (ConfigError, GitHubAuthError, StoreError)
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
    results: dict[int, T] = {}
    failed: list[FailedPR] = []
    down = 0  # PRs lost to a service that kept failing
    tick(0)
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = {pool.submit(work, n, value): n for n, value in inputs.items()}
        for done, future in enumerate(as_completed(futures), 1):
            number = futures[future]
            try:
                results[number] = future.result()
            except PrhubError as exc:
                down += isinstance(exc, LLMUnavailable | GitHubUnavailable)
                if stops_run(exc, down, len(results)):
                    raise
                failed.append(FailedPR(number=number, error=str(exc)))
            tick(done)
    except Interrupted:
        # Start nothing more and do not wait for requests in flight: the process ends now.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    except BaseException:
        # A fatal error or a bug: start nothing more, and the run's workers in flight stop at
        # their next request or pause.
        stop()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return results, sorted(failed, key=lambda f: f.number)
