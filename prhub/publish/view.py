"""What each report shows, once for every format: its sections in order with their headings,
items, links, badges and footers. Markdown (`render`) and HTML (`html`) render these views."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta
from zoneinfo import ZoneInfo

from prhub.model import PRDigest, WeeklyReport
from prhub.publish.footers import (
    MARKER,
    digest_footer,
    failed_checks,
    flag,
    local_time,
    weekly_footer,
)
from prhub.publish.parts import (
    DigestLink,
    Items,
    Line,
    Link,
    Links,
    Para,
    Section,
    Strong,
    Tag,
    TagCode,
    Text,
    Verdict,
    Words,
    anchor,
    filled,
    joined,
    links,
    one_line,
    paragraphs,
    pr_heading,
    refs,
)
from prhub.publish.rows import KINDS, LabelsView, TaggedPR, TagGroup
from prhub.publish.weekly_view import data_sections, narrative_sections, notice
from prhub.weekly.prose import figures, lead

# What a tag names, in the order a report groups them: a module (from the title's `[module]`),
# a type (`fix:`, `feat:`, breaking), else a label.
# Where a PR's digest is, if the output has it: a relative address, or None.


def check_marker(d: PRDigest) -> str:
    """The marker on the rows of a digest that failed its checks; "" for one that passed."""
    return MARKER if d.meta.failed_checks else ""


def _linker(digest_link: DigestLink | None, digested: set[int]) -> DigestLink:
    """Where each PR's digest is: only PRs the report has a digest of link to one."""
    return lambda n: digest_link(n) if digest_link and n in digested else None


