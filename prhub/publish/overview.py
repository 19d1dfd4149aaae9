"""The index of one week across repositories: each one's report, PR counts and whether it is
complete, from the same facts the reports' own views show; Markdown by its template."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote
from zoneinfo import ZoneInfo

from prhub.model import WeeklyReport
from prhub.publish.parts import Line, Words
from prhub.publish.render import markdown
from prhub.weekly.analyse import Window


@dataclass(frozen=True)
class Entry:
    """How one repository's week ended: its exit code (0 complete, 12 partial), its report (this
    run's, or an earlier one when this run failed) and that report's file, relative to the
    index."""

    repo: str
    exit_code: int
    report: WeeklyReport | None = None
    file: Path | None = None


@dataclass(frozen=True)
class Row:
    repo: str
    file: str  # the report's name, "" for none
    href: str  # the report's address relative to the index
    prs: str
    key_prs: str
    state: Line


@dataclass(frozen=True)
class IndexView:
    title: str
    meta: tuple[Line | Words, ...]
    rows: tuple[Row, ...]


def window_title(w: Window, tz: str) -> tuple[str, str, str]:
    """The window as a title names it, and its first and last day, as a report's title does."""
    zone = ZoneInfo(tz)
    first = w.start.astimezone(zone).strftime("%Y-%m-%d")
    last = (w.end - timedelta(seconds=1)).astimezone(zone).strftime("%Y-%m-%d")
    if w.week is None:
        return f"{first} 至 {last}", first, last
    return f"{w.year} 年第 {w.week} 周（{first[5:]} 至 {last[5:]}）", first, last


def _state(e: Entry) -> Line:
    if e.exit_code == 0:
        return Line((Words("完成"),))
    if e.exit_code == 12 and e.report is not None:
        return Line((Words(f"部分完成：{len(e.report.failed)} 个 PR 未能生成导读"),))
    earlier = "，显示此前生成的周报" if e.report is not None else "，下次运行会补上"
    return Line((Words(f"未完成{earlier}"),))


def index_view(w: Window, tz: str, entries: list[Entry]) -> IndexView:
    """One row a repository, in the order given; only what the entries hold, so the same
    outcomes give the same bytes."""
    when, first, last = window_title(w, tz)
    rows = tuple(
        Row(
            repo=e.repo,
            file=e.file.name if e.file and e.report else "",
            href=quote(e.file.as_posix()) if e.file and e.report else "",
            prs=str(e.report.facts.pr_count) if e.report else "—",
            key_prs=str(len(e.report.facts.key_prs)) if e.report else "—",
            state=_state(e),
        )
        for e in entries
    )
    done = sum(e.exit_code == 0 for e in entries)
    total = sum(e.report.facts.pr_count for e in entries if e.report)
    meta = (
        Line((Words(f"周期：{first} 至 {last}（"), tz, Words("）"))),
        Words(f"仓库 {len(entries)} 个，完成 {done} 个"),
        Words(f"来源 PR 共 {total} 个"),
    )
    return IndexView(title=f"仓库周报索引｜{when}", meta=meta, rows=rows)


def index_markdown(w: Window, tz: str, entries: list[Entry]) -> str:
    """The week's index as Markdown."""
    return markdown("index.md.j2", index_view(w, tz, entries))
