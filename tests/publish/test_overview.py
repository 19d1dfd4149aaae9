"""The week's index across repositories: one row each, from the reports' facts, as Markdown."""

from __future__ import annotations

from pathlib import Path

from prhub.publish.overview import Entry, index_markdown
from prhub.weekly.analyse import window
from tests.factories import MARKDOWN, check_golden, no_narrative_report, report

WEEK_31 = window("Asia/Shanghai", year=2026, week=31)


def entries() -> list[Entry]:
    """A complete repository, a partial one, one that failed with an earlier report, one without."""
    return [
        Entry("acme/rocket", 0, report(), Path("acme/rocket/2026-W31.md")),
        Entry("acme/partial", 12, no_narrative_report(), Path("acme/partial/2026-W31.md")),
        Entry("acme/earlier", 8, report(), Path("acme/earlier/2026-W31.md")),
        Entry("acme/never_run", 5),
    ]


def test_the_index_has_a_row_per_repository_in_the_order_given():
    text = index_markdown(WEEK_31, "Asia/Shanghai", entries())
    check_golden("index-2026-W31.md", text)
    rows = [t for t in MARKDOWN.parse(text) if t.type == "tr_open"]
    assert len(rows) == 1 + len(entries())
    hrefs = [
        child.attrGet("href")
        for token in MARKDOWN.parse(text)
        for child in token.children or []
        if child.type == "link_open"
    ]
    assert hrefs == [
        "acme/rocket/2026-W31.md",
        "acme/partial/2026-W31.md",
        "acme/earlier/2026-W31.md",
    ]


def test_counts_come_from_the_reports_facts():
    text = index_markdown(WEEK_31, "Asia/Shanghai", entries())
    facts = report().facts
    row = next(line for line in text.splitlines() if line.startswith("| acme/rocket |"))
    assert f" | {facts.pr_count} | {len(facts.key_prs)} | 完成 |" in row
    total = facts.pr_count * 2 + no_narrative_report().facts.pr_count
    assert f"仓库 4 个，完成 1 个 · 来源 PR 共 {total} 个" in text


def test_a_window_of_dates_is_named_by_its_days():
    w = window("UTC", since="2026-07-27", until="2026-07-28")
    text = index_markdown(w, "UTC", entries()[:1])
    assert text.startswith("# 仓库周报索引｜2026-07-27 至 2026-07-28\n")
    assert "周期：2026-07-27 至 2026-07-28（UTC）" in text
