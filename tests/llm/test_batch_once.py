"""Every paid batch request made at most once: a lost answer, a timeout or an interrupt at any
point of a submission is followed by a look at what the provider holds, never by a second
batch; an answer that cannot be used is asked again, never reused."""

from __future__ import annotations

import gc
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from prhub.errors import Interrupted
from prhub.llm.batch import Waiting
from prhub.run.book import BatchBook
from tests.factories import OPENAI_KEY, assert_ok, prhub, process_env, responder, settings, week_of
from tests.standins.batch import BatchStandIn

WEEK = ("weekly", "--week", "31", "--year", "2026", "--batch")
REPORT = Path("reports") / "acme" / "rocket" / "2026-W31.md"
PRS = 6  # merged in the fixture's week 31


@pytest.fixture
def llm() -> Iterator[BatchStandIn]:
    """The LLM stand-in with the files and batches endpoints, accepting only OPENAI_KEY."""
    with BatchStandIn(api_key=OPENAI_KEY) as server:
        server.responder = responder
        server.held_for = 1.0  # past the 0.3 s timeout of the runs that lose an answer
        yield server
        gc.collect()
    assert not server.errors, server.errors


def made(server: BatchStandIn) -> tuple[int, int]:
    """Batches and uploads the provider made."""
    return len(server.batches), len(server.names)


# A lost answer: the provider made the batch (or the upload), the client never heard.


@pytest.mark.parametrize(
    ("request_", "kind"),
    [
        ("POST /v1/batches", "500"),
        ("POST /v1/batches", "hold"),
        ("POST /v1/files", "500"),
        ("POST /v1/files", "hold"),
    ],
)
def test_a_lost_answer_over_four_runs_makes_one_batch(env, llm, tmp_path, caplog, request_, kind):
    llm.lose(request_, *[kind] * 20)  # every answer to it, in every run
    env = {**env, "PRHUB_MAX_ATTEMPTS": "5", "PRHUB_TIMEOUT": "0.3"}
    results = [prhub(env, *WEEK) for _ in range(4)]
    assert made(llm) == (1, 1), [r.exit_code for r in results]
    for result in results:
        assert_ok(result)
    [batch] = llm.batches.values()
    assert batch["metadata"]["prhub_requests"]  # it carries its identity
    assert (tmp_path / REPORT).exists()
    if request_ == "POST /v1/batches":
        assert "was made by an attempt whose answer was lost: it is kept" in caplog.text


def test_a_rerun_after_a_failed_send_looks_before_it_sends(env, llm, tmp_path, store):
    # Every attempt of the first run loses its answer: the run fails, the send is kept.
    llm.lose("POST /v1/batches", "500", "500")
    llm.script_path(r"^/v1/batches$", [])
    first = prhub({**env, "PRHUB_MAX_ATTEMPTS": "1"}, *WEEK)
    assert first.exit_code == 9, first.stderr
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM batch_sends").fetchone()[0] == 1
    [batch_id] = llm.batches
    again = prhub(env, *WEEK)
    assert_ok(again)
    assert again.stderr.splitlines()[-1].startswith(f"prhub: batch {batch_id} ")
    assert made(llm) == (1, 1)
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM batch_sends").fetchone()[0] == 0
    assert_ok(prhub(env, *WEEK))
    assert (tmp_path / REPORT).exists()


# An interrupt at any point of a submission, in process: at most one batch across the rerun.


def interrupt() -> None:
    raise Interrupted(signal.SIGINT)


