"""A cron tick with nothing new: the week is answered from the store, so the run loads neither
the LLM's SDK nor batch mode's client nor the tokenizer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.factories import assert_ok, prhub, process_env

WEEK = ("weekly", "--week", "31", "--year", "2026")
PROBE = """
import json, sys
from prhub.cli import app
from prhub.prepare import tokens
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    loaded = {m: m in sys.modules for m in ("openai", "prhub.llm.batch", "prhub.run.book")}
    loaded["tokenizer"] = tokens.get_encoding.cache_info().currsize > 0
    print(json.dumps(loaded))
"""


def probe(env: dict[str, str | None], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The week run in a fresh interpreter that prints which heavy modules it loaded."""
    return subprocess.run(
        [sys.executable, "-c", PROBE, *WEEK],
        env=process_env(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_rerun_with_nothing_new_loads_no_sdk_and_no_tokenizer(
    env: dict[str, str | None], tmp_path: Path
) -> None:
    assert_ok(prhub(env, *WEEK))  # the week made once: every digest and the narrative stored
    done = probe(env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "unchanged reports/acme/rocket/2026-W31.md" in done.stderr
    assert "0 LLM calls" in done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert loaded == {
        "openai": False,
        "prhub.llm.batch": False,
        "prhub.run.book": False,
        "tokenizer": False,
    }


def test_a_run_with_a_new_pr_still_loads_what_it_needs(
    env: dict[str, str | None], tmp_path: Path
) -> None:
    """The same probe sees the SDK and the tokenizer once there is something to digest."""
    done = probe(env, tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.splitlines()[-1])
    assert loaded["openai"] and loaded["tokenizer"]
    assert not loaded["prhub.llm.batch"]  # online, batch mode's client is never needed
