"""Crash safety: `prhub weekly` killed at random points loses no finished work.

Leftover temporary report files are accepted, not cleaned: a SIGKILL between writing the
temporary file and renaming it leaves `.<name>.<random>.tmp` beside the report. It never replaces
the report, and deleting other runs' temporary files could break a run writing at the same time.
"""

from __future__ import annotations

import json
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from tests.factories import OPENAI_KEY, cli_env, process_env
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import prompt_text

WEEK_31 = {101, 102, 103, 104, 105, 106}
KILLS = 3
TEMP = re.compile(r"^\.report\.md\..+\.tmp$")


def env(github_url: str, llm_url: str, store: Path) -> dict[str, str]:
    """This process's environment without prhub settings or config file, then the run's own."""
    return process_env(cli_env(github_url, llm_url, store, PRHUB_JOBS="2", PRHUB_MAX_ATTEMPTS=None))


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


@pytest.mark.slow
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
            others -= {"pr"}  # the digests beside the report, each written whole before it
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


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_starts_no_new_request_and_keeps_what_finished(
    github: GitHubStandIn, tmp_path: Path, signum: int, code: int
) -> None:
    with LLMStandIn(api_key=OPENAI_KEY, latency=1.5) as slow:
        child = weekly(tmp_path, github, slow)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until a digest is stored and more are asked for
            time.sleep(0.1)
            if (tmp_path / "store.db").exists() and stored_digests(tmp_path / "store.db"):
                break
        time.sleep(0.3)
        asked = len(slow.bodies)
        child.send_signal(signum)
        sent = time.monotonic()
        _, stderr = child.communicate(timeout=30)
        waited = time.monotonic() - sent
        time.sleep(2.0)  # anything a surviving thread would still send
        lines = stderr.decode().splitlines()
        assert child.returncode == code, lines
        assert lines[-1].startswith("prhub: interrupted; what was done is kept (")
        assert "new digest" in lines[-1] and "Traceback" not in stderr.decode()
        # The summary counts the PRs the note says were digested, not 0 of them.
        made = int(re.search(r"\((\d+) new digest", lines[-1])[1])
        assert lines[-2].startswith(f"prhub: {made} PR{'s' * (made != 1)} (0 from the store"), lines
        assert len(slow.bodies) == asked  # no request started after the signal
        assert waited < 1.5  # requests in flight are not waited for
        kept = stored_digests(tmp_path / "store.db")
        assert kept and len(kept) < len(WEEK_31)  # what finished is in the store
        assert not (tmp_path / "report.md").exists()  # and no partial report


# The signal handler takes no lock: the main thread may hold one when the signal comes

# The signal comes at the n-th line run inside retry.pause(), including the lines of the
# threading code it waits in: wherever it lands, the handler must not wait for a lock. One
# interpreter imports prhub once and forks a child for each line: each child ends as a process
# killed by that signal would, or its alarm says it was left waiting.
PAUSING = """
import json, os, signal, sys
from prhub import retry
from prhub.cli import process
from prhub.errors import Interrupted

def child(at):
    signal.signal(signal.SIGTERM, process._interrupt)
    signal.alarm(5)
    lines = 0
    def trace(frame, event, arg):
        nonlocal lines
        if event == "line":
            lines += 1
            if lines == at:
                signal.raise_signal(signal.SIGTERM)
        return trace
    try:
        while True:
            sys.settrace(trace)
            retry.pause(0.01)
            sys.settrace(None)
    except Interrupted as exc:
        os._exit(exc.exit_code)

codes = {}
for at in range(1, int(sys.argv[1]) + 1):
    pid = os.fork()
    if pid == 0:
        child(at)
    _, status = os.waitpid(pid, 0)
    codes[at] = os.waitstatus_to_exitcode(status)
print(json.dumps(codes))
"""


def test_a_signal_anywhere_in_a_retry_pause_ends_the_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PAUSING, "30"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    codes = {int(at): code for at, code in json.loads(done.stdout).items()}
    # 143: ended by the SIGTERM as prhub ends; -14: its alarm, still waiting 5 s later.
    assert codes == dict.fromkeys(range(1, 31), 143), codes


def test_prhub_waiting_in_a_retry_pause_ends_on_sigterm(
    github: GitHubStandIn, tmp_path: Path
) -> None:
    with LLMStandIn(api_key=OPENAI_KEY) as down:
        down.script([(503, {}, {"error": {"message": "overloaded"}})] * 100)
        for attempt in range(2):
            values = env(github.url, down.url, tmp_path / f"store{attempt}.db")
            values.update(PRHUB_RETRY_BASE_WAIT="20", PRHUB_MAX_RETRY_WAIT="60")
            asked = len(down.requests)
            child = subprocess.Popen(
                [sys.executable, "-m", "prhub", "summarize", "--repo", "acme/rocket"]
                + ["--pr", "101"],
                env=values,
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            deadline = time.monotonic() + 30
            while len(down.requests) == asked and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)  # in the pause before the next attempt
            child.send_signal(signal.SIGTERM)
            try:
                _, stderr = child.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                pytest.fail("prhub in a retry pause outlived a SIGTERM by 5 s")
            assert child.returncode == 143, stderr.decode()
            assert "Traceback" not in stderr.decode()
