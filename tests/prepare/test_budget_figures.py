"""bench/prepare.py on the corpus: each week's prompt tokens, and what the weekly narrative's
request shows of its digests, printed whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import prepare


def test_every_week_is_measured_and_the_narrative_shows_every_item(
    corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prepare.main(["prepare.py", str(corpus_dir)])
    out = capsys.readouterr().out
    weeks = re.findall(r"^(\d{4}-W\d\d)\s+([\d,]+)\s+0\s+0\s+0\s+[\d,]+$", out, re.M)
    assert [w for w, _ in weeks] == ["2026-W31", "2026-W32", "2026-W33"]
    assert all(int(tokens.replace(",", "")) > 0 for _, tokens in weeks)
    prepare.main(["prepare.py", str(corpus_dir), "--narrative"])
    shown = re.findall(r"^\s+(\S+)\s+\d+\s+(\d+)/(\d+)\s", capsys.readouterr().out, re.M)
    assert shown and all(a == b for _, a, b in shown), shown  # every item, when it fits
