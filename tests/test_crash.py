"""Crash safety: `prhub weekly` killed at random points loses no finished work; the store's guards.

Leftover temporary report files are accepted, not cleaned: a SIGKILL between writing the
temporary file and renaming it leaves `.<name>.<random>.tmp` beside the report. It never replaces
the report, and deleting other runs' temporary files could break a run writing at the same time.
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prhub import store as store_module
from prhub.cli import app
from prhub.config import ENV
from prhub.errors import StoreError
from prhub.model import FailedPR
from prhub.store import MIGRATIONS, Store
from tests.conftest import GITHUB_TOKEN, OPENAI_KEY
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import prompt_text

WEEK_31 = {101, 102, 103, 104, 105, 106}
KILLS = 5
TEMP = re.compile(r"^\.report\.md\..+\.tmp$")


def env(github_url: str, llm_url: str, store: Path) -> dict[str, str]:
    """This process's environment without prhub settings or config file, then the run's own."""
    values = {k: v for k, v in os.environ.items() if k not in {*ENV.values(), "PRHUB_CONFIG"}}
    values.update(
        GITHUB_TOKEN=GITHUB_TOKEN,
        OPENAI_API_KEY=OPENAI_KEY,
        GITHUB_API_URL=github_url,
        OPENAI_BASE_URL=llm_url,
        PRHUB_STORE=str(store),
        PRHUB_JOBS="2",
        PRHUB_RETRY_BASE_WAIT="0.01",
    )
    return values


def weekly(folder: Path, github: GitHubStandIn, llm: LLMStandIn) -> subprocess.Popen[bytes]:
    """`prhub weekly` for acme/rocket 2026 week 31 in its own process, writing folder/report.md."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = ["weekly", "--repo", "acme/rocket", "--year", "2026", "--week", "31"]
    return subprocess.Popen(
        [sys.executable, "-m", "prhub", *argv, "--out", str(folder / "report.md")],
        env=env(github.url, llm.url, folder / "store.db"),
        cwd=folder,  # no prhub.toml or pyproject.toml of the developer's is picked up
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finish(child: subprocess.Popen[bytes]) -> None:
    """Waits for a run that must succeed."""
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 0, stderr.decode()


def complete(report: str) -> bool:
    """Whether a weekly report is whole: its title first and its footer last."""
    lines = report.rstrip("\n").splitlines()
    footer = re.compile(r"<sub>weekly@.*</sub>$")
    return bool(lines and lines[0].startswith("# ") and footer.match(lines[-1]))


def report_prs(report: str) -> set[int]:
    return {int(n) for n in re.findall(r"/pull/(\d+)\)", report)}


def digest_requests(bodies: list[dict[str, Any]]) -> list[int]:
    """The PR numbers the digest requests among `bodies` were about, in order."""
    found = []
    for body in bodies:
        name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if name in ("DigestContent", "ChunkNotes"):
            found += [n for n in WEEK_31 if f"PR #{n}" in prompt_text(body)]
    return found


def stored_digests(path: Path) -> set[int]:
    """The PRs with a digest in the store, after checking the file's integrity."""
    if not path.exists():
        return set()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "digests" not in tables:  # killed before the first migration committed
            assert version == 0
            return set()
        return {row[0] for row in db.execute("SELECT number FROM digests")}


def test_a_weekly_run_killed_anywhere_loses_no_finished_digest(
    github: GitHubStandIn, tmp_path: Path
) -> None:
    with LLMStandIn(api_key=OPENAI_KEY, latency=0.25) as llm:
        started = time.monotonic()
        finish(weekly(tmp_path / "reference", github, llm))
        whole = time.monotonic() - started
        assert report_prs((tmp_path / "reference" / "report.md").read_text()) == WEEK_31

        rng = random.Random(20260731)
        killed = []
        for run in range(KILLS):
            folder = tmp_path / f"run{run}"
            before = len(llm.bodies)
            child = weekly(folder, github, llm)
            try:
                child.communicate(timeout=rng.uniform(0.05, 1.0) * whole)
            except subprocess.TimeoutExpired:
                child.kill()  # SIGKILL: no handler, no cleanup
                child.communicate()
            killed.append(child.returncode == -9)
            asked = digest_requests(llm.bodies[before:])

            done = stored_digests(folder / "store.db")
            assert done <= set(asked)
            report = folder / "report.md"
            assert not report.exists() or complete(report.read_text())
            others = {p.name for p in folder.iterdir()} - {"report.md"}
            others -= {"store.db", "store.db-wal", "store.db-shm"}
            assert all(TEMP.match(name) for name in others), others

            before = len(llm.bodies)
            finish(weekly(folder, github, llm))
            assert complete(report.read_text()) and report_prs(report.read_text()) == WEEK_31
            redone = digest_requests(llm.bodies[before:])
            assert sorted(redone) == sorted(WEEK_31 - done)  # each missing PR once, no other
        assert any(killed)
        assert not llm.errors


def test_a_leftover_temporary_file_never_becomes_the_report(
    github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path
) -> None:
    tmp_path.mkdir(exist_ok=True)
    stale = tmp_path / ".report.md.k1ll3d.tmp"
    stale.write_text("# acme/rocket 周报（写到一半")
    finish(weekly(tmp_path, github, llm))
    assert complete((tmp_path / "report.md").read_text())
    assert stale.read_text() == "# acme/rocket 周报（写到一半"  # left alone: it may be a live run's


# The store's guards


def store_env(store: str) -> dict[str, str | None]:
    """Settings for a weekly run that must fail on the store before any request."""
    values: dict[str, str | None] = dict.fromkeys([*ENV.values(), "PRHUB_CONFIG"])
    values.update(
        GITHUB_TOKEN=GITHUB_TOKEN,
        OPENAI_API_KEY=OPENAI_KEY,
        GITHUB_API_URL="http://127.0.0.1:9",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        PRHUB_STORE=store,
    )
    return values


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


def test_a_stored_row_that_no_longer_validates_is_a_miss(tmp_path: Path) -> None:
    with closing(Store(tmp_path / "prhub.db")) as store:
        store._db.execute("INSERT INTO digests VALUES ('key', 'acme/rocket', 1, '{}', 'then')")
        store._db.execute("INSERT INTO narratives VALUES ('key', 'not json', 0, 'then')")
        assert store.digest("key") is None and store.narrative("key") is None
