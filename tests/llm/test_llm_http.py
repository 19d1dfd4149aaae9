"""LLM.complete against an endpoint that answers badly, through the real openai SDK: each malformed
answer is a one-line service error, never an unexpected exception; a deadline bounds each answer."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prhub import retry, transport
from prhub.cli import app
from prhub.errors import LLMInvalidReply, LLMUnavailable
from prhub.llm.llm import LLM
from prhub.llm.prompt import message_tokens
from prhub.model import Usage
from tests.factories import (
    FIXTURES,
    GITHUB_TOKEN,
    MESSAGES,
    OPENAI_KEY,
    VALID,
    MakeLLM,
    Rating,
    assert_fails,
    settings,
    summarize,
)
from tests.factories import cli_env as make_env
from tests.standins import GitHubStandIn, LLMStandIn

HTML = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>Sign in</body></html>"
BIG = 50 * 2**20


def completion(**changes: Any) -> dict[str, Any]:
    """A chat.completion as OpenAI sends it, carrying a valid reply; `changes` replace fields."""
    message = {"role": "assistant", "content": VALID, "refusal": None}
    body = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
    }
    return {**body, **changes}


def choice(**changes: Any) -> list[dict[str, Any]]:
    """The one choice of a completion with `changes` to it or, given message=..., its message."""
    first = completion()["choices"][0]
    return [{**first, **changes}]


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert message and "\n" not in message
    return message


JSON_TEXT = json.dumps(completion()).encode()
# (case, answer, what the message says, retried): transient answers are retried, the rest not.
ANSWERS: list[tuple[str, Any, str, bool]] = [
    ("an HTML page", (200, {"Content-Type": "text/html"}, HTML), "HTML page (text/html)", False),
    ("HTML typed as JSON", (200, {}, HTML), "HTML page", False),
    ("plain text", (200, {"Content-Type": "text/plain"}, b"OK"), "not JSON (text/plain)", False),
    ("broken JSON", (200, {}, b"{'choices': []}"), "not JSON", False),
    ("truncated JSON", (200, {}, JSON_TEXT[:-40]), "cut its answer short", True),
    ("truncated in a string", (200, {}, JSON_TEXT[:60]), "cut its answer short", True),
    ("a short Content-Length", (200, {"Content-Length": "30"}, completion()), "short", True),
    ("a long Content-Length", (200, {"Content-Length": "99999"}, completion()), "short", True),
    ("an empty body", (200, {}, b""), "empty answer", True),
    ("null", (200, {}, None), "malformed answer: null instead of an object", False),
    ("a list", (200, {}, [completion()]), "a list instead of an object", False),
    ("no choices", (200, {}, {"id": "x", "object": "chat.completion"}), "choices", False),
    ("choices: []", (200, {}, completion(choices=[])), "no choices", False),
    ("choices an object", (200, {}, completion(choices={"0": {}})), "choices: Input", False),
    ("choices of strings", (200, {}, completion(choices=["{}"])), "choices.0", False),
    ("message a string", (200, {}, completion(choices=choice(message=VALID))), "message", False),
    ("no message", (200, {}, completion(choices=[{"index": 0}])), "choices.0.message", False),
    (
        "content a number",
        (200, {}, completion(choices=choice(message={"content": 7}))),
        "choices.0.message.content",
        False,
    ),
    (
        "content a list",
        (200, {}, completion(choices=choice(message={"content": [{"text": VALID}]}))),
        "choices.0.message.content",
        False,
    ),
    ("usage a string", (200, {}, completion(usage="lots")), "usage", False),
    (
        "usage counts as text",
        (200, {}, completion(usage={"prompt_tokens": "20", "completion_tokens": 9})),
        "usage.prompt_tokens",
        False,
    ),
    (
        "an error answered 200",
        (200, {}, {"error": {"message": "upstream\ntimed out", "type": "server_error"}}),
        "answered 200 with an error: upstream timed out; rerun later",
        False,
    ),
    (
        "an event stream",
        (200, {"Content-Type": "text/event-stream"}, b"data: {}\n\ndata: [DONE]\n\n"),
        "event stream",
        False,
    ),
    ("an event stream typed as JSON", (200, {}, b"data: {}\n\n"), "event stream", False),
    ("a 204", (204, {}, b""), "answered 204, not 200", False),
    ("a 302 without Location", (302, {}, {"message": "Found"}), "without a Location", False),
    ("gzip that is not", (200, {"Content-Encoding": "gzip"}, b"plain"), "garbled", False),
    ("50 MB", (200, {}, b" " * BIG), "over 8 MB", False),
    ("50 MB chunked", (200, {"Transfer-Encoding": "chunked"}, b" " * BIG), "over 8 MB", False),
]


@pytest.mark.parametrize(
    ("case", "answer", "says", "retried"), ANSWERS, ids=[a[0] for a in ANSWERS]
)
def test_a_malformed_answer_is_a_one_line_service_error(
    case: str, answer: Any, says: str, retried: bool, make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    llm.script([answer] * 3)
    client = make_llm(max_attempts=3)
    with pytest.raises(LLMUnavailable) as caught:
        client.complete(MESSAGES, Rating)
    assert caught.value.exit_code == 9
    message = one_line(caught)
    assert says in message and llm.url in message
    assert len(llm.bodies) == (3 if retried else 1)
    assert client.stop_token is not None and client.stop_token.retries == (2 if retried else 0)


def test_a_transient_fault_then_a_good_answer_succeeds(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([(200, {}, JSON_TEXT[:-10])])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert isinstance(rating, Rating) and usage.calls == 1 and len(llm.bodies) == 2


@pytest.mark.parametrize("kind", ["text/html", "text/plain", "text/event-stream", None])
def test_a_completion_is_read_whatever_its_type_says(
    kind: str | None, make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    headers = {"Content-Type": kind} if kind else {"Content-Type": ""}
    llm.script([(200, headers, completion())])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert rating == Rating(verdict="可跳过", score=2) and usage.tokens_in == 20


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": None},
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
        {"role": "assistant"},
    ],
)
def test_an_empty_reply_takes_the_corrective_path(
    message: dict[str, Any], make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    llm.script([(200, {}, completion(choices=choice(message=message)))])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert isinstance(rating, Rating) and usage.calls == 2
    assert "没有通过校验" in llm.bodies[1]["messages"][-1]["content"]


def test_empty_replies_twice_fail_validation(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    empty = (200, {}, completion(choices=choice(message={"content": None})))
    llm.script([empty, empty, empty])  # the correction came back the same: asked afresh too
    with pytest.raises(LLMInvalidReply, match="reply was empty") as caught:
        make_llm().complete(MESSAGES, Rating)
    assert caught.value.exit_code == 11 and len(llm.bodies) == 3


def test_usage_left_out_or_partial_is_counted_locally(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script(
        [(200, {}, completion(usage={"prompt_tokens": 20})), (200, {}, completion(usage=None))]
    )
    client = make_llm()
    _, partial = client.complete(MESSAGES, Rating)
    _, missing = client.complete(MESSAGES, Rating)
    assert partial.tokens_in == 20 and partial.tokens_out > 0
    assert missing.tokens_in > 0 and missing.tokens_out == partial.tokens_out


# Redirects: followed within the endpoint's origin, refused elsewhere


@pytest.fixture
def elsewhere() -> Iterator[LLMStandIn]:
    """A second endpoint on another port, so another host: it must get nothing."""
    with LLMStandIn() as server:
        yield server
    assert not server.errors, server.errors


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_host_is_refused(
    status: int, make_llm: MakeLLM, llm: LLMStandIn, elsewhere: LLMStandIn
) -> None:
    location = f"{elsewhere.url}/chat/completions?access_token=hunter2"
    llm.script([(status, {"Location": location}, {"message": "Moved"})])
    with pytest.raises(LLMUnavailable) as caught:
        make_llm().complete(MESSAGES, Rating)
    message = one_line(caught)
    assert "another host" in message and elsewhere.url.rsplit("/", 1)[0] in message
    assert "hunter2" not in message
    assert elsewhere.requests == [] and len(llm.bodies) == 1


def test_a_redirect_on_the_same_host_is_followed(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([(307, {"Location": "/v1/chat/completions"}, {"message": "Temporary Redirect"})])
    rating, _ = make_llm().complete(MESSAGES, Rating)
    assert isinstance(rating, Rating) and len(llm.bodies) == 2


def test_a_redirect_loop_stops(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([(307, {"Location": f"{llm.url}/chat/completions"}, {})] * 30)
    with pytest.raises(LLMUnavailable, match="in a loop"):
        make_llm().complete(MESSAGES, Rating)
    assert len(llm.bodies) == transport.MAX_REDIRECTS + 1


# Deadlines: PRHUB_TIMEOUT bounds the whole answer, not each read


def test_a_trickling_answer_ends_at_the_deadline() -> None:
    with LLMStandIn(api_key=OPENAI_KEY, trickle=0.5) as server:
        client = LLM(settings(server, timeout=3, max_attempts=2))
        started = time.monotonic()
        try:
            with pytest.raises(LLMUnavailable) as caught:
                client.complete(MESSAGES, Rating)
        finally:
            client.close()
        spent = time.monotonic() - started
        assert len(server.bodies) == 2
    message = one_line(caught)
    assert "PRHUB_TIMEOUT" in message and "within 3 s" in message and caught.value.exit_code == 9
    assert 6 <= spent < 15  # two attempts of 3 s each, and a short pause


def test_a_silence_after_the_headers_ends_at_the_deadline(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    llm.script([("trickle", 30, 10**6)])  # headers at once, then the body after 30 s
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="PRHUB_TIMEOUT"):
        make_llm(timeout=1, max_attempts=1).complete(MESSAGES, Rating)
    assert time.monotonic() - started < 5


def test_a_read_still_waiting_at_the_deadline_is_cut_there(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    # The second byte is due at 5 s, in a read that began at 2.5 s with a timeout of 3 s.
    llm.script([("trickle", 2.5, 1)])
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="within 3 s"):
        make_llm(timeout=3, max_attempts=1).complete(MESSAGES, Rating)
    assert time.monotonic() - started < 4


def test_a_timeout_longer_than_the_attempts_budget_still_gets_its_answer(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    # A local model takes 1.5 s; PRHUB_TIMEOUT was raised to 3 s, past a retry budget of 0.5 s.
    llm.script([("sleep", 1.5)])
    content, usage = make_llm(timeout=3, max_attempts=1, max_retry_time=0.5).complete(
        MESSAGES, Rating
    )
    assert usage.calls == 1


def test_waiting_for_a_jobs_slot_does_not_count_against_the_deadline(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    # Each answer takes about 1.5 s to arrive; the second waits that long for the one slot.
    llm.script([("trickle", 0.1, 50)] * 2)
    client = make_llm(timeout=2.5, max_attempts=1, jobs=1)
    results: list[Usage] = []
    threads = [
        threading.Thread(target=lambda: results.append(client.complete(MESSAGES, Rating)[1]))
        for _ in range(2)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2 and time.monotonic() - started > 2.5


# The command line


def test_summarize_exits_9_for_an_html_answer(tmp_path: Path, github: GitHubStandIn) -> None:
    with LLMStandIn(api_key=OPENAI_KEY) as server:
        server.script([(200, {"Content-Type": "text/html"}, HTML)] * 3)
        result = summarize(make_env(github, server, tmp_path / "store.db"))
    assert_fails(result, 9, "sent an HTML page (text/html), not a chat completion")


@pytest.mark.slow
def test_weekly_against_a_trickling_llm_fails_in_time(
    tmp_path: Path, github: GitHubStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with LLMStandIn(api_key=OPENAI_KEY, trickle=0.5) as server:
        env = make_env(github, server, tmp_path / "store.db", PRHUB_TIMEOUT="3")
        started = time.monotonic()
        args = ["weekly", "--repo", "acme/rocket", "--week", "31", "--year", "2026"]
        result = CliRunner().invoke(app, args, env=env)
        spent = time.monotonic() - started
    assert result.exit_code == 9, (result.stderr, result.exception)
    last = result.stderr.splitlines()[-1]
    assert last.startswith("prhub: error: ") and "PRHUB_TIMEOUT" in last
    assert spent < 90
    assert not (tmp_path / "reports").exists()


# Secrets in URLs


def test_a_verbose_run_leaks_no_secret_of_its_urls(tmp_path: Path) -> None:
    password, key = "s3cretpass", "k3yvalue"

    def secret(url: str) -> str:
        return url.replace("http://", f"http://user:{password}@") + f"?api-key={key}"

    # The LLM stand-in takes any key: httpx sends a URL's login as Basic credentials.
    with (
        GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN) as github,
        LLMStandIn(flavour="deepseek") as llm,
    ):
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PRHUB_CACHE_DIR": str(tmp_path / "cache"),
            "GITHUB_TOKEN": GITHUB_TOKEN,
            "OPENAI_API_KEY": OPENAI_KEY,
            "OPENAI_BASE_URL": secret(llm.url),
            "GITHUB_API_URL": secret(github.url),
            "PRHUB_STORE": str(tmp_path / "store.db"),
            "PRHUB_RETRY_BASE_WAIT": "0.01",
            "OPENAI_LOG": "debug",  # the SDK's own request logs too
        }
        args = ["weekly", "--repo", "acme/rocket", "--week", "31", "--year", "2026", "--verbose"]
        done = subprocess.run(
            [sys.executable, "-m", "prhub", *args, "--out", "week.md"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        queries = [r["query"] for r in llm.requests]
    assert done.returncode == 0, done.stderr
    assert all(q == {"api-key": [key]} for q in queries) and queries  # sent, as given
    assert "HTTP Request: POST http://127.0.0.1:" in done.stderr  # the lines are there, masked
    assert "api-key=***" in done.stderr and "switched to json_object" in done.stderr
    artifacts = [done.stdout, done.stderr]
    artifacts += [
        p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()
    ]
    assert (tmp_path / "week.md").is_file() and (tmp_path / "store.db").is_file()
    for text in artifacts:
        assert password not in text and key not in text


# A reply no model held to max_tokens could write: refused before anything reads or records it


def test_a_reply_far_longer_than_max_tokens_allows_is_refused(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    content = json.dumps({"score": 1, "why": "x" * 1_000_000})
    message = {"role": "assistant", "content": content}
    llm.script([(200, {}, completion(choices=choice(message=message)))])
    client = make_llm(output_tokens=4000)
    with pytest.raises(LLMUnavailable) as caught:
        client.complete(MESSAGES, Rating)
    assert "max_tokens 4000" in one_line(caught)
    assert f"{len(content)} characters" in one_line(caught)
    assert client.spent.tokens_out == 0


def test_usage_far_over_max_tokens_is_refused_not_recorded(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    usage = {"prompt_tokens": 20, "completion_tokens": 1_750_000, "total_tokens": 1_750_020}
    llm.script([(200, {}, completion(usage=usage))])
    client = make_llm(output_tokens=4000)
    with pytest.raises(LLMUnavailable) as caught:
        client.complete(MESSAGES, Rating)
    assert "1750000 output tokens" in one_line(caught)
    assert client.spent.tokens_out == 0


def test_reasoning_tokens_beyond_max_tokens_are_no_reason_to_refuse(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    usage = {
        "prompt_tokens": 20,
        "completion_tokens": 20_009,
        "completion_tokens_details": {"reasoning_tokens": 20_000},
    }
    llm.script([(200, {}, completion(usage=usage))])
    client = make_llm(output_tokens=4000)
    client.complete(MESSAGES, Rating)
    assert client.spent.tokens_out == 20_009


def test_a_hanging_endpoint_is_given_up_within_the_time_all_attempts_may_take() -> None:
    # Attempts of 1 s each: the third starts at about 2 s, and must end at 2.5 s, not 3 s.
    with LLMStandIn(api_key=OPENAI_KEY, latency=30) as server:
        config = settings(
            server, timeout=1, max_attempts=5, max_retry_time=2.5, retry_base_wait=0.01
        )
        client = LLM(config, stop=retry.StopToken())
        message_tokens(MESSAGES, config.encoding)  # the tokenizer loaded before the clock starts
        started = time.monotonic()
        try:
            with pytest.raises(LLMUnavailable):
                client.complete(MESSAGES, Rating)
        finally:
            client.close()
        spent = time.monotonic() - started
        assert len(server.bodies) == 3
    assert 2.3 < spent < 2.8


def test_calls_waiting_behind_a_probe_the_endpoint_never_answered_fail_with_it() -> None:
    # The response mode is not known yet, so one call probes while the others wait for it.
    with LLMStandIn(api_key=OPENAI_KEY, latency=30) as server:
        config = settings(server, timeout=0.5, max_attempts=2, retry_base_wait=0.01, jobs=4)
        client = LLM(config, stop=retry.StopToken())
        message_tokens(MESSAGES, config.encoding)  # the tokenizer loaded before the clock starts
        failures: list[BaseException] = []

        def call() -> None:
            try:
                client.complete(MESSAGES, Rating)
            except LLMUnavailable as exc:
                failures.append(exc)

        threads = [threading.Thread(target=call) for _ in range(4)]
        started = time.monotonic()
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            client.close()
        spent = time.monotonic() - started
        assert len(server.bodies) == 2  # the probe's two attempts, and no one else's
    assert len(failures) == 4 and all("within 0.5 s" in str(f) for f in failures)
    assert spent < 2.0
