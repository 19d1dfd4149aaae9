"""Markdown and JSON from models only: no fetching, no model calls."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from prhub.digest.checks import LABELS
from prhub.model import PRDigest
from prhub.weekly.report import (
    WeeklyFacts,
    WeeklyReport,
    author_highlight,
    author_line,
    fact_risks,
    figures,
    key_rows,
    lead,
    risks,
)

# A code span as CommonMark reads it: a backtick run closed by the next run of the same length.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
# Everything str.splitlines() breaks at; a paragraph separator also ends a paragraph.
_BREAK = r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]"
_INLINE_MARK = re.compile(
    r"\\(?=[!-/:-@\[-`{-~]|$)"  # a backslash that would escape the next mark or break the line
    r"|[`*~$\[]"  # code, emphasis, strikethrough, GitHub math, links and images
    r"|_+"  # emphasis, unless inside a word
    r"|<(?=\S)"  # HTML and autolinks
    r"|&(?=#\d{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)"  # entities
)
# Renderers older than CommonMark keep a backslash before < and & but all read entities.
_ENTITIES = {"<": "&lt;", "&": "&amp;"}
# Marks that start a block only at the start of a line: headings, quotes, lists, rules.
_BLOCK_START = re.compile(r"^(?:#{1,6}(?=\s|$)|>|[-+](?=\s|$)|-(?=-))")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")
_HEADING_END = re.compile(r"(?:(?<=\s)|^)#+$")  # the closing #s of a heading would vanish
# Why grounding dropped something, as the footer says it, in the order it lists them.
DROP_REASONS = {
    "unknown_path": "输入中没有的路径",
    "unknown_identifier": "输入中没有的标识符",
    "mentioned_as_changed": "把仅被提及的文件说成改动",
    "unknown_number": "输入中没有的编号",
    "echoed_prompt": "照抄提示词",
}


# Invisible controls that reorder or hide text (bidi overrides and isolates, zero-width
# characters, byte-order marks): a title could read unlike what it says.
_HIDDEN = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible(text: str) -> str:
    """Text with its invisible controls named (‹U+202E›), so none acts unseen and none is lost."""
    return _HIDDEN.sub(lambda m: f"‹U+{ord(m.group()):04X}›", text)


def one_line(text: str | None) -> str:
    """Text on one line: each line or paragraph break, with the space around it, is one space."""
    return visible(re.sub(rf"\s*{_BREAK}\s*", " ", text or "").strip())


def paragraphs(text: str | None) -> list[str]:
    """Paragraphs, split at blank lines and paragraph separators, each on one line."""
    text = re.sub(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028]", "\n", text or "").replace("\u2029", "\n\n")
    return [p for p in map(one_line, re.split(r"\n\s*\n", text)) if p]


def md(text: str | None, *, table: bool = False) -> str:
    """Untrusted text as inert Markdown on one line: only its `code` spans stay markup."""
    text = one_line(text)
    out, last = [], 0
    for match in CODE_SPAN.finditer(text):
        out += [_escape(text[last : match.start()], last == 0, False), match.group(0)]
        last = match.end()
    out.append(_escape(text[last:], last == 0, True))
    escaped = "".join(out)
    # GFM splits table rows at pipes before it reads code spans, so those are escaped too.
    return escaped.replace("|", "\\|") if table else escaped


def _escape(text: str, starts_line: bool, ends_text: bool) -> str:
    def mark(match: re.Match[str]) -> str:
        found = match.group(0)
        if found[0] == "_" and _inside_word(text, match.start(), match.end()):
            return found  # snake_case stays readable: CommonMark cannot open or close there
        return _ENTITIES.get(found) or "".join("\\" + c for c in found)

    text = _INLINE_MARK.sub(mark, text)
    if starts_line:
        text = _ORDERED.sub(r"\1\\\2", _BLOCK_START.sub(r"\\\g<0>", text))
    return _HEADING_END.sub(r"\\\g<0>", text) if ends_text else text


def _inside_word(text: str, start: int, end: int) -> bool:
    return 0 < start and end < len(text) and _wordlike(text[start - 1]) and _wordlike(text[end])


def _wordlike(char: str) -> bool:
    # CommonMark's flanking rules: neither whitespace nor Unicode punctuation (P*) or symbol (S*).
    return not char.isspace() and unicodedata.category(char)[0] not in "PS"


def code(text: str | None, *, table: bool = False) -> str:
    """Text as one Markdown code span that shows it exactly, whatever backticks it holds."""
    text = one_line(text)
    if not text:
        return ""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    return span.replace("|", "\\|") if table else span


def pr_link(d: PRDigest) -> str:
    """The PR's web address: GitHub's own unless the payload gave an http(s) one."""
    if d.url.startswith(("https://", "http://")):
        return d.url
    return f"https://github.com/{d.repo}/pull/{d.number}"


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


def digest_markdown(d: PRDigest, tz: str = "Asia/Shanghai") -> str:
    """One digest as Markdown, in the shape of a reader's daily digest."""
    c = d.content
    lines = [
        f"### [#{d.number}]({pr_link(d)}) {md(c.title)}",
        "",
        f"原标题：{md(d.original_title)} · @{md(d.author)} · "
        + (f"合并于 {local_time(d.merged_at, tz)}" if d.merged_at else "未合并")
        + f" · +{d.additions} / −{d.deletions} · {d.changed_files} 个文件",
        "",
        f"**{c.verdict}**（约 {c.minutes} 分钟）· 重要性 **{c.importance:.1f}**/10："
        f"{md(c.importance_reason)}",
    ]
    for para in paragraphs(c.advice):
        lines += ["", md(para)]
    for heading, items, numbered in (
        ("值得关注的设计决策", c.design_decisions, True),
        ("风险", c.risks, False),
        ("评审讨论", c.discussion, False),
        ("后续跟进", c.follow_ups, False),
    ):
        if items:
            lines += ["", f"**{heading}**", ""]
            lines += [f"{i}. {md(x)}" if numbered else f"- {md(x)}" for i, x in enumerate(items, 1)]
    tags = " ".join(code(t) for t in d.tags) or "无"
    related = " ".join(f"#{n}" for n in c.related_prs)
    lines += ["", f"标签：{tags}" + (f" · 相关：{related}" if related else "")]
    lines += ["", f"<sub>{md(digest_footer(d))}</sub>", ""]
    return "\n".join(lines)


