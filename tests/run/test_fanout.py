"""Work over many PRs: per-PR failures are listed, run-wide ones stop the run."""

from __future__ import annotations

import threading
import time

import pytest

from prhub.errors import (
    ConfigError,
    GitHubAuthError,
    GitHubUnavailable,
    LLMInvalidReply,
    LLMRequestError,
    LLMUnavailable,
    PRNotFound,
    StoreError,
)
from prhub.llm.limits import ContextTooLong
from prhub.model import FailedPR
from prhub.run.fanout import each, staged, stops_run


def scripted(outcomes: dict[int, Exception | None], delay: float = 0.0):
    """Work that raises the PR's scripted error or returns its number doubled; logs its calls."""
    calls: list[int] = []
    lock = threading.Lock()

    def work(number: int, value: object) -> int:
        with lock:
            calls.append(number)
        if delay:
            time.sleep(delay)
        error = outcomes.get(number)
        if error is not None:
            raise error
        return number * 2

    return work, calls


# stops_run


@pytest.mark.parametrize(
    "exc",
    [ConfigError("c"), GitHubAuthError("a"), StoreError("s"), LLMRequestError("bad key")],
)
def test_errors_that_would_fail_every_pr_stop_at_once(exc):
    assert stops_run(exc, failures=0, successes=10)


@pytest.mark.parametrize("exc", [ContextTooLong("too long"), LLMInvalidReply("r"), PRNotFound("p")])
def test_errors_of_one_pr_never_stop_the_run(exc):
    assert not stops_run(exc, failures=0, successes=0)


@pytest.mark.parametrize(
    ("failures", "successes", "stops"), [(2, 0, False), (3, 0, True), (4, 0, True), (3, 1, False)]
)
def test_an_unreachable_service_stops_only_before_any_success(failures, successes, stops):
    assert stops_run(LLMUnavailable("down"), failures, successes) is stops
    assert stops_run(GitHubUnavailable("down"), failures, successes) is stops


# each


def test_results_and_failures_sorted_by_number():
    outcomes = {5: LLMInvalidReply("reply of #5 failed"), 3: PRNotFound("o/r#3 does not exist")}
    work, calls = scripted(outcomes)
    results, failed = each({5: "e", 3: "c", 1: "a", 4: "d"}, work, jobs=2)
    assert results == {1: 2, 4: 8}
    assert failed == [
        FailedPR(number=3, error="o/r#3 does not exist"),
        FailedPR(number=5, error="reply of #5 failed"),
    ]
    assert sorted(calls) == [1, 3, 4, 5]


def test_nothing_to_do():
    ticks: list[int] = []
    assert each({}, scripted({})[0], jobs=4, tick=ticks.append) == ({}, [])
    assert ticks == [0]


def test_work_gets_each_input_value():
    seen: dict[int, str] = {}
    each({1: "one", 2: "two"}, lambda n, v: seen.setdefault(n, v), jobs=2)
    assert seen == {1: "one", 2: "two"}


@pytest.mark.parametrize(
    "exc", [ConfigError("no key"), GitHubAuthError("bad token"), StoreError("store locked")]
)
def test_a_fatal_error_stops_the_run_and_cancels_the_rest(exc):
    work, calls = scripted({1: exc}, delay=0.01)
    with pytest.raises(type(exc)) as raised:
        each({n: n for n in range(1, 21)}, work, jobs=1)
    assert raised.value is exc
    assert len(calls) < 20  # the queued PRs were cancelled


def test_a_refused_llm_request_stops_the_run_even_after_successes():
    work, _ = scripted({3: LLMRequestError("model gpt-9 does not exist")}, delay=0.01)
    with pytest.raises(LLMRequestError, match="gpt-9"):
        each({1: 1, 2: 2, 3: 3, 4: 4}, work, jobs=1)


def test_a_context_too_long_is_listed_for_its_pr_only():
    work, _ = scripted({2: ContextTooLong("prompt of 9000 tokens exceeds the input budget")})
    results, failed = each({1: 1, 2: 2, 3: 3}, work, jobs=1)
    assert results == {1: 2, 3: 6}
    assert failed == [FailedPR(number=2, error="prompt of 9000 tokens exceeds the input budget")]


def test_three_unavailable_with_no_success_stop_the_run():
    outcomes = {n: LLMUnavailable("LLM down") for n in range(1, 11)}
    work, calls = scripted(outcomes, delay=0.02)
    with pytest.raises(LLMUnavailable, match="LLM down"):
        each({n: n for n in range(1, 11)}, work, jobs=1)
    assert 3 <= len(calls) < 10


def test_github_and_llm_unavailability_count_together():
    outcomes = {
        1: GitHubUnavailable("GitHub down"),
        2: LLMUnavailable("LLM down"),
        3: GitHubUnavailable("GitHub down"),
    }
    work, _ = scripted(outcomes)
    # Two of either kind alone would be listed; three together stop the run.
    with pytest.raises((GitHubUnavailable, LLMUnavailable), match="down"):
        each({1: 1, 2: 2, 3: 3}, work, jobs=2)


def test_two_unavailable_are_listed_not_fatal():
    work, _ = scripted({1: LLMUnavailable("down"), 2: LLMUnavailable("down")})
    results, failed = each({1: 1, 2: 2, 3: 3}, work, jobs=1)
    assert results == {3: 6}
    assert [f.number for f in failed] == [1, 2]


