"""The weekly report's sections: the banner, the model's prose around the facts, the tables."""

from __future__ import annotations

from collections.abc import Iterable

from prhub.model import Followed, Trend, WeeklyReport
from prhub.publish.footers import flag
from prhub.publish.parts import (
    Block,
    Code,
    DigestLink,
    Items,
    Line,
    Link,
    Links,
    Para,
    Row,
    Section,
    Table,
    TagCode,
    TagFilter,
    Text,
    Verdict,
    Words,
    filled,
    joined,
    lined,
    refs,
    titled,
)
from prhub.publish.rows import KeyRow, key_rows
from prhub.tags import tag_name
from prhub.weekly.ground import emptied, hollow
from prhub.weekly.prose import (
    author_highlight,
    author_line,
    author_unsaid,
    fact_headlines,
    figures,
    full_risk,
    last_word,
    period_word,
    risks,
    short_risk,
)


def notice(r: WeeklyReport) -> str:
    """What a reader must know before trusting the report: PRs without a digest, digests that
    failed their checks; "" for a complete week."""
    have = {d.number for d in r.digests}
    missing = sorted({n for n in r.facts.prs if n not in have} | {x.number for x in r.failed})
    unchecked = [d.number for d in r.digests if d.meta.failed_checks]
    said = []
    if missing:
        said.append(
            f"{len(missing)} 个未能生成导读（{_listed(missing)}），"
            f"导读与行文只涵盖其余 {len(have)} 个，名单见文末"
        )
    if unchecked:
        said.append(f"{len(unchecked)} 篇导读未通过检查（{_listed(unchecked)}），已在表中标出")
    told = f"⚠ 本报告的 {len(have) + len(missing)} 个 PR 中，{'；'.join(said)}。" if said else ""
    if r.narrative is not None and hollow(r.narrative) and r.meta.dropped_citations:
        lost = (
            f"⚠ 模型为{period_word(r.facts)}写的亮点、风险、摘要等行文都无法与数据核实，"
            f"已全部删去（{r.meta.dropped_citations} 处），"
            "以下只有程序算出的数据和各 PR 的导读。"
        )
        told = f"{told} {lost}" if told else lost
    return told


def _listed(numbers: list[int], most: int = 10) -> str:
    shown = "、".join(f"#{n}" for n in numbers[:most])
    return shown + (f" 等 {len(numbers)} 个" if len(numbers) > most else "")


FACT_RISKS = "由数据标出的风险"


def emptied_note(count: int, instead: str = "") -> str:
    """Where a section grounding emptied stands: what it held, why it went, and what shows
    in its place (`instead`), if anything."""
    return f"（本节原有 {count} 条内容，因无法与输入的数据核实已全部删去{instead}。）"


# What a section shows when grounding emptied the model's part of it.
INSTEAD = {"key_prs": "；表中的关键观察取自各 PR 导读", "risks": "；所列为数据标出的风险"}


def narrative_sections(r: WeeklyReport, urls: Links, to: DigestLink) -> list[Section]:
    """The sections around the model's prose; one with nothing to show is left out, but for
    one grounding emptied, which says so where it stands."""
    f, n = r.facts, r.narrative
    if n is None:
        return []
    word = period_word(f)
    lost = {
        name: sum(d.field == name for d in r.meta.dropped) for name in emptied(n, r.meta.dropped)
    }

    def note(name: str, shows: bool = False) -> str:
        """The section's note when grounding emptied it; `shows` when something stands in."""
        if name not in lost:
            return ""
        return emptied_note(lost[name], INSTEAD.get(name, "") if shows else "")

    standout = [filled(lambda e: author_highlight(f, e))] if author_unsaid(n.highlights, f) else []
    highlights: tuple[Text, ...] = (*n.highlights, *standout)
    texts = [full_risk(x) for x in n.risks]
    # The model's risks, else the facts' in short; the full report adds the ones it leaves.
    flagged = () if n.risks else tuple(fact_headlines(f))
    added = tuple(risks(texts, f)[len(texts) :])
    full_risks = Items(tuple(texts), long=added, label=FACT_RISKS)
    summary = Para(Line((*filled(lambda e: figures(f, e)).parts, n.summary)))
    full: list[tuple[str, str, Block | None]] = [
        ("summary", "执行摘要", summary),
        ("key_changes", f"{word}重点变化", Items(tuple(n.key_changes)) if n.key_changes else None),
        ("trends", "模块与主题趋势", _trends(n.trends, urls) if n.trends else None),
        ("risks", "风险观察", full_risks if n.risks or added else None),
        ("key_prs", "重点 PR 速览", _key_table(r, urls, to)),
        (
            "follow_ups",
            "后续建议",
            Items(tuple(n.follow_ups), numbered=True) if n.follow_ups else None,
        ),
        (
            "carried_over",
            f"{last_word(f)}跟进",
            _carried(n.carried_over, urls) if n.carried_over else None,
        ),
    ]
    shown = [(name, title, block) for name, title, block in full if block is not None or note(name)]
    sections = []
    if highlights or note("highlights"):
        top = (Items(highlights),) if highlights else ()
        sections.append(
            Section(Words(f"{word}亮点"), top, callout="highlights", empty=note("highlights"))
        )
    if n.risks or flagged or note("risks"):
        short = Items(tuple(map(short_risk, n.risks)), long=flagged, label=FACT_RISKS)
        told = note("risks", bool(flagged))
        sections.append(Section(Words("风险观察"), (short,), callout="risks", empty=told))
    numbered = [
        Section(
            Words(f"{i}. {title}"),
            (block,) if block else (),
            level=3,
            empty=note(name, block is not None),
        )
        for i, (name, title, block) in enumerate(shown, 1)
    ]
    return [*sections, Section(Words("完整周报"), sections=tuple(numbered))]