def digest_json(d: PRDigest) -> str:
    return d.model_dump_json(indent=2) + "\n"


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


def generated(r: WeeklyReport) -> str:
    """· 生成于 TIME for the meta line, when the report's content has a time it was made."""
    moment = r.meta.generated_at
    return f" · 生成于 {local_time(moment, r.facts.tz)}" if moment else ""


def pr_url(r: WeeklyReport, number: int) -> str:
    """A PR's address: its digest's, else next to the other PRs of the report."""
    urls = {d.number: pr_link(d) for d in r.digests}
    base = next(
        (u.rsplit("/pull/", 1)[0] for u in urls.values() if "/pull/" in u),
        f"https://github.com/{r.facts.repo}",
    )
    return urls.get(number, f"{base}/pull/{number}")


def weekly_markdown(r: WeeklyReport) -> str:
    """The weekly report: lead, highlights and risks first, then the full report with its tables."""
    f, n = r.facts, r.narrative
    first, last = period(r)
    meta = (
        f"仓库：{md(f.repo)} · 周期：{first} 至 {last}（{md(f.tz)}） · 来源 PR：{f.pr_count} · "
        f"重点 PR：{len(f.key_prs)}{generated(r)}"
    )
    lines = [f"# {md(weekly_title(r))}", ""]
    if n is not None:
        lines += [md(n.lead or lead(f)), ""]
    lines += [meta, ""]
    if f.pr_count == 0 and not r.failed:
        lines += ["本周没有合入任何 PR。", ""]
        return "\n".join(lines)
    if n is None:
        lines += [figures(f, md), ""]
    else:
        highlights = _bullets(n.highlights)
        if concentration := author_highlight(f, md):
            highlights.append(f"- {concentration}")
        lines += _section("## 本周亮点", highlights)
        lines += _section("## 风险观察", _bullets(n.risks or fact_risks(f)))
        lines += ["## 完整周报", ""]
        full = [
            ("执行摘要", [f"{figures(f, md)}{md(n.summary)}"]),
            ("本周重点变化", _bullets(n.key_changes)),
            ("模块与主题趋势", _trends(r)),
            ("风险观察", _bullets(risks(n.risks, f))),
            ("重点 PR 速览", _key_pr_table(r)),
            ("后续建议", [f"{i}. {md(x)}" for i, x in enumerate(n.follow_ups, 1)]),
        ]
        shown = [(title, body) for title, body in full if body]
        for i, (title, body) in enumerate(shown, 1):
            lines += _section(f"### {i}. {title}", body)
    lines += _data_section(f)
    lines += _all_prs(r)
    if r.failed:
        lines += ["## 未能生成导读的 PR", ""]
        lines += [f"- #{x.number}：{md(x.error)}" for x in r.failed] + [""]
        lines += ["重新运行同一命令只会重试这些 PR。", ""]
    lines += [f"<sub>{md(weekly_footer(r))}</sub>", ""]
    return "\n".join(lines)


