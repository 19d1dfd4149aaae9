"""What each report shows, once for every format: its sections in order with their headings,
items, links, badges and footers. Markdown (`render`) and HTML (`html`) render these views."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from prhub.digest.checks import LABELS
from prhub.model import PRDigest
from prhub.publish.parts import (
    Block,
    Code,
    Items,
    Line,
    Links,
    Para,
    Part,
    Refs,
    Row,
    Section,
    Strong,
    Table,
    Tag,
    TagFilter,
    Text,
    Verdict,
    Words,
    links,
    one_line,
    paragraphs,
)
from prhub.tags import tag_name
from prhub.weekly.report import (
    KeyRow,
    Trend,
    WeeklyReport,
    author_highlight,
    author_line,
    fact_risks,
    figures,
    key_rows,
    lead,
    risks,
)

if TYPE_CHECKING:
    from prhub.publish.labels import LabelsView, TaggedPR


def _refs(urls: Links, numbers: Iterable[int], sep: str = "、", linked: bool = False) -> Refs:
    return Refs(tuple((n, urls.pr(n)) for n in numbers), sep, linked)


def _heading(url: str, number: int, title: str) -> Line:
    """A PR's heading: its number, linked, and a title."""
    return Line((Refs(((number, url),), linked=True), Words(" "), title))


def _joined(parts: Iterable[Part | Line], sep: str) -> tuple[Part, ...]:
    """The parts with `sep` between them; a Line's parts inline."""
    out: list[Part] = []
    for part in parts:
        out += [Words(sep)] if out else []
        out += part.parts if isinstance(part, Line) else [part]
    return tuple(out)


def _filled(make: Callable[[Callable[[str], str]], str]) -> Line:
    """A text the facts make with the data it names (`make(escape)`), its words and data apart."""
    data: list[str] = []

    def hole(value: str) -> str:
        data.append(value)
        return f"\0{len(data) - 1}\0"

    pieces = re.split("\0([0-9]+)\0", make(hole))
    parts = [data[int(p)] if i % 2 else Words(p) for i, p in enumerate(pieces)]
    return Line(tuple(p for p in parts if p != Words("")))


# Times, titles and footers

# Why grounding dropped something, as the footer says it, in the order it lists them.
DROP_REASONS = {
    "unknown_path": "输入中没有的路径",
    "unknown_identifier": "输入中没有的标识符",
    "mentioned_as_changed": "把仅被提及的文件说成改动",
    "unknown_number": "输入中没有的编号",
    "echoed_prompt": "照抄提示词",
}


def local_time(moment: datetime | None, tz: str) -> str:
    return moment.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M") if moment else "未合并"


def digest_footer(d: PRDigest) -> str:
    """The digest's provenance as plain text: prompt, model, usage and what the model saw."""
    meta, cov = d.meta, d.meta.coverage
    seen = (
        f"模型看到：全文 {len(cov.full)}、节选 {len(cov.excerpt)}、仅列名 {len(cov.listed)}、"
        f"排除 {len(cov.excluded)} 个文件（变更行 {math.floor(cov.share_seen * 100)}%）"
        + (f"，其中生成或第三方文件 {len(cov.generated)} 个" if cov.generated else "")
        + (f"，GitHub 未列出 {cov.unlisted} 个" if cov.unlisted else "")
        + (f"；评审讨论 {cov.comments_shown}/{cov.comments} 条" if cov.comments else "")
        + (f"；{cov.notes_shortened} 段笔记超长，已按整条删减" if cov.notes_shortened else "")
    )
    parts = [
        meta.prompt,
        meta.model,
        f"{meta.usage.calls} 次调用",
        f"输入 {meta.usage.tokens_in:,} / 输出 {meta.usage.tokens_out:,} tokens",
        seen,
    ]
    if meta.redactions:
        parts.append(f"脱敏 {sum(meta.redactions.values())} 处")
    if meta.dropped_citations:
        parts.append(f"删去无据引用 {meta.dropped_citations} 处" + dropped_why(d))
    if meta.failed_checks:
        failed = "、".join(LABELS.get(name, name) for name in meta.failed_checks)
        parts.append(f"未通过检查：{failed}")
    return " · ".join(parts)


