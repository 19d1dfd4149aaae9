"""The store: guards against unusable files, migrations, run records, cache keys."""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prhub.cli import app
from prhub.errors import StoreError
from prhub.model import FailedPR, PullRequest
from prhub.store import db as store_module
from prhub.store.migrations import MIGRATIONS
from prhub.store.store import Store
from tests.factories import cli_env


def store_env(store: str) -> dict[str, str | None]:
    """Settings for a weekly run that must fail on the store before any request."""
    return cli_env("http://127.0.0.1:9", "http://127.0.0.1:9/v1", store)


def assert_store_error(store: Path, says: str) -> None:
    argv = ["weekly", "--repo", "acme/rocket", "--year", "2026", "--week", "31"]
    result = CliRunner().invoke(app, argv, env=store_env(str(store)))
    assert result.exit_code == 13, (result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit)
    errors = [line for line in result.stderr.splitlines() if line.startswith("prhub: error: ")]
    assert len(errors) == 1 and str(store) in errors[0] and says in errors[0], result.stderr
    assert "Traceback" not in result.output


def test_a_store_of_random_bytes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "prhub.db"
    path.write_bytes(random.Random(13).randbytes(8192))
    assert_store_error(path, "not a prhub store")
    assert path.read_bytes() == random.Random(13).randbytes(8192)  # left as it was


