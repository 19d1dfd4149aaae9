"""The weekly report's sections: the banner, the model's prose around the facts, the tables."""

from __future__ import annotations

import re
from collections.abc import Iterable

from prhub.model import Trend, WeeklyReport
from prhub.publish.footers import flag
from prhub.publish.parts import (
    CODE_SPAN,
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
    one_line,
    refs,
    titled,
)
from prhub.publish.rows import KeyRow, key_rows
from prhub.tags import tag_name
from prhub.text import cited
from prhub.weekly.prose import author_highlight, author_line, fact_headlines, figures, risks


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
    if not said:
        return ""
    return f"⚠ 本报告的 {len(have) + len(missing)} 个 PR 中，{'；'.join(said)}。"


def _listed(numbers: list[int], most: int = 10) -> str:
    shown = "、".join(f"#{n}" for n in numbers[:most])
    return shown + (f" 等 {len(numbers)} 个" if len(numbers) > most else "")


FACT_RISKS = "由数据标出的风险"
# Where a risk's first clause ends; a head before a colon ("回滚风险：…") names the risk whole.
_CLAUSE = re.compile(r"[，,；;。！？!?]")
_HEAD = re.compile(r"[：:]")
# What a cut never splits: code, a PR number, a word or path in Latin letters.
_WHOLE = re.compile(rf"{CODE_SPAN.pattern}|[A-Za-z0-9_./#-]+")
SHORT = 48  # characters a short risk keeps at most, before the PRs it cites


def headline(risk: str) -> str:
    """A risk on one short line: the head before its colon, else its first clause, cut near
    SHORT characters; the PRs it cites follow when the short form left them out."""
    text = one_line(risk)
    masked = CODE_SPAN.sub(lambda m: "`" * len(m.group(0)), text)  # no boundary inside code
    head = _HEAD.search(masked)
    if head and 4 <= head.start() <= SHORT:
        short = text[: head.start()]
    else:
        end = next((m.start() for m in _CLAUSE.finditer(masked) if m.start() >= 8), len(text))
        short = text[:end] if end <= SHORT else _cut(text)
    left = [n for n in cited(text) if f"#{n}" not in short]
    also = "（" + "、".join(f"#{n}" for n in left) + "）" if left else ""
    return short.rstrip() + also + ("" if short.endswith("…") and not also else "。")


def _cut(text: str) -> str:
    """The text cut at SHORT characters with an ellipsis, never inside code, a number or a word."""
    cut = SHORT
    for m in _WHOLE.finditer(text):
        if m.start() < cut < m.end():
            cut = m.start() if m.start() > SHORT // 2 else m.end()
            break
    return text[:cut].rstrip(" 、，,") + "…"


def narrative_sections(r: WeeklyReport, urls: Links, to: DigestLink) -> list[Section]:
    """The sections around the model's prose; one with nothing to show is left out."""
    f, n = r.facts, r.narrative
    if n is None:
        return []
    standout = [filled(lambda e: author_highlight(f, e))] if author_highlight(f) else []
    highlights: tuple[Text, ...] = (*n.highlights, *standout)
    # The model's risks, else the facts' in short; the full report adds the ones it leaves.
    flagged = () if n.risks else tuple(fact_headlines(f))
    added = tuple(risks(n.risks, f)[len(n.risks) :])
    full_risks = Items(tuple(n.risks), long=added, label=FACT_RISKS)
    full: list[tuple[str, Block | None]] = [
        ("执行摘要", Para(Line((*filled(lambda e: figures(f, e)).parts, n.summary)))),
        ("本周重点变化", Items(tuple(n.key_changes)) if n.key_changes else None),
        ("模块与主题趋势", _trends(n.trends, urls) if n.trends else None),
        ("风险观察", full_risks if n.risks or added else None),
        ("重点 PR 速览", _key_table(r, urls, to)),
        ("后续建议", Items(tuple(n.follow_ups), numbered=True) if n.follow_ups else None),
    ]
    shown = [(title, block) for title, block in full if block is not None]
    sections = []
    if highlights:
        sections.append(Section(Words("本周亮点"), (Items(highlights),), callout="highlights"))
    if n.risks or flagged:
        top = Items(tuple(map(headline, n.risks)), long=flagged, label=FACT_RISKS)
        sections.append(Section(Words("风险观察"), (top,), callout="risks"))
    numbered = [Section(Words(f"{i}. {t}"), (b,), level=3) for i, (t, b) in enumerate(shown, 1)]
    return [*sections, Section(Words("完整周报"), sections=tuple(numbered))]


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
    counts = _rows((tag, Words(str(count))) for tag, count in f.tags.items())
    blocks: list[Block] = [Table(("标签", "PR 数"), counts, ("", "num"), compact=True)]
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
        Section(Words("本周数据"), tuple(blocks)),
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