FOLLOWED = ("上周事项", "状态", "跟进 PR", "说明")


def _carried(items: list[Followed], urls: Links) -> Table:
    """The last period's follow-ups and risks, each with what this period did of it."""
    rows = tuple(Row((x.item, Words(x.status), refs(urls, x.prs), x.note)) for x in items)
    return Table(FOLLOWED, rows, ("", "", "pr", ""))


def _trends(trends: list[Trend], urls: Links) -> Table:
    rows = tuple(Row((t.theme, refs(urls, t.prs), t.judgement)) for t in trends)
    return Table(("主题", "代表 PR", "趋势判断"), rows, ("", "", ""))


def _key_table(r: WeeklyReport, urls: Links, to: DigestLink) -> Table | None:
    """The key PRs by importance, those whose digests all failed their checks after the rest:
    their score is the model's word on a digest prhub would not publish as good."""
    checks = {d.number: d.meta.failed_checks for d in r.digests}
    rows = sorted(key_rows(r), key=lambda row: _unchecked(row, checks))  # stable: by importance
    if not rows:
        return None
    cells = [
        (
            refs(urls, row.numbers, "/"),
            Line(
                (*_topic(row, to).parts, *flag({n: checks[n] for n in row.numbers if n in checks}))
            ),
            Words(f"{row.importance:.1f}" if row.importance is not None else "—"),
            row.note,
        )
        for row in rows
    ]
    return Table(("PR", "标题/主题", "重要性", "关键观察"), _rows(cells), ("pr", "", "num", ""))


def _unchecked(row: KeyRow, checks: dict[int, list[str]]) -> bool:
    """True when every digest of the row failed its checks."""
    have = [checks[n] for n in row.numbers if n in checks]
    return bool(have) and all(have)


def _topic(row: KeyRow, to: DigestLink) -> Line:
    """A key row's topic, linked to its first PR's digest; a revert's digest follows it."""
    first, *others = row.numbers
    more = [(n, to(n)) for n in others]
    also = [p for n, url in more if url for p in (Words(" · "), Link(Words(f"#{n} 导读"), url))]
    return Line((titled(row.topic, to(first)), *also))


def _rows(cells: Iterable[tuple[Text, ...]]) -> tuple[Row, ...]:
    return tuple(map(Row, cells))


def data_sections(r: WeeklyReport, urls: Links, to: DigestLink) -> list[Section]:
    """The week's figures, every PR, and the PRs whose digest failed."""
    f = r.facts
    word = period_word(f)
    blocks: list[Block] = [_tag_table(r)]
    if f.hot_files:
        hot = _rows((Code(h.path), refs(urls, h.prs)) for h in f.hot_files)
        blocks.append(Table(("热点文件", "PR"), hot, ("", ""), compact=True))
    if f.authors:
        blocks.append(Para(filled(lambda e: author_line(f, e))))
    if f.first_time:
        who = [Line((a.author, Words("（"), refs(urls, a.prs), Words("）"))) for a in f.first_time]
        blocks.append(Para(Line((Words("首次贡献者："), *joined(who, "、"), Words("。")))))
    prs = tuple(
        Row(
            (
                refs(urls, [d.number]),
                lined(
                    titled(d.content.title, to(d.number)), *flag({d.number: d.meta.failed_checks})
                ),
                Line(joined(map(TagCode, d.tags), " ")),
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
        Section(Words(f"{word}数据"), tuple(blocks)),
        Section(Words("全部 PR"), (TagFilter(tuple(f.tags.items()), len(r.digests)), every)),
    ]
    if r.failed:
        # Why each failed is the operator's to know: the run's log says it.
        failed = refs(urls, sorted(x.number for x in r.failed))
        said = Line(
            (
                Words("这些 PR 未能生成导读，表中没有它们，可直接阅读原 PR："),
                failed,
                Words("。"),
            )
        )
        sections.append(Section(Words("未能生成导读的 PR"), (Para(said),)))
    return sections


def _tag_table(r: WeeklyReport) -> Table:
    """Each tag's PRs, and with a last period stored, its PRs then (a tag gone since, at 0)."""
    f = r.facts
    if f.last is None:
        counts = _rows((tag, Words(str(count))) for tag, count in f.tags.items())
        return Table(("标签", "PR 数"), counts, ("", "num"), compact=True)
    before = f.last.tags
    gone = [tag for tag in before if tag not in f.tags]
    rows = _rows(
        (
            tag,
            Words(str(f.tags.get(tag, 0))),
            Words(str(before.get(tag, 0))),
            Words(_change(f.tags.get(tag, 0) - before.get(tag, 0))),
        )
        for tag in [*f.tags, *gone]
    )
    head = ("标签", "PR 数", f"{last_word(f)}", "变化")
    return Table(head, rows, ("", "num", "num", "num"), compact=True)


def _change(delta: int) -> str:
    return f"+{delta}" if delta > 0 else str(delta) if delta else "—"
