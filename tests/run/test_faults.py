"""Faults of GitHub and the LLM: each kind retried or reported, and a faulty week loses nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from prhub import retry
from prhub.config import Settings
from prhub.digest.digest import plan
from prhub.errors import GitHubUnavailable, LLMInvalidReply, LLMRequestError, LLMUnavailable
from prhub.github.source import GitHubSource
from prhub.llm.limits import ContextTooLong
from prhub.llm.llm import LLM
from prhub.llm.prompt import message_tokens
from prhub.model import FileChange, PullRequest, WeeklyReport
from prhub.run.run import Run
from tests.factories import (
    FIXTURES,
    GITHUB_TOKEN,
    MESSAGES,
    OPENAI_KEY,
    REPO,
    FakeClock,
    Rating,
    settings,
    week_of,
)
from tests.factories import settings as llm_settings
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.github import Answer
from tests.standins.llm import default_responder, prompt_text

WEEK_31 = [101, 102, 103, 104, 105, 106]
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)
PRIMARY = "API rate limit exceeded for user ID 1."


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the retry policy takes, recorded instead of slept, on a clock they advance."""
    taken: list[float] = []
    real_call = retry.call

    def call(*args: Any, **kwargs: Any) -> Any:
        return real_call(*args, **kwargs, sleep=taken.append, clock=lambda: sum(taken))

    monkeypatch.setattr(retry, "call", call)
    return taken


@contextmanager
def clients(config: Settings) -> Iterator[tuple[GitHubSource, LLM, retry.StopToken]]:
    """A source and an LLM client sharing one retry counter, closed afterwards."""
    counter = retry.StopToken()
    with ExitStack() as stack:
        source = stack.enter_context(closing(GitHubSource(config, stop=counter)))
        llm = stack.enter_context(closing(LLM(config, stop=counter)))
        yield source, llm, counter


def week_31(config: Settings) -> tuple[WeeklyReport, int]:
    """The weekly run of 2026 week 31, and the retries it made."""
    with clients(config) as (source, llm, counter):
        report = week_of(config, year=2026, week=31, source=source, llm=llm)
    return report, counter.retries


def digest_prs(bodies: list[dict[str, Any]]) -> list[int]:
    """The PR numbers of the digest requests among `bodies`, in order."""
    found = []
    for body in bodies:
        name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if name in ("DigestContent", "ChunkNotes"):
            text = prompt_text(body)
            found.append(next(n for n in WEEK_31 if f"PR #{n}" in text))
    return found


# GitHub: each kind of fault, scripted


def primary_limit(status: int, reset_in: float, now: float) -> Answer:
    reset = str(int(now + reset_in))
    headers = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}
    return status, headers, {"message": PRIMARY, "documentation_url": "https://docs.github.com"}


@pytest.mark.parametrize(
    "answer",
    [
        (500, {}, {"message": "Server Error"}),
        (502, {}, {"message": "Server Error"}),
        (503, {}, {"message": "Service Unavailable"}),
        "reset",
    ],
    ids=["500", "502", "503", "connection-reset"],
)
def test_github_fault_is_retried(github: GitHubStandIn, answer: Any, waits: list[float]) -> None:
    github.script(r"/pulls/101$", [answer])
    config = Settings(github_url=github.url, github_token=GITHUB_TOKEN, retry_base_wait=0.01)
    counter = retry.StopToken()
    with closing(GitHubSource(config, stop=counter)) as source:
        assert source.pull_payload(REPO, 101)["number"] == 101
    assert counter.retries == 1
    assert len(waits) == 1 and waits[0] < 0.1


@pytest.mark.parametrize(
    ("answer", "asked"),
    [
        ((403, {"Retry-After": "2"}, {"message": SECONDARY}), 2.0),
        ((429, {"Retry-After": "3"}, {"message": "Too Many Requests"}), 3.0),
    ],
    ids=["secondary-403", "429-retry-after"],
)
def test_github_rate_limit_asking_for_a_pause_is_waited_out(
    github: GitHubStandIn, answer: Any, asked: float, waits: list[float]
) -> None:
    github.script(r"/pulls/101$", [answer])
    config = Settings(github_url=github.url, github_token=GITHUB_TOKEN)
    clock, counter = FakeClock(), retry.StopToken()
    budget = clock.budget()
    with closing(GitHubSource(config, stop=counter, budget=budget)) as source:
        assert source.pull_payload(REPO, 101)["number"] == 101
    assert counter.retries == 1 and waits == []  # the budget's wait, not a retry's pause
    assert sum(clock.slept) == pytest.approx(asked)