# Titles


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
    notice: str  # said before the verdict of a digest that failed its checks
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
    tags = joined(map(TagCode, d.tags), " ") or (Words("无"),)
    related = (Words(" · 相关："), refs(urls, c.related_prs, " ")) if c.related_prs else ()
    merged = f"合并于 {local_time(d.merged_at, tz)}" if d.merged_at else "未合并"
    score = (Words(f"（约 {c.minutes} 分钟）· 重要性 "), Strong(f"{c.importance:.1f}"))
    return DigestView(
        title=f"#{d.number} {one_line(c.title)} · {d.repo}",
        heading=pr_heading(urls.pr(d.number), d.number, c.title),
        meta=(
            Line((Words("原标题："), d.original_title)),
            Line((Words("@"), d.author)),
            Words(merged),
            Words(f"+{d.additions} / −{d.deletions}"),
            Words(f"{d.changed_files} 个文件"),
        ),
        notice=(
            f"⚠ 这篇导读未通过检查（{failed_checks(d)}），阅读时请以原 PR 为准。"
            if d.meta.failed_checks
            else ""
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
    notice: str  # a banner at the top for a week with PRs missing or digests failing checks
    empty: str  # said instead of all below the meta line, for a week without PRs
    summary: Line | None  # the figures, for a week without a narrative
    sections: tuple[Section, ...]
    footer: str
    links: Links
    discussion: str = ""  # the week's discussion page (参与讨论), "" when none


_PAGE = re.compile(r"https?://[^\s()<>\"'`]+")


def weekly_view(r: WeeklyReport, *, digest_link: DigestLink | None = None) -> WeeklyView:
    """The weekly report: lead, highlights and risks first, then the full report with its tables.

    `digest_link` gives where a PR's digest is, so every PR row links to it too.
    """
    f, n = r.facts, r.narrative
    to = _linker(digest_link, {d.number for d in r.digests})
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
        notice=notice(r),
        empty="本周没有合入任何 PR。" if empty else "",
        summary=filled(lambda e: figures(f, e)) if n is None and not empty else None,
        sections=() if empty else (*narrative_sections(r, urls, to), *data_sections(r, urls, to)),
        footer="" if empty else weekly_footer(r),
        links=urls,
        # From the store or an imported file: a plain web page only, never a javascript: link.
        discussion=url if _PAGE.fullmatch(url := r.meta.discussion_url or "") else "",
    )


@dataclass(frozen=True)
class TagsView:
    title: str  # the page's
    heading: Line
    sections: tuple[Section, ...]  # a tag's group, a PR's section in it
    available: Line | None  # the tags the week has, when the one asked for has no PR
    links: Links


def tags_view(v: LabelsView, *, digest_link: DigestLink | None = None) -> TagsView:
    """The labels view: the week's PRs by tag, each with its verdict and advice (and a link to
    its digest, where `digest_link` gives one); all tags come grouped by module, type and
    label after a table of contents, one tag asked for alone."""
    to = _linker(digest_link, {pr.number for g in v.groups for pr in g.prs})
    urls = links(v.repo, {pr.number: pr.url for g in v.groups for pr in g.prs})
    level = 2 if v.tag is not None else 3
    # A group is headed by its tag alone, so its anchor (the id GitHub gives the heading) stays
    # the same from week to week; its count is the line under it.
    groups = [
        Section(
            g.tag,
            (Para(Words(f"{len(g.prs)} 个 PR")),) if g.prs else (),
            sections=tuple(_tagged(pr, to(pr.number), level + 1) for pr in g.prs),
            level=level,
            empty="" if g.prs else "本周没有这个标签的 PR。",
            anchor=anchor(one_line(g.tag)),
        )
        for g in v.groups
    ]
    tags = [Line((Tag(t), Words(f"（{count}）"))) for t, count in v.available.items()]
    available = Line((Words("本周有 PR 的标签："), *joined(tags, "、"), Words("。")))
    return TagsView(
        title=f"{v.repo} · 标签视图",
        heading=Line((v.repo, Words(" · 标签视图 · "), v.title)),
        sections=tuple(groups) if v.tag is not None else _by_kind(v, groups),
        available=available if tags else None,
        links=urls,
    )


def _by_kind(v: LabelsView, groups: list[Section]) -> tuple[Section, ...]:
    """The tags' groups under their kind (module, type, label), after a table of contents
    that links each tag to its group."""
    kinds: dict[str, list[tuple[TagGroup, Section]]] = {}
    for g, s in zip(v.groups, groups, strict=True):
        kinds.setdefault(g.kind, []).append((g, s))
    # In the order GitHub meets the headings, which gives a repeated one -1, -2, ...: a label
    # named as a kind (模块) links to its own group.
    used = {"目录": 0}
    for kind, pairs in kinds.items():
        _unique(KINDS[kind], used)
        pairs[:] = [(g, replace(s, anchor=_unique(s.anchor, used))) for g, s in pairs]
    contents = [
        Line((Words(f"{KINDS[kind]}："), *joined((_entry(g, s) for g, s in pairs), "、")))
        for kind, pairs in kinds.items()
    ]
    return (
        Section(Words("目录"), (Items(tuple(contents)),)),
        *(
            Section(Words(KINDS[k]), sections=tuple(s for _, s in pairs))
            for k, pairs in kinds.items()
        ),
    )


def _unique(slug: str, used: dict[str, int]) -> str:
    """`slug` as github-slugger gives it the n-th time: slug, slug-1, slug-2, ..."""
    found = slug
    while found in used:
        used[slug] += 1
        found = f"{slug}-{used[slug]}"
    used[found] = 0
    return found


def _entry(g: TagGroup, s: Section) -> Line:
    return Line((Link(g.tag, f"#{s.anchor}"), Words(f"（{len(g.prs)}）")))


def _tagged(pr: TaggedPR, digest: str | None, level: int) -> Section:
    advice = paragraphs(pr.advice)
    verdict = Line((Verdict(pr.verdict), Words(f"（约 {pr.minutes} 分钟）。"), *advice[:1]))
    checks = flag({pr.number: pr.failed_checks})
    heading = pr_heading(pr.url, pr.number, pr.title, digest)
    return Section(
        Line((*heading.parts, *checks)),
        (Para(verdict), *map(Para, advice[1:])),
        level=level,
    )