def test_a_store_that_is_a_directory_is_refused(tmp_path: Path) -> None:
    assert_store_error(tmp_path, "is a directory")


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The file read-only, for root too (which ignores file modes) through chattr +i."""
    path.chmod(0o444)
    immutable = os.geteuid() == 0
    if immutable and subprocess.run(["chattr", "+i", str(path)], check=False).returncode:
        path.chmod(0o644)
        pytest.skip("running as root without chattr +i: cannot make a file read-only")
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        path.chmod(0o644)


def test_a_read_only_store_is_refused_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "prhub.db"
    Store(path).close()
    with read_only(path):
        assert_store_error(path, "read-only")


def test_a_new_store_has_every_migration_and_a_runs_table(tmp_path: Path) -> None:
    with closing(Store(tmp_path / "prhub.db")) as store:
        version = store._db.execute("PRAGMA user_version").fetchone()[0]
        columns = [row[1] for row in store._db.execute("PRAGMA table_info(runs)")]
        tables = {row[0] for row in store._db.execute("SELECT name FROM sqlite_master")}
    assert version == len(MIGRATIONS)
    assert {"pulls", "digests", "narratives", "runs", "reports"} <= tables
    assert columns[:4] == ["id", "command", "started_at", "finished_at"]
    assert {"counts", "tokens_in", "tokens_out", "calls", "errors"} <= set(columns)


def test_a_failing_migration_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prhub.db"
    Store(path).close()
    broken = "CREATE TABLE half (a); CREATE TABLE broken ("
    monkeypatch.setattr(store_module, "MIGRATIONS", [*MIGRATIONS, broken])
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(path)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert db.execute("SELECT name FROM sqlite_master WHERE name = 'half'").fetchall() == []


def test_an_old_store_is_upgraded_keeping_its_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prhub.db"
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS[:2])
    with closing(Store(path)) as old:
        old._db.execute("INSERT INTO narratives VALUES ('k', '{}', 0, 'then')")
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS)
    with closing(Store(path)) as new:
        assert new.runs() == []
        assert new._db.execute("SELECT key FROM narratives").fetchall() == [("k",)]


def test_stores_opened_at_once_migrate_once(tmp_path: Path) -> None:
    path, errors, opened = tmp_path / "prhub.db", [], []

    def open_store() -> None:
        try:
            opened.append(Store(path))
        except StoreError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in opened:
        store.close()
    assert errors == [] and len(opened) == 8


def test_runs_record_their_start_end_counts_and_errors(tmp_path: Path) -> None:
    with closing(Store(tmp_path / "prhub.db")) as store:
        weekly_run = store.start_run("weekly")
        killed_run = store.start_run("summarize")
        store.finish_run(
            weekly_run,
            tokens_in=1200,
            tokens_out=300,
            calls=7,
            errors=[FailedPR(number=103, error="the LLM endpoint kept failing")],
            prs=6,
            cached=2,
            failed=1,
            retries=4,
        )
        latest, first = store.runs()
    assert (latest["id"], latest["command"], latest["finished_at"]) == (
        killed_run,
        "summarize",
        None,
    )
    assert first["id"] == weekly_run and first["finished_at"] >= first["started_at"]
    assert first["counts"] == {"prs": 6, "cached": 2, "failed": 1, "retries": 4}
    assert (first["tokens_in"], first["tokens_out"], first["calls"]) == (1200, 300, 7)
    assert first["errors"] == [{"number": 103, "error": "the LLM endpoint kept failing"}]


def test_a_stored_row_that_no_longer_validates_is_a_miss_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with closing(Store(tmp_path / "prhub.db")) as store:
        store._db.execute("INSERT INTO digests VALUES ('key', 'acme/rocket', 1, '{}', 'then')")
        store._db.execute(
            "INSERT INTO narratives (key, data, dropped, created_at) "
            "VALUES ('key', 'not json', 0, 'then')"
        )
        with caplog.at_level(logging.WARNING, logger="prhub"):
            assert store.digest("key") is None and store.narrative("key") is None
    said = [r.getMessage() for r in caplog.records]
    assert any("stored PRDigest no longer fits" in m and "made again" in m for m in said)
    assert any("stored WeeklyNarrative no longer fits" in m for m in said)


def test_a_lease_is_held_until_released_or_its_holder_is_gone(tmp_path: Path) -> None:
    import socket

    from prhub.store.db import holder_id

    with closing(Store(tmp_path / "prhub.db")) as store:
        me, other = holder_id(), holder_id()
        assert store.lease("k", me)
        assert store.lease("k", me)  # taking it again is fine
        assert not store.lease("k", other)  # this process is alive: the other waits
        store.release("k", me)
        assert store.lease("k", other)
        # A holder whose process died (SIGKILL) loses its lease at once.
        dead = f"{socket.gethostname()}:999999999:dead"
        store._db.execute("UPDATE leases SET holder = ? WHERE key = 'k'", (dead,))
        assert store.lease("k", me)
        # So does one whose lease ran out.
        assert store.lease("old", other, seconds=-1)
        assert store.lease("old", me)


def test_a_narrative_keeps_what_it_cost_and_when_it_was_first_made(tmp_path: Path) -> None:
    from prhub.model import Usage, WeeklyNarrative

    first = WeeklyNarrative(lead="导语", summary="摘要")
    cost = Usage(calls=2, tokens_in=900, tokens_out=120)
    with closing(Store(tmp_path / "prhub.db")) as store:
        saved = store.save_narrative("key", first, 1, cost)
        assert saved == store.narrative("key")
        assert (saved.narrative, saved.dropped, saved.usage) == (first, 1, cost)
        store._db.execute("UPDATE narratives SET created_at = '2026-08-03T01:02:00+00:00'")
        # The same text made again keeps its first record: time and cost.
        again = store.save_narrative("key", first, 1, Usage(calls=5))
        assert again.usage == cost and again.created_at.isoformat() == "2026-08-03T01:02:00+00:00"
        # Other text replaces it.
        other = store.save_narrative("key", first.model_copy(update={"summary": "新"}), 0, Usage())
        assert (other.usage, other.dropped) == (Usage(), 0)
        assert other.created_at != again.created_at
        assert other.narrative.summary == "新"


def test_attributes_are_kept_per_repository(tmp_path: Path) -> None:
    with closing(Store(tmp_path / "prhub.db")) as store:
        assert store.attributes("acme/rocket") is None  # never fetched
        store.save_attributes("acme/rocket", "")  # fetched: the repository has none
        store.save_attributes("acme/booster", "vendor/** linguist-vendored\n")
        store.save_attributes("acme/booster", "*.pb.go linguist-generated\n")  # the latest wins
    with closing(Store(tmp_path / "prhub.db")) as again:
        assert again.attributes("acme/rocket") == ""
        assert again.attributes("acme/booster") == "*.pb.go linguist-generated\n"
        assert again.attributes("acme/booster", max_age=60) is not None  # fetched just now
        again._db.execute("UPDATE attributes SET fetched_at = '2026-01-01T00:00:00+00:00'")
        assert again.attributes("acme/booster", max_age=60) is None  # too old to trust
        assert again.attributes("acme/booster") is not None  # yet kept for when GitHub fails


def test_prs_kept_before_discussion_was_read_are_fetched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prhub.db"
    before = next(i for i, m in enumerate(MIGRATIONS) if "CREATE TABLE attributes" in m)
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS[:before])
    pr = PullRequest(repo="o/r", number=1, title="t", author="a", created_at=datetime.now(UTC))
    with closing(Store(path)) as old:  # as the prhub of that schema wrote them
        row = ("o/r", 1, pr.version, "2026-07-27T00:00:00Z", pr.model_dump_json(), "then")
        old._db.execute("INSERT INTO pulls VALUES (?, ?, ?, ?, ?, ?)", row)
        old._db.execute("INSERT INTO digests VALUES ('key', 'o/r', 1, '{}', 'then')")
    monkeypatch.setattr(store_module, "MIGRATIONS", MIGRATIONS)
    with closing(Store(path)) as new:
        assert new.pull("o/r", 1) is None  # its discussion was never asked: a miss
        # What was made from it is kept.
        assert new._db.execute("SELECT key FROM digests").fetchall() == [("key",)]
        new.save_pull(pr, "2026-07-27T00:00:00Z")
    with closing(Store(path)) as reopened:
        assert reopened.pull("o/r", 1) is not None  # dropped once, not on every opening


def test_chunk_notes_are_kept_by_their_request_key(tmp_path):
    from prhub.model import ChunkNotes, Usage
    from prhub.store.store import Store

    store = Store(tmp_path / "s.db")
    try:
        assert store.chunk_notes("notes:a") is None
        notes = ChunkNotes(summary="第一段改了采样器。", risks=["没有测试。"])
        store.save_chunk_notes("notes:a", notes, Usage(calls=1, tokens_in=900))
        assert store.chunk_notes("notes:a") == (notes, Usage(calls=1, tokens_in=900))
    finally:
        store.close()


def test_a_site_reads_repositories_their_reports_newest_first_and_each_prs_latest_digest(
    tmp_path: Path,
) -> None:
    from datetime import timedelta

    from tests.factories import digest, report

    week = report()
    earlier = week.model_copy(
        update={
            "facts": week.facts.model_copy(
                update={
                    "start": week.facts.start - timedelta(days=7),
                    "end": week.facts.end - timedelta(days=7),
                }
            )
        }
    )
    old = digest(title="先前的标题")
    new = digest(title="后来的标题")
    new = new.model_copy(
        update={
            "meta": new.meta.model_copy(
                update={"cache_key": "other", "created_at": old.meta.created_at + timedelta(1)}
            )
        }
    )
    with closing(Store(tmp_path / "store.db")) as s:
        assert (s.repos(), s.reports("acme/rocket"), s.digests("acme/rocket")) == ([], [], [])
        for r in (week, earlier):
            s.save_report(r)
        for d in (new, old):
            s.save_digest(d)
        s.save_digest(old.model_copy(update={"repo": "acme/other", "number": 7}))
        assert s.repos() == ["acme/other", "acme/rocket"]
        assert [r.facts.start for r in s.reports("acme/rocket")] == [
            week.facts.start,
            earlier.facts.start,
        ]
        assert [d.content.title for d in s.digests("acme/rocket")] == ["后来的标题"]
        assert [d.number for d in s.digests("acme/other")] == [7]


def test_posts_are_kept_by_week_and_target_and_name_the_weeks_discussion(tmp_path):
    from prhub.store.records import Post
    from tests.factories import report

    r = report()
    f = r.facts
    with closing(Store(tmp_path / "s.db")) as store:
        assert store.post(f.repo, f.start, f.end, "acme/rocket") is None
        assert store.discussion_url(f.repo, f.start, f.end) is None
        hook = Post("webhook:slack", "webhook:0123456789abcdef", "", "", "h1")
        store.save_post(f.repo, f.start, f.end, hook)
        assert store.discussion_url(f.repo, f.start, f.end) is None  # a chat message has none
        page = "https://github.com/acme/rocket/discussions/7"
        made = Post("discussion", "acme/rocket", page, "D_kwDO1", "h2")
        store.save_post(f.repo, f.start, f.end, made)
        store.save_post(f.repo, f.start, f.end, made._replace(hash="h3"))  # updated in place
        assert store.post(f.repo, f.start, f.end, "acme/rocket") == made._replace(hash="h3")
        assert store.post(f.repo, f.start, f.end, hook.target) == hook
        assert store.discussion_url(f.repo, f.start, f.end) == page
        assert store.post(f.repo, f.end, f.end, "acme/rocket") is None  # another window


def test_a_store_restored_from_a_site_knows_the_discussion_its_report_names(tmp_path):
    from tests.factories import report

    r = report()
    page = "https://github.com/acme/rocket/discussions/9"
    linked = r.model_copy(update={"meta": r.meta.model_copy(update={"discussion_url": page})})
    with closing(Store(tmp_path / "s.db")) as store:
        store.restore([], [(linked, r.meta.narrative_key, None)])
        assert store.discussion_url(r.facts.repo, r.facts.start, r.facts.end) == page