@pytest.mark.parametrize("status", [403, 429])
def test_github_primary_limit_near_its_reset_is_waited_out(
    github: GitHubStandIn, status: int
) -> None:
    clock = FakeClock()
    github.script(r"/pulls/101$", [primary_limit(status, reset_in=20, now=clock.time())])
    config = Settings(github_url=github.url, github_token=GITHUB_TOKEN)
    with closing(GitHubSource(config, budget=clock.budget())) as source:
        assert source.pull_payload(REPO, 101)["number"] == 101
    assert 19 <= sum(clock.slept) <= 22  # until the reset, plus a second


@pytest.mark.parametrize("status", [403, 429])
def test_github_primary_limit_far_from_its_reset_fails_naming_the_reset(
    github: GitHubStandIn, status: int
) -> None:
    clock = FakeClock()
    answer = primary_limit(status, reset_in=45 * 60, now=clock.time())
    github.script(r"/pulls/101$", [answer])
    config = Settings(github_url=github.url, github_token=GITHUB_TOKEN)
    budget = clock.budget(wait=config.github_wait)
    with closing(GitHubSource(config, budget=budget)) as source:
        with pytest.raises(GitHubUnavailable) as caught:
            source.pull_payload(REPO, 101)
    reset = datetime.fromtimestamp(int(answer[1]["X-RateLimit-Reset"]) + 1).astimezone()
    assert str(caught.value).endswith(f"rerun after {reset:%H:%M} (local time)")
    assert "rate limit" in str(caught.value) and "in 46 min" in str(caught.value)
    assert clock.slept == [] and len(github.requests) == 1


def test_github_timeout_is_retried(github: GitHubStandIn) -> None:
    github.script(r"/pulls/101$", [("sleep", 1.1)])
    config = Settings(github_url=github.url, github_token=GITHUB_TOKEN, timeout=0.5)
    counter = retry.StopToken()
    with closing(GitHubSource(config, stop=counter)) as source:
        assert source.pull_payload(REPO, 101)["number"] == 101
    assert counter.retries == 1


def test_a_retry_resumes_at_the_page_that_failed(github: GitHubStandIn) -> None:
    github.script(r"/pulls/109/files$", [("sleep", 0.0), (502, {}, {"message": "Server Error"})])
    config = Settings(github_url=github.url, github_token=GITHUB_TOKEN, retry_base_wait=0.01)
    client = Github(
        base_url=github.url,
        auth=Auth.Token(GITHUB_TOKEN),
        per_page=30,
        retry=None,
        seconds_between_requests=None,
    )
    with closing(GitHubSource(config, client=client)) as source:
        assert len(source.pull(REPO, 109).files) == 35
    pages = [
        r["query"].get("page", ["1"])[0] for r in github.requests if r["path"].endswith("/files")
    ]
    assert pages == ["1", "2", "2"]  # page 1 is not read again


def test_retries_stop_at_the_total_time_bound(github: GitHubStandIn, waits: list[float]) -> None:
    github.script(r"/pulls/101$", [(503, {}, {"message": "Service Unavailable"})] * 20)
    config = Settings(
        github_url=github.url,
        github_token=GITHUB_TOKEN,
        retry_base_wait=3.0,
        max_retry_wait=3.0,  # every pause is 3 s
        max_attempts=20,
        timeout=5.0,  # under the bound: one attempt's timeout would stretch it
        max_retry_time=10.0,
    )
    with closing(GitHubSource(config)) as source, pytest.raises(GitHubUnavailable):
        source.pull_payload(REPO, 101)
    assert waits == [3.0, 3.0, 3.0]  # a fourth pause would start the next attempt past 10 s
    assert len(github.requests) == 4


# LLM: each kind of fault, scripted


def llm_error(status: int, message: str, code: str | None, **headers: str) -> Answer:
    return status, headers, {"error": {"message": message, "type": code, "code": code}}


@pytest.mark.parametrize(
    ("answer", "asked"),
    [
        (llm_error(429, "Rate limit reached", "rate_limit_exceeded", **{"Retry-After": "2"}), 2.0),
        (llm_error(500, "The server had an error", "server_error"), None),
        (llm_error(502, "Bad gateway", None), None),
        (llm_error(503, "The engine is currently overloaded", "server_error"), None),
        ("reset", None),
    ],
    ids=["429-retry-after", "500", "502", "503", "connection-reset"],
)
def test_llm_fault_is_retried(
    llm: LLMStandIn, answer: Any, asked: float | None, waits: list[float]
) -> None:
    llm.script([answer])
    counter = retry.StopToken()
    with closing(LLM(llm_settings(llm), stop=counter)) as client:
        rating, usage = client.complete(MESSAGES, Rating)
    assert isinstance(rating, Rating) and usage.calls == 1
    assert counter.retries == 1 and len(llm.bodies) == 2
    assert len(waits) == 1 and (waits[0] == asked if asked else waits[0] < 0.1)


