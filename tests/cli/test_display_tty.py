"""The live bar on a real pseudo-terminal: every warning stays readable above it."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.factories import GITHUB_TOKEN, OPENAI_KEY, ROOT

COLUMNS, ROWS = 120, 40
_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen(raw: str) -> list[str]:
    """The lines a terminal shows after `raw`: enough of a VT100 for rich's live display
    (carriage return, newline, cursor up, erase line); colours and cursor hiding ignored."""
    lines, row, col = [""], 0, 0
    i = 0
    while i < len(raw):
        match = _CSI.match(raw, i)
        if match:
            arg, op = match.groups()
            if op == "A":
                row = max(0, row - int(arg or 1))
            elif op == "K":
                lines[row] = "" if arg == "2" else lines[row][:col]
            elif op == "G":
                col = int(arg or 1) - 1
            i = match.end()
            continue
        char = raw[i]
        i += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append("")
        elif char >= " ":
            line = lines[row].ljust(col)
            lines[row] = line[:col] + char + line[col + 1 :]
            col += 1
    return [line.rstrip() for line in lines]


def run_on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    """Runs prhub on a pseudo-terminal of COLUMNS x ROWS; what it wrote there."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    child = subprocess.Popen(
        [sys.executable, "-m", "prhub", *argv],
        stdin=follower,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
        cwd=cwd,
    )
    os.close(follower)
    out, deadline = b"", time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif child.poll() is not None:
            break
    child.wait(timeout=30)
    os.close(leader)
    assert child.returncode == 0, out.decode(errors="replace")
    return out.decode()


def test_warnings_stay_above_the_live_bar(github, llm, tmp_path):
    # Two GitHub failures, each retried: one warning line each, without --verbose.
    github.script(r"/pulls/103$", [(502, {}, {"message": "Bad gateway"})])
    github.script(r"/pulls/105/files$", [(503, {}, {"message": "Unavailable"})])
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
        "COLUMNS": str(COLUMNS),
        "PYTHONPATH": str(ROOT),
        "PRHUB_CACHE_DIR": os.environ["PRHUB_CACHE_DIR"],
        "GITHUB_TOKEN": GITHUB_TOKEN,
        "OPENAI_API_KEY": OPENAI_KEY,
        "OPENAI_BASE_URL": llm.url,
        "GITHUB_API_URL": github.url,
        "PRHUB_STORE": str(tmp_path / "store.db"),
        "PRHUB_REPO": "acme/rocket",
        "PRHUB_RETRY_BASE_WAIT": "0.01",
    }
    raw = run_on_a_terminal(["weekly", "--week", "31", "--year", "2026"], env, tmp_path)
    shown = [line for line in screen(raw) if line]
    warnings = [line for line in shown if "retry 1" in line]
    assert warnings == [
        "prhub: fetching acme/rocket#103 failed (GithubException); retry 1",
        "prhub: fetching files of acme/rocket#105 failed (GithubException); retry 1",
    ], "\n".join(shown)
    assert shown[-2] == f"prhub: wrote {Path('reports/acme/rocket/2026-W31.md')}"
    assert shown[-1].startswith("prhub: 6 PRs (0 from the store, 0 failed) · 7 LLM calls")
    assert not [line for line in shown if "━" in line]  # the bar is gone, cleanly
    assert "LLM calls" in raw and "weekly narrative" in raw  # stages the bar showed