def _section(heading: str, body: list[str]) -> list[str]:
    """A heading and its lines, or nothing when there are no lines: no empty sections."""
    return [heading, "", *body, ""] if body else []


def _bullets(items: list[str]) -> list[str]:
    return [f"- {md(x)}" for x in items]


def _refs(numbers: list[int]) -> str:
    return "、".join(f"#{x}" for x in numbers) or "—"


def _trends(r: WeeklyReport) -> list[str]:
    """The trends table; no lines, so no section, when the model found no trend."""
    trends = r.narrative.trends if r.narrative else []
    if not trends:
        return []
    return ["| 主题 | 代表 PR | 趋势判断 |", "| --- | --- | --- |"] + [
        f"| {md(t.theme, table=True)} | {_refs(t.prs)} | {md(t.judgement, table=True)} |"
        for t in trends
    ]


def _key_pr_table(r: WeeklyReport) -> list[str]:
    rows = key_rows(r)
    if not rows:
        return []
    lines = ["| PR | 标题/主题 | 重要性 | 关键观察 |", "| --- | --- | --- | --- |"]
    for row in rows:
        refs = "/".join(f"[#{n}]({pr_url(r, n)})" for n in row.numbers)
        score = f"{row.importance:.1f}" if row.importance is not None else "—"
        lines.append(
            f"| {refs} | {md(row.topic, table=True)} | {score} | {md(row.note, table=True)} |"
        )
    return lines


def _data_section(f: WeeklyFacts) -> list[str]:
    lines = ["## 本周数据", "", "| 标签 | PR 数 |", "| --- | --- |"]
    lines += [f"| {md(tag, table=True)} | {count} |" for tag, count in f.tags.items()]
    if f.hot_files:
        lines += ["", "| 热点文件 | PR |", "| --- | --- |"]
        lines += [f"| {code(h.path, table=True)} | {_refs(h.prs)} |" for h in f.hot_files]
    if f.authors:
        lines += ["", author_line(f, md)]
    if f.first_time:
        names = "、".join(f"{md(a.author)}（{_refs(a.prs)}）" for a in f.first_time)
        lines += ["", f"首次贡献者：{names}。"]
    return [*lines, ""]


def _all_prs(r: WeeklyReport) -> list[str]:
    lines = [
        "## 全部 PR",
        "",
        "| PR | 导读标题 | 标签 | 阅读建议 | 重要性 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in r.digests:
        tags = " ".join(code(t, table=True) for t in d.tags)
        lines.append(
            f"| [#{d.number}]({pr_link(d)}) | {md(d.content.title, table=True)} | {tags} | "
            f"{d.content.verdict} | {d.content.importance:.1f} |"
        )
    return [*lines, ""]


def weekly_json(r: WeeklyReport) -> str:
    return r.model_dump_json(indent=2) + "\n"