def dropped_why(d: PRDigest) -> str:
    """What grounding dropped from a digest, by reason; nothing for one stored without it."""
    reasons = Counter[str](drop.reason for drop in d.meta.dropped)
    why = "、".join(f"{label} {reasons[r]}" for r, label in DROP_REASONS.items() if reasons[r])
    return f"（{why}）" if why else ""


def weekly_footer(r: WeeklyReport) -> str:
    """The report's provenance as plain text: prompt, model, and what its content cost to make.

    The usage is that of the digests and narrative shown, whichever run made them, so a rerun
    that makes nothing new prints the same footer.
    """
    meta = r.meta
    parts = [
        meta.prompt,
        meta.model,
        f"导读与周报共调用 {meta.usage.calls} 次",
        f"输入 {meta.usage.tokens_in:,} / 输出 {meta.usage.tokens_out:,} tokens",
    ]
    if meta.dropped_citations:
        parts.append(f"删去无据引用 {meta.dropped_citations} 处")
    return " · ".join(parts)


def period(r: WeeklyReport) -> tuple[str, str]:
    """First and last day of the report's window, in its timezone."""
    tz = ZoneInfo(r.facts.tz)
    first = r.facts.start.astimezone(tz)
    last = (r.facts.end - timedelta(seconds=1)).astimezone(tz)
    return first.strftime("%Y-%m-%d"), last.strftime("%Y-%m-%d")


def weekly_title(r: WeeklyReport) -> str:
    f = r.facts
    first, last = period(r)
    name = f.repo.split("/")[-1]
    if f.week is None:
        return f"{name} 仓库周报｜{first} 至 {last}"
    return f"{name} 仓库周报｜{f.year} 年第 {f.week} 周（{first[5:]} 至 {last[5:]}）"


# The views


@dataclass(frozen=True)
class DigestView:
    title: str  # the page's
    heading: Line
    meta: tuple[Text, ...]
    verdict: Line
    advice: tuple[str, ...]  # paragraphs
    sections: tuple[Section, ...]
    tags: Line
    footer: str
    links: Links


def digest_view(d: PRDigest, tz: str = "Asia/Shanghai") -> DigestView:
    """One digest: heading, meta line, verdict, advice, its lists, tags and footer."""
    c, urls = d.content, links(d.repo, {d.number: d.url})
    lists = (
        ("值得关注的设计决策", c.design_decisions, True),
        ("风险", c.risks, False),
        ("评审讨论", c.discussion, False),
        ("后续跟进", c.follow_ups, False),
    )
    tags = _joined(map(Code, d.tags), " ") or (Words("无"),)
    related = (Words(" · 相关："), _refs(urls, c.related_prs, " ")) if c.related_prs else ()
    merged = f"合并于 {local_time(d.merged_at, tz)}" if d.merged_at else "未合并"
    score = (Words(f"（约 {c.minutes} 分钟）· 重要性 "), Strong(f"{c.importance:.1f}"))
    return DigestView(
        title=f"#{d.number} {one_line(c.title)} · {d.repo}",
        heading=_heading(urls.pr(d.number), d.number, c.title),
        meta=(
            Line((Words("原标题："), d.original_title)),
            Line((Words("@"), d.author)),
            Words(merged),
            Words(f"+{d.additions} / −{d.deletions}"),
            Words(f"{d.changed_files} 个文件"),
        ),
        verdict=Line((Verdict(c.verdict), *score, Words("/10："), c.importance_reason)),
        advice=tuple(paragraphs(c.advice)),
        sections=tuple(
            Section(Words(title), (Items(tuple(items), numbered),))
            for title, items, numbered in lists
            if items
        ),
        tags=Line((Words("标签："), *tags, *related)),
        footer=digest_footer(d),
        links=urls,
    )