def test_llm_timeout_is_retried(llm: LLMStandIn) -> None:
    llm.script([("sleep", 0.8)])
    counter = retry.StopToken()
    with closing(LLM(llm_settings(llm, timeout=0.3), stop=counter)) as client:
        client.complete(MESSAGES, Rating)
    assert counter.retries == 1


def test_llm_asking_for_a_longer_pause_than_allowed_fails_at_once(
    llm: LLMStandIn, waits: list[float]
) -> None:
    llm.script(
        [llm_error(429, "Rate limit reached", "rate_limit_exceeded", **{"Retry-After": "600"})]
    )
    with closing(LLM(llm_settings(llm, max_retry_wait=60))) as client:
        with pytest.raises(LLMUnavailable, match="429.*lower --jobs"):
            client.complete(MESSAGES, Rating)
    assert waits == [] and len(llm.bodies) == 1


def test_llm_quota_exhausted_is_not_retried(llm: LLMStandIn, waits: list[float]) -> None:
    quota = llm_error(429, "You exceeded your current quota", "insufficient_quota")
    llm.script([quota])
    with closing(LLM(llm_settings(llm))) as client:
        with pytest.raises(LLMRequestError, match="out of quota") as caught:
            client.complete(MESSAGES, Rating)
    assert not isinstance(caught.value, LLMUnavailable)  # stops a weekly run: every PR would fail
    assert waits == [] and len(llm.bodies) == 1


def long_then_short(body: dict[str, Any]) -> str:
    """A reply far over any small output limit, unless the last message asks for a shorter one."""
    reply = json.loads(default_responder(body))
    if "截断" not in body["messages"][-1]["content"]:
        reply["verdict"] = "很长的说明。" * 200
    return json.dumps(reply, ensure_ascii=False)


def test_a_reply_cut_off_at_the_output_limit_is_asked_again_shorter(llm: LLMStandIn) -> None:
    llm.responder = long_then_short
    with closing(LLM(llm_settings(llm, output_tokens=60, response_mode="json_schema"))) as client:
        rating, usage = client.complete(MESSAGES, Rating)
    assert rating.verdict == json.loads(default_responder(llm.bodies[1]))["verdict"]
    assert usage.calls == 2
    first, second = llm.bodies
    assert first["max_tokens"] == 60
    correction = second["messages"][-1]
    assert correction["role"] == "user"
    assert "截断" in correction["content"] and "更短" in correction["content"]
    assert "60" in correction["content"]
    assert "没有通过校验" not in correction["content"]  # not the generic validation message


def test_a_reply_cut_off_twice_names_the_output_limit(llm: LLMStandIn) -> None:
    llm.responder = lambda body: json.dumps({"verdict": "很长的说明。" * 200, "score": 1})
    with closing(LLM(llm_settings(llm, output_tokens=60))) as client:
        with pytest.raises(LLMInvalidReply, match="cut off.*PRHUB_OUTPUT_TOKENS"):
            client.complete(MESSAGES, Rating)
    assert len(llm.bodies) == 2


def test_context_overflow_reports_what_the_endpoint_counted() -> None:
    with LLMStandIn(api_key=OPENAI_KEY, context_limit=20) as small:
        with closing(LLM(llm_settings(small, output_tokens=5))) as client:
            with pytest.raises(ContextTooLong) as caught:
                client.complete(MESSAGES, Rating)
    sent = message_tokens(MESSAGES, "o200k_base")
    exc = caught.value
    assert (exc.limit, exc.used, exc.sent, exc.reserved) == (20, sent, sent, 5)
    assert exc.smaller_budget(24_000) == int((20 - 5) * 0.95)
    assert len(small.bodies) == 1  # a 400 is not retried


def test_context_overflow_in_vllm_words_counts_the_reserved_reply(llm: LLMStandIn) -> None:
    message = (
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
        "(8000 in the messages, 1000 in the completion). Please reduce the length of the messages "
        "or completion."
    )
    llm.script([llm_error(400, message, None)])
    with closing(LLM(llm_settings(llm))) as client, pytest.raises(ContextTooLong) as caught:
        client.complete(MESSAGES, Rating)
    assert (caught.value.limit, caught.value.used, caught.value.reserved) == (8192, 8000, 1000)


