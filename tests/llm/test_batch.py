"""Batch mode: a run's digest requests go to the provider's Batch API (the stand-in's files
and batches endpoints), are collected by the next run, and make the report an online run makes."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prhub.llm.batch import Waiting, request_key
from prhub.llm.batch_api import jsonl
from tests.conftest import collect
from tests.factories import (
    GITHUB_TOKEN,
    OPENAI_KEY,
    assert_ok,
    big_prs,
    cli_env,
    digest_of,
    prhub,
    responder,
    settings,
)
from tests.standins import GitHubStandIn
from tests.standins.batch import BatchStandIn
from tests.standins.llm import prompt_text

WEEK = ("weekly", "--week", "31", "--year", "2026")
REPORT = Path("reports") / "acme" / "rocket" / "2026-W31.md"
PRS = 6  # merged in the fixture's week 31
WAITS = "rerun to collect (the report is not written yet)"


@pytest.fixture
def llm() -> Iterator[BatchStandIn]:
    """The LLM stand-in with the files and batches endpoints, accepting only OPENAI_KEY."""
    with BatchStandIn(api_key=OPENAI_KEY) as server:
        server.responder = responder
        yield server
        collect()  # a client left open now fails the test that leaked it
    assert not server.errors, server.errors


def masked(text: str) -> str:
    """A report without the minute it was made: two runs make it at different times."""
    return re.sub(r"生成于 [\d: -]+", "生成于 -", text)


def kinds(server: BatchStandIn) -> list[str]:
    """The reply schema each batch request asks for, batch after batch."""
    return [
        line["body"]["response_format"]["json_schema"]["name"]
        for lines in server.inputs.values()
        for line in lines
    ]


def asking(server: BatchStandIn, schema: str) -> list[dict[str, Any]]:
    """The chat completions answered online that ask for `schema`."""
    return [b for b in server.bodies if schema in json.dumps(b["response_format"])]


def test_a_batch_week_is_submitted_then_collected_into_the_online_report(
    env, llm, tmp_path, monkeypatch
):
    first = prhub(env, *WEEK, "--batch")
    assert_ok(first)
    [batch_id] = llm.batches
    assert first.stderr.splitlines()[-1] == (
        f"prhub: submitted {PRS} requests in batch {batch_id}; {WAITS}"
    )
    assert not (tmp_path / REPORT).exists()  # nothing published before every digest is in
    assert llm.bodies == []  # nothing went online
    assert kinds(llm) == ["DigestContent"] * PRS

    second = prhub(env, *WEEK, "--batch")
    assert_ok(second)
    assert f"prhub: wrote {REPORT}" in second.stderr
    assert len(llm.batches) == 1  # collected, nothing sent again
    batched = (tmp_path / REPORT).read_text()

    # The same week online, on another store, in another folder.
    online_dir = tmp_path / "online"
    online_dir.mkdir()
    monkeypatch.chdir(online_dir)
    asked = len(llm.bodies)
    online = prhub({**env, "PRHUB_STORE": str(tmp_path / "online.db")}, *WEEK)
    assert_ok(online)
    assert masked((online_dir / REPORT).read_text()) == masked(batched)
    # Each batch line's body is the request prhub sends online.
    sent_online = [b for b in llm.bodies[asked:] if "DigestContent" in json.dumps(b)]
    in_batch = [line["body"] for line in llm.inputs[batch_id]]
    assert sorted(json.dumps(b, sort_keys=True) for b in in_batch) == sorted(
        json.dumps(b, sort_keys=True) for b in sent_online
    )


def test_the_summary_prices_the_batch_at_its_rate(env, llm, tmp_path):
    (tmp_path / "prhub.toml").write_text(
        "[prices.gpt-4o-mini]\ninput = 1000.0\noutput = 3000.0\nbatch = 0.25\n"
    )
    assert_ok(prhub(env, *WEEK, "--batch"))
    asked = len(llm.online_usage)
    second = prhub(env, *WEEK, "--batch")
    assert_ok(second)
    summary = second.stderr.splitlines()[-1]
    assert f"(gpt-4o-mini, {PRS} calls at batch prices)" in summary
    in_batch = [line["response"]["body"]["usage"] for line in llm.answered]
    assert len(in_batch) == PRS
    [narrative] = llm.online_usage[asked:]  # online, once every digest is in

    def dollars(usage: dict[str, int], share: float = 1.0) -> float:
        return share * (1000 * usage["prompt_tokens"] + 3000 * usage["completion_tokens"]) / 1e6

    expected = sum(dollars(u, 0.25) for u in in_batch) + dollars(narrative)
    printed = float(re.search(r"≈ \$([\d.]+) \(", summary)[1])  # type: ignore[index]
    assert abs(printed - expected) <= 0.00005 + 1e-9  # the same sum, rounded once


def test_wait_polls_with_a_progress_line_and_publishes(env, llm, tmp_path):
    llm.polls = 2
    (tmp_path / "prhub.toml").write_text("batch_poll = 0.05\n")
    result = prhub(env, *WEEK, "--batch", "--wait")
    assert_ok(result)
    assert f"prhub: wrote {REPORT}" in result.stderr
    looks = [line for line in result.stderr.splitlines() if "batch requests answered" in line]
    assert looks == [f"prhub: batch requests answered {n}/{PRS}" for n in (0, 0, PRS)]


def test_wait_past_its_bound_exits_16_and_a_rerun_collects(env, llm, tmp_path):
    llm.polls = 10_000
    (tmp_path / "prhub.toml").write_text("batch_poll = 0.05\n")
    result = prhub({**env, "PRHUB_BATCH_WAIT": "0.2"}, *WEEK, "--batch", "--wait")
    assert result.exit_code == 16, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("prhub: error: waited 0.2 s (PRHUB_BATCH_WAIT) and batch ")
    assert last.endswith(f"in_progress (0/{PRS} answered); {WAITS}")
    assert not (tmp_path / REPORT).exists()
    llm.polls = 0
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists()
    assert len(llm.batches) == 1


def test_a_batch_still_running_is_said_and_not_sent_again(env, llm, tmp_path):
    llm.polls = 1
    assert_ok(prhub(env, *WEEK, "--batch"))
    [batch_id] = llm.batches
    again = prhub(env, *WEEK, "--batch")
    assert_ok(again)  # a cron job that finds its batch running has not failed
    assert again.stderr.splitlines()[-1] == (
        f"prhub: batch {batch_id} in_progress (0/{PRS} answered); {WAITS}"
    )
    assert len(llm.batches) == 1 and not (tmp_path / REPORT).exists()
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists()


@pytest.mark.parametrize(("fault", "ended"), [("expire", "expired"), ("fail", "completed")])
def test_expired_or_failed_requests_go_into_the_next_batch(
    env, llm, tmp_path, store, caplog, fault, ended
):
    setattr(llm, fault, 2)
    assert_ok(prhub(env, *WEEK, "--batch"))
    second = prhub(env, *WEEK, "--batch")
    assert_ok(second)
    first_id, second_id = llm.batches
    assert llm.batches[first_id]["status"] == ended
    assert f"batch {first_id} ended {ended} with 2 of {PRS} requests unanswered" in caplog.text
    assert second.stderr.splitlines()[-1] == (
        f"prhub: submitted 2 requests in batch {second_id}; {WAITS}"
    )
    lost = {line["custom_id"] for line in llm.inputs[first_id][:2]}
    assert {line["custom_id"] for line in llm.inputs[second_id]} == lost
    with sqlite3.connect(store) as db:  # what came back is kept, digested
        assert db.execute("SELECT count(*) FROM digests").fetchone()[0] == PRS - 2
    assert not (tmp_path / REPORT).exists()  # never a week with digests missing
    assert_ok(prhub(env, *WEEK, "--batch"))
    text = (tmp_path / REPORT).read_text()
    assert all(f"#{n}" in text for n in range(101, 107))  # no PR lost


def test_a_batch_the_endpoint_lost_is_sent_again(env, llm, tmp_path, caplog):
    assert_ok(prhub(env, *WEEK, "--batch"))
    [lost] = llm.batches
    del llm.batches[lost]
    again = prhub(env, *WEEK, "--batch")
    assert_ok(again)
    assert f"batch {lost} is unknown to " in caplog.text
    [new] = llm.batches
    assert (
        again.stderr.splitlines()[-1] == f"prhub: submitted {PRS} requests in batch {new}; {WAITS}"
    )
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists()


def test_corrections_go_online_unless_asked_into_a_batch(env, llm, tmp_path):
    def english_title(body: dict[str, Any]) -> str:
        reply = responder(body)
        if "PR #103" in prompt_text(body) and "DigestContent" in json.dumps(body):
            return json.dumps({**json.loads(reply), "title": "Fix the rollout scheduler"})
        return reply

    llm.responder = english_title
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert len(asking(llm, "ChineseTitle")) == 1  # online, in the collecting run
    assert kinds(llm) == ["DigestContent"] * PRS
    assert "Fix the rollout scheduler" not in (tmp_path / REPORT).read_text()

    (tmp_path / REPORT).unlink()
    other = {**env, "PRHUB_STORE": str(tmp_path / "other.db")}
    for _ in range(2):
        assert_ok(prhub(other, *WEEK, "--batch", "--batch-corrections", "batch"))
    assert not (tmp_path / REPORT).exists()
    assert kinds(llm)[-1] == "ChineseTitle"  # the correction is a batch of its own
    assert len(asking(llm, "ChineseTitle")) == 1
    assert_ok(prhub(other, *WEEK, "--batch", "--batch-corrections", "batch"))
    assert "Fix the rollout scheduler" not in (tmp_path / REPORT).read_text()


def test_a_map_reduce_pr_takes_two_rounds(tmp_path, llm):
    data = big_prs(tmp_path / "data", [101])
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github:
        config = settings(github, llm, tmp_path, input_budget=4000, batch=True)
        first = digest_of(101, config)
        assert isinstance(first, Waiting) and first.submitted > 1
        notes = kinds(llm)
        assert notes == ["ChunkNotes"] * first.submitted  # every part at once
        second = digest_of(101, config)
        assert isinstance(second, Waiting) and second.submitted == 1
        assert kinds(llm)[len(notes) :] == ["DigestContent"]
        made = digest_of(101, config)
    assert not isinstance(made, Waiting)
    assert "digest_notes" in made.meta.prompt
    assert made.meta.usage.calls == len(notes) + 1
    assert len(llm.batches) == 2 and llm.bodies == []


def test_a_rerun_the_store_serves_whole_needs_no_batch(env, llm):
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert_ok(prhub(env, *WEEK, "--batch"))
    paths = llm.paths()
    again = prhub({**env, "OPENAI_API_KEY": None}, *WEEK, "--batch")
    assert_ok(again)
    assert f"{PRS} PRs ({PRS} from the store, 0 failed) · 0 LLM calls" in again.stderr
    assert llm.paths() == paths


def test_batch_mode_from_the_config_file_and_the_environment(env, llm, tmp_path):
    (tmp_path / "prhub.toml").write_text("batch = true\n")
    assert prhub(env, *WEEK).stderr.splitlines()[-1].startswith(f"prhub: submitted {PRS} ")
    (tmp_path / "prhub.toml").unlink()
    other = {**env, "PRHUB_STORE": str(tmp_path / "other.db"), "PRHUB_BATCH": "true"}
    assert prhub(other, *WEEK).stderr.splitlines()[-1].startswith(f"prhub: submitted {PRS} ")
    assert len(llm.batches) == 2


def test_wait_without_batch_mode_is_refused(env, llm):
    result = prhub(env, *WEEK, "--wait")
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [
        "prhub: error: --wait waits for a batch: add --batch (or PRHUB_BATCH=true)"
    ]
    assert llm.requests == []


def test_summarize_in_batch_mode(env, llm):
    first = prhub(env, "summarize", "--pr", "101", "--batch")
    assert_ok(first)
    assert first.stdout == ""
    assert first.stderr.splitlines()[-1].startswith("prhub: submitted 1 request in batch ")
    second = prhub(env, "summarize", "--pr", "101", "--batch")
    assert_ok(second)
    assert "第 101 号改动" in second.stdout
    assert "1 call at batch prices" in second.stderr


# A server that misbehaves: one line of error, nothing lost.


def test_unreadable_output_lines_are_sent_again(env, llm, tmp_path, caplog):
    assert_ok(prhub(env, *WEEK, "--batch"))
    llm.garbage, llm.nameless = 1, 1
    second = prhub(env, *WEEK, "--batch")
    assert_ok(second)
    assert "2 lines of its output file are not answers prhub can read" in caplog.text
    # The garbage line held no answer; the nameless one held one for no request it named.
    assert f"with 1 of {PRS} requests unanswered" in caplog.text
    assert second.stderr.splitlines()[-1].startswith("prhub: submitted 1 request in batch ")
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists()


@pytest.mark.parametrize(
    ("path", "says"),
    [
        (r"^/v1/batches$", "creating the batch (POST /batches): the endpoint kept failing (500"),
        (r"^/v1/files$", "uploading the batch's requests (POST /files): the endpoint kept failing"),
    ],
)
def test_a_batch_api_that_keeps_failing_is_one_line_and_a_rerun_sends(
    env, llm, tmp_path, path, says
):
    failing = (500, {}, {"error": {"message": "The server had an error", "type": "server_error"}})
    llm.script_path(path, [failing] * 2)  # each attempt (PRHUB_MAX_ATTEMPTS)
    result = prhub(env, *WEEK, "--batch")
    assert result.exit_code == 9, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("prhub: error: ") and says in last
    assert last.endswith("rerun later (what was collected is kept)")
    assert "Traceback" not in result.output
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists()


def test_a_failing_look_at_the_batch_keeps_it_for_the_rerun(env, llm, tmp_path, store):
    assert_ok(prhub(env, *WEEK, "--batch"))
    [batch_id] = llm.batches
    llm.script_path(r"^/v1/batches/", [(503, {}, {"error": {"message": "overloaded"}})] * 2)
    result = prhub(env, *WEEK, "--batch")
    assert result.exit_code == 9, result.stderr
    assert f"reading batch {batch_id}" in result.stderr.splitlines()[-1]
    with sqlite3.connect(store) as db:
        kept = db.execute("SELECT count(*) FROM batch_requests WHERE batch_id = ?", (batch_id,))
        assert kept.fetchone()[0] == PRS
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists() and len(llm.batches) == 1


def test_an_endpoint_without_a_batch_api_is_one_line(github, store, tmp_path, monkeypatch):
    from tests.standins import LLMStandIn

    monkeypatch.chdir(tmp_path)
    with LLMStandIn(api_key=OPENAI_KEY) as plain:
        result = prhub(cli_env(github, plain, store, PRHUB_REPO="acme/rocket"), *WEEK, "--batch")
    assert result.exit_code == 10, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("prhub: error: uploading the batch's requests (POST /files): ")
    assert last.endswith("it has no OpenAI Batch API (/files and /batches); run without --batch")


# The pieces


def test_a_request_key_names_all_a_request_sends():
    body = {"model": "m", "messages": [{"role": "user", "content": "你好"}], "max_tokens": 9}
    assert request_key(body) == request_key(dict(reversed(body.items())))
    assert request_key(body) != request_key({**body, "max_tokens": 10})
    assert len(request_key(body)) <= 64  # OpenAI's bound on a custom_id


def test_the_input_file_is_one_post_a_line():
    body = {"model": "m", "messages": [{"role": "user", "content": "你好"}]}
    [line] = jsonl({"k": body}).decode().splitlines()
    assert json.loads(line) == {
        "custom_id": "k",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": body,
    }
    assert "你好" in line  # as sent online, not escaped


def test_a_refused_response_format_falls_back_as_online(github, store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with BatchStandIn(api_key=OPENAI_KEY, flavour="deepseek") as server:
        server.responder = responder
        env = cli_env(github, server, store, PRHUB_REPO="acme/rocket")
        assert_ok(prhub(env, *WEEK, "--batch"))
        second = prhub(env, *WEEK, "--batch")  # each answer: 400, no json_schema here
        assert second.stderr.splitlines()[-1].startswith(f"prhub: submitted {PRS} requests")
        # Learned from then on; the PRs planned before the switch are asked once more in the
        # prompt the learned mode writes, as an online run would.
        while not (tmp_path / REPORT).exists() and len(server.batches) < 4:
            assert_ok(prhub(env, *WEEK, "--batch"))
        formats = [
            {line["body"]["response_format"]["type"] for line in lines}
            for lines in server.inputs.values()
        ]
    assert (tmp_path / REPORT).exists()
    assert formats[0] == {"json_schema"} and set().union(*formats[1:]) == {"json_object"}


def test_refresh_asks_the_batch_anew(env, llm):
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert_ok(prhub(env, *WEEK, "--batch"))
    again = prhub(env, *WEEK, "--batch", "--refresh")
    assert again.stderr.splitlines()[-1].startswith(f"prhub: submitted {PRS} requests")
    assert len(llm.batches) == 2


def test_runs_and_dry_runs_price_batches_at_their_rate(env, llm):
    online, batch = (prhub(env, *WEEK, "--dry-run", *flag).stdout for flag in ([], ["--batch"]))
    price = lambda text: float(re.search(r"≈ \$([\d.]+) for the prompts", text).group(1))  # noqa: E731
    assert "(gpt-4o-mini, batch prices)" in batch
    assert price(batch) == pytest.approx(price(online) / 2, abs=1e-4)
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert_ok(prhub(env, *WEEK, "--batch"))
    listed = prhub(env, "runs")
    assert f"{PRS} calls at batch prices" in listed.stdout.splitlines()[0]


def test_a_batch_endpoint_answering_no_batch_is_one_line(env, llm, tmp_path):
    llm.script_path(r"^/v1/batches$", [(200, {"Content-Type": "text/html"}, b"<html>hi</html>")])
    result = prhub(env, *WEEK, "--batch")
    assert result.exit_code == 9, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.endswith("answered POST /batches with no batch; what was collected is kept")
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert_ok(prhub(env, *WEEK, "--batch"))
    assert (tmp_path / REPORT).exists()


def test_weekly_all_in_batch_mode_waits_then_completes_each_repository(env, github, llm, tmp_path):
    github.mirrors["acme/copy"] = "acme/rocket"
    (tmp_path / "prhub.toml").write_text('repos = ["acme/rocket", "acme/copy"]\n')
    all_env = {**env, "PRHUB_REPO": None}
    first = prhub(all_env, *WEEK, "--all", "--batch")
    assert_ok(first)
    rocket, copy = llm.batches  # one batch a repository, each kept under its repository
    lines = first.stderr.splitlines()
    assert f"prhub: acme/rocket: submitted {PRS} requests in batch {rocket}; {WAITS}" in lines
    assert f"prhub: acme/copy: submitted {PRS} requests in batch {copy}; {WAITS}" in lines
    assert "2 repositories: 0 complete, 2 waiting for a batch (acme/rocket, acme/copy)" in lines[-1]
    second = prhub(all_env, *WEEK, "--all", "--batch")
    assert_ok(second)
    assert "2 repositories: 2 complete (acme/rocket, acme/copy)" in second.stderr.splitlines()[-1]
    assert f"(gpt-4o-mini, {2 * PRS} calls at batch prices)" in second.stderr.splitlines()[-1]
    assert (tmp_path / REPORT).exists() and (tmp_path / "reports" / "index.md").exists()
    assert len(llm.batches) == 2