@dataclass(frozen=True)
class WeeklyView:
    title: str
    lead: str
    meta: tuple[Text, ...]
    empty: str  # said instead of all below the meta line, for a week without PRs
    summary: Line | None  # the figures, for a week without a narrative
    sections: tuple[Section, ...]
    footer: str
    links: Links
    discussion: str = ""  # the week's discussion page (参与讨论), "" when none


_PAGE = re.compile(r"https?://[^\s()<>\"'`]+")


def weekly_view(r: WeeklyReport) -> WeeklyView:
    """The weekly report: lead, highlights and risks first, then the full report with its tables."""
    f, n = r.facts, r.narrative
    urls = links(f.repo, {d.number: d.url for d in r.digests})
    first, last = period(r)
    moment = r.meta.generated_at
    meta: tuple[Text, ...] = (
        Line((Words("仓库："), f.repo)),
        Line((Words(f"周期：{first} 至 {last}（"), f.tz, Words("）"))),
        Words(f"来源 PR：{f.pr_count}"),
        Words(f"重点 PR：{len(f.key_prs)}"),
        *([Words(f"生成于 {local_time(moment, f.tz)}")] if moment else []),
    )
    empty = f.pr_count == 0 and not r.failed
    return WeeklyView(
        title=weekly_title(r),
        lead=(n.lead or lead(f)) if n else "",
        meta=meta,
        empty="本周没有合入任何 PR。" if empty else "",
        summary=_filled(lambda e: figures(f, e)) if n is None and not empty else None,
        sections=() if empty else (*_narrative(r, urls), *_data(r, urls)),
        footer="" if empty else weekly_footer(r),
        links=urls,
        # From the store or an imported file: a plain web page only, never a javascript: link.
        discussion=url if _PAGE.fullmatch(url := r.meta.discussion_url or "") else "",
    )


FACT_RISKS = "由数据标出的风险"


def _narrative(r: WeeklyReport, urls: Links) -> list[Section]:
    """The sections around the model's prose; one with nothing to show is left out."""
    f, n = r.facts, r.narrative
    if n is None:
        return []
    standout = [_filled(lambda e: author_highlight(f, e))] if author_highlight(f) else []
    highlights: tuple[Text, ...] = (*n.highlights, *standout)
    # The model's risks, else every PR the facts flag; the full report adds the ones it leaves.
    flagged = () if n.risks else tuple(fact_risks(f))
    added = tuple(risks(n.risks, f)[len(n.risks) :])
    full_risks = Items(tuple(n.risks), long=added, label=FACT_RISKS)
    rows = key_rows(r)
    full: list[tuple[str, Block | None]] = [
        ("执行摘要", Para(Line((*_filled(lambda e: figures(f, e)).parts, n.summary)))),
        ("本周重点变化", Items(tuple(n.key_changes)) if n.key_changes else None),
        ("模块与主题趋势", _trends(n.trends, urls) if n.trends else None),
        ("风险观察", full_risks if n.risks or added else None),
        ("重点 PR 速览", _key_table(rows, urls) if rows else None),
        ("后续建议", Items(tuple(n.follow_ups), numbered=True) if n.follow_ups else None),
    ]
    shown = [(title, block) for title, block in full if block is not None]
    sections = []
    if highlights:
        sections.append(Section(Words("本周亮点"), (Items(highlights),), callout="highlights"))
    if n.risks or flagged:
        top = Items(tuple(n.risks), long=flagged, label=FACT_RISKS)
        sections.append(Section(Words("风险观察"), (top,), callout="risks"))
    numbered = [Section(Words(f"{i}. {t}"), (b,), level=3) for i, (t, b) in enumerate(shown, 1)]
    return [*sections, Section(Words("完整周报"), sections=tuple(numbered))]


def _trends(trends: list[Trend], urls: Links) -> Table:
    rows = tuple(Row((t.theme, _refs(urls, t.prs), t.judgement)) for t in trends)
    return Table(("主题", "代表 PR", "趋势判断"), rows, ("", "", ""))


