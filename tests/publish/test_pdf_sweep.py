"""A print's temporary folder left by a run killed mid-print is removed by the next print."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from prhub.errors import PdfUnavailable
from prhub.publish import pdf

FAKE = """#!/bin/sh
echo $$ > "$TMPDIR/../chromium.pid"
exec sleep 30
"""


def gone_pid() -> int:
    """The id of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_killed_runs_print_folder_is_removed_and_no_other(tmp_path):
    dead = tmp_path / f"prhub-pdf-{gone_pid()}-abc"
    mine = tmp_path / f"prhub-pdf-{os.getpid()}-def"
    old = tmp_path / "prhub-pdf-q1w2e3"  # named by an older prhub: no process to ask
    new = tmp_path / "prhub-pdf-r4t5y6"
    for folder in (dead, mine, old, new):
        (folder / "profile").mkdir(parents=True)
    os.utime(old, (time.time() - 2 * pdf.STALE,) * 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "prhub-pdf-999999999-link").symlink_to(elsewhere)
    assert sorted(pdf.sweep(tmp_path)) == sorted([dead, old])
    assert mine.is_dir() and new.is_dir() and elsewhere.is_dir()


def test_the_next_print_removes_what_a_print_killed_with_sigkill_left(tmp_path, monkeypatch):
    fake = tmp_path / "chromium"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PRHUB_CHROMIUM": str(fake)}
    killed = subprocess.Popen(
        [sys.executable, "-c", "from prhub.publish.pdf import pdf; pdf('<p>x</p>')"], env=env
    )
    pid_file = tmp_path / "chromium.pid"
    try:
        for _ in range(600):  # Chromium started: the print folder is there
            if pid_file.exists() and pid_file.read_text().strip():
                break
            time.sleep(0.01)
        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
    finally:
        killed.kill()
        if pid_file.exists() and pid_file.read_text().strip():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the printer it left behind
    [left] = tmp_path.glob("prhub-pdf-*")
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setenv("PRHUB_CHROMIUM", str(tmp_path / "true"))
    (tmp_path / "true").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "true").chmod(0o755)
    with pytest.raises(PdfUnavailable):  # this fake prints nothing: the next print ran
        pdf.pdf("<p>x</p>")
    assert not left.exists()
    assert list(tmp_path.glob("prhub-pdf-*")) == []
