"""Rendered Markdown against golden files a reviewer can read (PRHUB_UPDATE_GOLDEN=1 rewrites)."""

from __future__ import annotations

import json
import os

import pytest

from prhub import render
from prhub.model import PRDigest, WeeklyReport
from tests.conftest import FIXTURES

GOLDEN = FIXTURES / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PRHUB_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def digest() -> PRDigest:
    return PRDigest.model_validate_json((FIXTURES / "digests" / "101.json").read_text())


def report() -> WeeklyReport:
    path = FIXTURES / "reports" / "acme-rocket-2026-W31.json"
    return WeeklyReport.model_validate_json(path.read_text())


def test_digest_markdown_matches_golden():
    check_golden("digest-101.md", render.digest_markdown(digest()))


def test_weekly_markdown_matches_golden():
    check_golden("weekly-acme-rocket-2026-W31.md", render.weekly_markdown(report()))


def test_labels_view_matches_golden():
    check_golden("labels-acme-rocket-2026-W31.md", render.labels_markdown(report()))


def test_labels_view_for_one_tag_lists_only_it():
    text = render.labels_markdown(report(), "Rollout")
    assert "## rollout（2）" in text
    assert "#101" in text and "#103" in text and "#102" not in text
    assert "没有这个标签" in render.labels_markdown(report(), "nope")


def test_json_round_trips():
    assert PRDigest.model_validate_json(render.digest_json(digest())) == digest()
    assert json.loads(render.weekly_json(report()))["facts"]["pr_count"] == 6


def test_digest_shows_merge_time_in_the_readers_timezone():
    assert "合并于 2026-07-27 11:12" in render.digest_markdown(digest(), "Asia/Shanghai")
    assert "合并于 2026-07-27 03:12" in render.digest_markdown(digest(), "UTC")


@pytest.mark.parametrize(
    ("raw", "table", "expected"),
    [
        ("a <script>x</script> & b", False, "a &lt;script&gt;x&lt;/script&gt; &amp; b"),
        ("keep `a<b>` code", False, "keep `a<b>` code"),
        ("a | b", True, "a \\| b"),
        ("`x|y` z", True, "`x\\|y` z"),
        ("stray ` tick", False, "stray \\` tick"),
        ("two\nlines", True, "two lines"),
    ],
)
def test_md_makes_untrusted_text_inert(raw, table, expected):
    assert render.md(raw, table=table) == expected


def test_empty_week_report_is_short():
    empty = report().model_copy(
        update={
            "facts": report().facts.model_copy(update={"prs": [], "pr_count": 0, "key_prs": []}),
            "narrative": None,
            "digests": [],
        }
    )
    text = render.weekly_markdown(empty)
    assert "本周没有合入任何 PR" in text
    assert "## 本周亮点" not in text


def test_markdown_from_pr_text_stays_text():
    hostile = "[click](https://evil.example) ![](https://t.example/p.png) **loud**\n# head\n- item"
    out = render.md(hostile)
    assert "\\[click\\](https://evil.example)" in out and "!\\[\\]" in out
    assert "\\*\\*loud\\*\\*" in out
    assert "\n\\# head\n\\- item" in out
    assert render.md("#102 and a-b") == "#102 and a-b"  # no heading there: left alone