def before(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        interrupt()

    return wrapped


def after(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        fn(*args, **kwargs)
        interrupt()

    return wrapped


def signalled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn`, with a real SIGINT arriving while it runs."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        signal.raise_signal(signal.SIGINT)
        return fn(*args, **kwargs)

    return wrapped


POINTS = {
    "before the upload": (openai.resources.Files, "create", before),
    "upload made, its answer lost": (openai.resources.Files, "create", after),
    "upload answered, before it is kept": (BatchBook, "uploaded", before),
    "before the batch is made": (openai.resources.Batches, "create", before),
    "batch made, its answer lost": (openai.resources.Batches, "create", after),
    "batch answered, a signal while it is recorded": (BatchBook, "submitted", signalled),
    "batch recorded": (BatchBook, "submitted", after),
}


@pytest.fixture
def sigint_interrupts() -> Iterator[None]:
    """SIGINT raising Interrupted, as the CLI's handler does."""

    def handler(signum: int, frame: object) -> None:
        raise Interrupted(signum)

    old = signal.signal(signal.SIGINT, handler)
    yield
    signal.signal(signal.SIGINT, old)


@pytest.mark.parametrize("point", POINTS)
def test_an_interrupt_at_any_point_of_a_submission_makes_at_most_one_batch(
    github, llm, tmp_path, monkeypatch, sigint_interrupts, point
):
    config = settings(github, llm, tmp_path, batch=True)
    owner, name, wrap = POINTS[point]
    with monkeypatch.context() as patched:
        patched.setattr(owner, name, wrap(getattr(owner, name)))
        with pytest.raises(Interrupted):
            week_of(config, year=2026, week=31)
    if point == "batch answered, a signal while it is recorded":  # held until the record
        with sqlite3.connect(config.store) as db:  # type: ignore[arg-type]
            assert db.execute("SELECT count(*) FROM batches").fetchone()[0] == 1
    runs = 0
    while isinstance(result := week_of(config, year=2026, week=31), Waiting):
        runs += 1
        assert runs < 4, result.line()
    assert result.facts.pr_count == PRS and not result.failed
    batches, uploads = made(llm)
    assert batches <= 1 and uploads <= 1, (batches, uploads)


@pytest.mark.slow
def test_sigterm_while_the_batch_is_made_is_followed_by_no_second_batch(env, llm, tmp_path):
    """A real `prhub weekly --batch` killed by SIGTERM once the provider made its batch and
    before its answer came: the rerun finds that batch."""
    llm.lose("POST /v1/batches", "hold")
    llm.held_for = 30.0
    with subprocess.Popen(
        [sys.executable, "-m", "prhub", *WEEK],
        env=process_env(env),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert llm.acted.wait(60), "the batch was never made"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted" in err
    llm.held_for = 0.0
    again = prhub(env, *WEEK)
    assert_ok(again)
    assert made(llm) == (1, 1)
    assert_ok(prhub(env, *WEEK))
    assert (tmp_path / REPORT).exists() and made(llm) == (1, 1)


# Answers that cannot be used, and output that cannot be trusted.


def test_a_refused_answer_is_asked_again_in_the_next_batch_not_reused(env, llm, tmp_path):
    llm.refuse = 1
    assert_ok(prhub(env, *WEEK))
    [first] = llm.batches
    refused = llm.inputs[first][0]["custom_id"]
    collecting = prhub(env, *WEEK)  # the refusal ends this run as it would online
    assert collecting.exit_code == 10, collecting.stderr
    assert collecting.stderr.splitlines()[-1] == (
        "prhub: error: the LLM endpoint refused the request (400: Your request was rejected as "
        "a result of our safety system.)"
    )
    again = prhub(env, *WEEK)  # the endpoint answers now: the request goes out again
    assert_ok(again)
    assert again.stderr.splitlines()[-1].startswith("prhub: submitted 1 request in batch ")
    second = list(llm.batches)[-1]
    assert [line["custom_id"] for line in llm.inputs[second]] == [refused]
    assert_ok(prhub(env, *WEEK))
    text = (tmp_path / REPORT).read_text()
    assert all(f"#{n}" in text for n in range(101, 107)) and "未能生成" not in text


def test_two_output_lines_for_one_request_are_a_loud_error(env, llm, tmp_path, store):
    assert_ok(prhub(env, *WEEK))
    [first] = llm.batches
    llm.doubled = 1
    loud = prhub(env, *WEEK)
    assert loud.exit_code == 9, loud.stderr
    last = loud.stderr.splitlines()[-1]
    doubled = llm.inputs[first][0]["custom_id"]
    assert last.startswith(f"prhub: error: batch {first}'s files answer 1 request on more ")
    assert f"(request {doubled} on 2)" in last
    with sqlite3.connect(store) as db:  # the others are kept, the doubled one is not
        kept = db.execute("SELECT key FROM batch_requests WHERE status IS NOT NULL").fetchall()
    assert len(kept) == PRS - 1 and (doubled,) not in kept
    again = prhub(env, *WEEK)
    assert_ok(again)
    second = list(llm.batches)[-1]
    assert [line["custom_id"] for line in llm.inputs[second]] == [doubled]
    assert_ok(prhub(env, *WEEK))
    assert (tmp_path / REPORT).exists()


# The look itself: every page of what the provider lists, by identity or by the upload's name.


def test_the_look_follows_every_page_to_the_batch_and_the_file_made(llm, monkeypatch):
    from prhub.llm import batch_api
    from prhub.llm.batch_api import Sending, file_name, find, find_file

    monkeypatch.setattr(batch_api, "PAGE", 10)  # pages of ten, as a busy account's of a hundred
    client = openai.OpenAI(api_key=OPENAI_KEY, base_url=llm.url, max_retries=0)
    ours = Sending("a" * 32, "run1", 0.0)
    data = b'{"custom_id": "k", "method": "POST", "url": "/v1/chat/completions", "body": {}}\n'
    mine = client.files.create(file=(file_name(ours.ident), data), purpose="batch")
    made = client.batches.create(
        input_file_id=mine.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"prhub_requests": ours.ident, "prhub_run": "run1"},
    )
    for n in range(23):  # newer than ours: it is on the third page
        other = client.files.create(file=(f"other-{n}.jsonl", data), purpose="batch")
        client.batches.create(
            input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
    looked = len(llm.requests)
    assert find(client, ours) == made.id
    assert find_file(client, ours, len(data)) == mine.id
    assert find_file(client, ours, len(data) + 1) is None  # another file of that name
    assert find(client, Sending("b" * 32, "run2", 0.0)) is None
    asked = [r["path"] for r in llm.requests[looked:]]
    assert asked.count("/v1/batches") == 3 + 3 and asked.count("/v1/files") == 3 + 3
    client.close()