def _key_table(rows: list[KeyRow], urls: Links) -> Table:
    cells = [
        (
            _refs(urls, row.numbers, "/", linked=True),
            row.topic,
            Words(f"{row.importance:.1f}" if row.importance is not None else "—"),
            row.note,
        )
        for row in rows
    ]
    return Table(("PR", "标题/主题", "重要性", "关键观察"), _rows(cells), ("pr", "", "num", ""))


def _rows(cells: Iterable[tuple[Text, ...]]) -> tuple[Row, ...]:
    return tuple(map(Row, cells))


def _data(r: WeeklyReport, urls: Links) -> list[Section]:
    """The week's figures, every PR, and the PRs whose digest failed."""
    f = r.facts
    counts = _rows((tag, Words(str(count))) for tag, count in f.tags.items())
    blocks: list[Block] = [Table(("标签", "PR 数"), counts, ("", "num"), compact=True)]
    if f.hot_files:
        hot = _rows((Code(h.path), _refs(urls, h.prs)) for h in f.hot_files)
        blocks.append(Table(("热点文件", "PR"), hot, ("", ""), compact=True))
    if f.authors:
        blocks.append(Para(_filled(lambda e: author_line(f, e))))
    if f.first_time:
        who = [Line((a.author, Words("（"), _refs(urls, a.prs), Words("）"))) for a in f.first_time]
        blocks.append(Para(Line((Words("首次贡献者："), *_joined(who, "、"), Words("。")))))
    prs = tuple(
        Row(
            (
                _refs(urls, [d.number], linked=True),
                d.content.title,
                Line(_joined(map(Code, d.tags), " ")),
                Verdict(d.content.verdict),
                Words(f"{d.content.importance:.1f}"),
            ),
            pr=d.number,
            tags=tuple(dict.fromkeys(map(tag_name, d.tags))),  # as the facts count them
        )
        for d in r.digests
    )
    every = Table(("PR", "导读标题", "标签", "阅读建议", "重要性"), prs, ("pr", "", "", "", "num"))
    sections = [
        Section(Words("本周数据"), tuple(blocks)),
        Section(Words("全部 PR"), (TagFilter(tuple(f.tags.items()), len(r.digests)), every)),
    ]
    if r.failed:
        failed = [Line((_refs(urls, [x.number]), Words("："), x.error)) for x in r.failed]
        again = Para(Words("重新运行同一命令只会重试这些 PR。"))
        items = Items(long=tuple(failed), label="未能生成导读的 PR")
        sections.append(Section(Words("未能生成导读的 PR"), (items, again)))
    return sections


@dataclass(frozen=True)
class TagsView:
    title: str  # the page's
    heading: Line
    sections: tuple[Section, ...]  # a tag's group, a PR's section in it
    available: Line | None  # the tags the week has, when the one asked for has no PR
    links: Links


def tags_view(v: LabelsView) -> TagsView:
    """The labels view: the week's PRs by tag, each with its verdict and advice."""
    urls = links(v.repo, {pr.number: pr.url for g in v.groups for pr in g.prs})
    groups = tuple(
        Section(
            Line((g.tag, Words(f"（{len(g.prs)}）"))),
            sections=tuple(map(_tagged, g.prs)),
            empty="" if g.prs else "本周没有这个标签的 PR。",
        )
        for g in v.groups
    )
    tags = [Line((Tag(t), Words(f"（{count}）"))) for t, count in v.available.items()]
    available = Line((Words("本周有 PR 的标签："), *_joined(tags, "、"), Words("。")))
    return TagsView(
        title=f"{v.repo} · 标签视图",
        heading=Line((v.repo, Words(" · 标签视图 · "), v.title)),
        sections=groups,
        available=available if tags else None,
        links=urls,
    )


def _tagged(pr: TaggedPR) -> Section:
    advice = paragraphs(pr.advice)
    verdict = Line((Verdict(pr.verdict), Words(f"（约 {pr.minutes} 分钟）。"), *advice[:1]))
    return Section(
        _heading(pr.url, pr.number, pr.title), (Para(verdict), *map(Para, advice[1:])), level=3
    )