def big_pr(files: int = 15, lines: int = 60) -> PullRequest:
    """A merged PR that fits one call of 24,000 tokens: about 19,000."""

    def patch(i: int) -> str:
        added = [f"+value_{i}_{j} = compute(alpha_{j}, beta_{j}, gamma={j})" for j in range(lines)]
        return "\n".join([f"@@ -0,0 +1,{lines} @@", *added])

    changes = [
        FileChange(path=f"rocket/module_{i}.py", status="added", additions=lines, patch=patch(i))
        for i in range(files)
    ]
    return PullRequest(
        repo=REPO,
        number=500,
        title="[trainer] feat: fifteen modules",
        body="Adds modules.",
        author="someone",
        url="https://github.com/acme/rocket/pull/500",
        created_at="2026-07-28T00:00:00Z",
        merged_at="2026-07-29T00:00:00Z",
        merged=True,
        merge_commit_sha="a" * 40,
        head_sha="b" * 40,
        additions=files * lines,
        changed_files=files,
        files=changes,
    )


def test_a_digest_refused_for_context_length_is_replanned_smaller_once(tmp_path: Path) -> None:
    pr = big_pr()
    with LLMStandIn(api_key=OPENAI_KEY, context_limit=12_000) as small:
        config = Settings(
            repo=REPO,
            openai_base_url=small.url,
            openai_api_key=OPENAI_KEY,
            output_tokens=1_000,
            store=tmp_path / "store.db",
        )
        with closing(LLM(config)) as client, Run(config, "summarize", llm=client) as run:
            digest, cached = run.cached_digest(pr)
            sent = [message_tokens(b["messages"], "o200k_base") for b in small.bodies]
            assert len(plan(pr, config).calls) == 1 and sent[0] > 12_000  # refused
            assert not cached and len(sent) > 1  # re-planned, in several calls, and answered
            assert all(n <= 12_000 - 1_000 for n in sent[1:])
            # Stored under the key of the settings asked for, so a rerun finds it.
            calls = len(small.bodies)
            again, cached = run.cached_digest(pr)
            assert cached and again == digest and len(small.bodies) == calls
        assert not small.errors


# A whole week with faults


def test_a_week_with_one_request_in_five_failing_loses_nothing(tmp_path: Path) -> None:
    data = FIXTURES / "github"
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github, LLMStandIn(api_key=OPENAI_KEY) as llm:
        clean, clean_retries = week_31(settings(github, llm, tmp_path / "clean"))
    with (
        GitHubStandIn(data, token=GITHUB_TOKEN, fault_rate=0.2, seed=26) as github,
        LLMStandIn(api_key=OPENAI_KEY, fault_rate=0.2, seed=31) as llm,
    ):
        faulty, retries = week_31(settings(github, llm, tmp_path / "faulty"))
        injected = len(github.faults) + len(llm.faults)
        assert github.faults and llm.faults  # faults did happen, on both services
        assert not github.errors and not llm.errors

    assert clean.failed == [] and clean_retries == 0
    assert faulty.failed == []
    assert faulty.facts == clean.facts and faulty.facts.prs == WEEK_31
    assert [d.number for d in faulty.digests] == WEEK_31
    assert [d.content for d in faulty.digests] == [d.content for d in clean.digests]
    assert faulty.narrative is not None and faulty.narrative == clean.narrative
    assert retries == injected  # each fault cost one retry, and no more


class OneFailingPR(LLMStandIn):
    """An LLM stand-in that answers 503 to every request about one PR."""

    failing: str | None = "PR #103"

    def answer(self, request: dict[str, Any]) -> Answer:
        body = request["body"] or {}
        if self.failing and self.failing in prompt_text(body):
            return llm_error(503, "The engine is currently overloaded", "server_error")
        return super().answer(request)


def test_a_pr_that_keeps_failing_is_listed_and_alone_redone(tmp_path: Path) -> None:
    data = FIXTURES / "github"
    with (
        GitHubStandIn(data, token=GITHUB_TOKEN, fault_rate=0.2, seed=3) as github,
        OneFailingPR(api_key=OPENAI_KEY, fault_rate=0.2, seed=5) as llm,
    ):
        config = settings(github, llm, tmp_path, retry_base_wait=0.001)
        report, _ = week_31(config)
        assert [f.number for f in report.failed] == [103]
        assert "LLM endpoint" in report.failed[0].error
        assert [d.number for d in report.digests] == [101, 102, 104, 105, 106]
        assert report.narrative is not None

        github.fault_rate = llm.fault_rate = 0.0
        llm.failing = None
        gh_before, llm_before = len(github.requests), len(llm.bodies)
        again, retries = week_31(config)
        assert again.failed == [] and [d.number for d in again.digests] == WEEK_31
        assert retries == 0
        assert digest_prs(llm.bodies[llm_before:]) == [103]  # only the PR that failed
        assert len(llm.bodies) - llm_before == 2  # its digest and the week's new narrative
        assert {r["path"] for r in github.requests[gh_before:]} == {
            "/repos/acme/rocket",
            "/search/issues",
        }
        assert not github.errors and not llm.errors