def test_other_failures_do_not_count_as_a_service_down():
    outcomes: dict[int, Exception | None] = {n: LLMInvalidReply("bad reply") for n in (1, 2, 3)}
    outcomes[4] = LLMUnavailable("down")
    work, _ = scripted(outcomes)
    results, failed = each({n: n for n in range(1, 6)}, work, jobs=1)
    assert results == {5: 10}
    assert [f.number for f in failed] == [1, 2, 3, 4]


def test_after_one_success_unavailability_is_listed_per_pr():
    succeeded = threading.Event()

    def work(number: int, value: int) -> int:
        if number == 1:
            return 2
        # Fail only once the run has counted #1's success, whatever order threads finish in.
        assert succeeded.wait(5)
        raise LLMUnavailable(f"#{number}: LLM down")

    def tick(done: int) -> None:
        if done:
            succeeded.set()

    results, failed = each({n: n for n in range(1, 8)}, work, jobs=2, tick=tick)
    assert results == {1: 2}
    assert failed == [FailedPR(number=n, error=f"#{n}: LLM down") for n in range(2, 8)]


def test_tick_starts_at_zero_and_counts_every_done_pr():
    ticks: list[int] = []
    work, _ = scripted({2: LLMInvalidReply("bad")})
    each({n: n for n in range(1, 6)}, work, jobs=3, tick=ticks.append)
    assert ticks == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("jobs", [1, 3])
def test_no_more_than_jobs_prs_run_at_once(jobs):
    lock = threading.Lock()
    running = 0
    most = 0

    def work(number: int, value: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.03)
        with lock:
            running -= 1
        return number

    results, failed = each({n: n for n in range(12)}, work, jobs=jobs)
    assert len(results) == 12 and failed == []
    assert most == jobs


def test_a_bug_in_the_work_cancels_the_rest_too():
    work, calls = scripted({1: KeyError("boom")}, delay=0.01)
    with pytest.raises(KeyError):
        each({n: n for n in range(1, 21)}, work, jobs=1)
    assert len(calls) < 20


def test_a_fatal_error_stops_the_run_through_its_stop():
    stopped = []
    work, _ = scripted({1: ConfigError("no key")})
    with pytest.raises(ConfigError):
        each({n: n for n in range(1, 4)}, work, jobs=1, stop=lambda: stopped.append(True))
    assert stopped == [True]
    stopped.clear()
    each({n: n for n in range(1, 4)}, scripted({})[0], jobs=2, stop=lambda: stopped.append(True))
    assert stopped == []  # a run that ends well stops nothing


# staged: fetch and work overlap


def test_work_starts_before_the_last_fetch_ends():
    first_digested = threading.Event()

    def fetch(number: int, value: int) -> int:
        if number == 3:  # the slow last fetch: it ends only once #1 has been worked on
            assert first_digested.wait(5), "work waited for every fetch"
        return number

    def work(number: int, value: int) -> int:
        if number == 1:
            first_digested.set()
        return value * 10

    fetched, results, failed = staged({1: 1, 2: 2, 3: 3}, fetch, work, jobs=2)
    assert fetched == {1: 1, 2: 2, 3: 3}
    assert results == {1: 10, 2: 20, 3: 30} and failed == []


def test_the_biggest_fetched_pr_is_worked_on_first():
    all_fetched = threading.Event()
    order: list[int] = []
    sizes = {1: 5, 2: 1, 3: 50, 4: 20, 5: 9}

    def fetch(number: int, value: int) -> int:
        if number == 5:
            all_fetched.set()
        return value

    def work(number: int, value: int) -> int:
        order.append(number)
        if number == 1:  # the first to arrive; the rest wait until every fetch is done
            assert all_fetched.wait(5)
            time.sleep(0.05)
        return number

    staged({n: sizes[n] for n in sizes}, fetch, work, jobs=1, size=lambda v: v)
    assert order == [1, 3, 4, 5, 2]


def test_failures_of_either_stage_are_listed_and_ticks_count_both():
    ticks: list[tuple[str, int, int]] = []

    def fetch(number: int, value: int) -> int:
        if number == 2:
            raise PRNotFound("#2 gone")
        return number

    def work(number: int, value: int) -> int:
        if number == 3:
            raise LLMInvalidReply("#3 bad")
        return number

    fetched, results, failed = staged(
        {1: 1, 2: 2, 3: 3}, fetch, work, jobs=1, tick=lambda *t: ticks.append(t)
    )
    assert set(fetched) == {1, 3} and results == {1: 1}
    assert failed == [FailedPR(number=2, error="#2 gone"), FailedPR(number=3, error="#3 bad")]
    assert ticks[0] == ("fetch", 0, 3)
    assert ("fetch", 3, 3) in ticks
    assert ticks[-1] == ("summarize", 2, 2)  # the PR that failed to fetch is not waited for


def test_an_llm_down_stops_the_run_although_every_fetch_succeeded():
    work, _ = scripted({n: LLMUnavailable("down") for n in range(1, 7)})
    with pytest.raises(LLMUnavailable):
        staged({n: n for n in range(1, 7)}, lambda n, v: v, work, jobs=1)


def test_work_ticks_only_when_work_ends_or_its_total_shrinks():
    ticks: list[tuple[str, int, int]] = []

    def fetch(number: int, value: int) -> int:
        if number == 4:
            raise PRNotFound("#4 gone")
        return number

    staged(
        {n: n for n in range(1, 5)}, fetch, lambda n, v: v, jobs=1, tick=lambda *t: ticks.append(t)
    )
    work = [t for t in ticks if t[0] == "summarize"]
    assert work[0] == ("summarize", 0, 4) and work[-1] == ("summarize", 3, 3)
    assert len(work) == 1 + 3 + 1  # the start, each PR worked on, the failed fetch
