"""The weekly prose around the computed facts, written through `llm` and grounded."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import groupby

from prhub.config import Settings
from prhub.digest.ground import SPAN, excise, files, names
from prhub.llm.llm import LLM, schema_text
from prhub.llm.prompt import MARGIN, task_prompt
from prhub.model import Drop, KeyPRNote, PRDigest, Trend, Usage, WeeklyFacts, WeeklyNarrative
from prhub.prepare.redact import scrub_reply
from prhub.prepare.tokens import count
from prhub.text import PR_COUNT, PR_REF, cited, sentences
from prhub.weekly.prose import figures, lead, top_authors

log = logging.getLogger("prhub")
# A PR's share of the weekly prompt: the budget over the week's PRs, within these bounds. Below
# LINE_MIN the week is written in groups; LINE_MAX keeps a small week's prompt near its cost.
LINE_MIN = 150
LINE_MAX = 180
# A digest's lists, in the order a short share keeps them, with the label each carries.
SECTIONS = (("风险", "risks"), ("设计", "design_decisions"), ("后续", "follow_ups"))
Messages = list[dict[str, str]]
# Words that crown one author: wrong when several tie for the most PRs.
CROWNS = ("最多产", "最高产", "产出最多")
# digest_line's shape, as a model may copy it back; the escaped brackets are render's.
COPIED_LINE = re.compile(
    r"#(?P<number>\d+)\s*\\?\[[^\]]*\]\s*(?P<title>[^|\n]+?)\s*\|\s*(?:精读|快速浏览|可跳过)，"
    r"重要性\s*[\d.]+：(?P<reason>[^|\n]*)(?:\s*\|\s*(?:风险|设计|后续|另有)[^\n]*)?"
)


def digest_line(d: PRDigest, settings: Settings, share: int = LINE_MIN) -> str:
    """One PR as the weekly prompt sees it, within `share` tokens.

    Whole items in priority order (verdict and reason, risks, design decisions, follow-ups);
    an item that does not fit is left out, never cut, and the line says how many were.
    """
    c = d.content
    head = _head(d)
    items = [("", f"{c.verdict}，重要性 {c.importance:.1f}：{c.importance_reason}")]
    items += [(label, item) for label, name in SECTIONS for item in getattr(c, name)]
    kept: list[tuple[str, str]] = []
    left = 0
    for item in items:
        if count(_line(head, [*kept, item], 0), settings.encoding) <= share:
            kept.append(item)
        else:
            left += 1
    # The note of what was left out takes room too: the last items kept make way for it.
    while left and kept and count(_line(head, kept, left), settings.encoding) > share:
        kept.pop()
        left += 1
    return _line(head, kept, left)


def _head(d: PRDigest) -> str:
    return f"#{d.number} [{', '.join(d.tags)}] {d.content.title}"


def _line(head: str, items: list[tuple[str, str]], left: int) -> str:
    parts = [head]
    for label, group in groupby(items, key=lambda item: item[0]):
        texts = [" ".join(text.split()) for _, text in group]  # one line a PR
        parts.append(f"{label}：" + "；".join(texts) if label else "；".join(texts))
    if left:
        parts.append(f"另有 {left} 条未列出")
    return " | ".join(parts)


def line_share(room: int, digests: int) -> int:
    """Tokens for each PR's line: the room the instructions leave, split over the PRs."""
    return max(LINE_MIN, min(LINE_MAX, room // max(1, digests) - 2))


def narrate(
    facts: WeeklyFacts,
    digests: list[PRDigest],
    settings: Settings,
    llm: LLM,
    changed: dict[int, set[str]] | None = None,
) -> tuple[WeeklyNarrative, Usage, int]:
    """The week's narrative, grounded in its facts; with its usage and the citations dropped.
    `changed` holds each PR's changed paths, to judge what a sentence credits to a PR.

    One call when the week's digests fit the budget, else one per group and a final one.
    """
    room = settings.input_budget - _fixed_tokens(facts, settings)
    lines = [digest_line(d, settings, line_share(room, len(digests))) for d in digests]
    sizes = [count(line, settings.encoding) + 2 for line in lines]
    if sum(sizes) <= room:
        narrative, usage = llm.complete(
            _messages(facts, lines, [], settings, llm.mode), WeeklyNarrative
        )
        grounded, dropped = ground_weekly(narrative, facts, changed)
        return assemble(scrub_reply(grounded)[0], facts), usage, _recorded(dropped)

    groups: list[list[str]] = [[]]
    used = 0
    for line, size in zip(lines, sizes, strict=True):
        if groups[-1] and used + size > room:
            groups.append([])
            used = 0
        groups[-1].append(line)
        used += size
    with ThreadPoolExecutor(max_workers=min(len(groups), settings.jobs)) as pool:
        drafts = list(
            pool.map(
                lambda g: llm.complete(
                    _messages(facts, g, [], settings, llm.mode), WeeklyNarrative
                ),
                groups,
            )
        )
    usage = sum((u for _, u in drafts), Usage())
    part = max(200, (room // 2) // len(drafts))
    partials = [whole_lines(draft_text(n), part, settings.encoding) for n, _ in drafts]
    ranked = sorted(digests, key=lambda d: -d.content.importance)
    short = [_head(d) for d in ranked]
    while short and count("\n".join(short + partials), settings.encoding) > room:
        short = short[: len(short) * 3 // 4]  # keep the titles that fit, most important first
    narrative, final = llm.complete(
        _messages(facts, short, partials, settings, llm.mode), WeeklyNarrative
    )
    grounded, dropped = ground_weekly(narrative, facts, changed)
    return assemble(scrub_reply(grounded)[0], facts), usage + final, _recorded(dropped)


def _recorded(dropped: list[Drop]) -> int:
    """Logs what grounding dropped from the narrative (a secret in it redacted); its count."""
    for d in dropped:
        d = scrub_reply(d)[0]
        log.info("weekly: grounding dropped from %s (%s): %s", d.field, d.reason, d.text)
    return len(dropped)


def planned_tokens(facts: WeeklyFacts, digests: int, settings: Settings) -> tuple[int, int]:
    """The calls and prompt tokens the narrative of `digests` PRs would take, before they exist.

    Each PR's line is counted at its full share, and the final call of a map-reduce at the
    whole budget: an upper bound, as a cost estimate should be.
    """
    if not digests:
        return 0, 0
    fixed = _fixed_tokens(facts, settings)
    room = settings.input_budget - fixed
    size = line_share(room, digests) + 2
    if digests * size <= room:
        return 1, fixed + digests * size
    groups = -(-digests // max(1, room // size))
    return groups + 1, groups * fixed + digests * size + settings.input_budget


def draft_text(n: WeeklyNarrative) -> str:
    """A partial narrative as text for the final call of a map-reduce."""
    parts = [n.lead, n.summary, *n.highlights, *n.key_changes, *n.risks]
    return "\n".join(filter(None, parts + [f"{t.theme}：{t.judgement}" for t in n.trends]))


def whole_lines(text: str, limit: int, encoding: str) -> str:
    """The text's first lines that fit in `limit` tokens, never a line cut; says how many went."""
    lines = text.split("\n")
    for n in range(len(lines), -1, -1):
        left = len(lines) - n
        joined = "\n".join(lines[:n] + ([f"（另有 {left} 段未列出）"] if left else []))
        if n == 0 or count(joined, encoding) <= limit:
            return joined
    return text


def _messages(
    facts: WeeklyFacts, lines: list[str], partials: list[str], settings: Settings, mode: str
) -> Messages:
    period = (
        f"{facts.start:%Y-%m-%d %H:%M} 至 {facts.end:%Y-%m-%d %H:%M}（{facts.tz}，不含结束时刻）"
    )
    return task_prompt(settings, "weekly").messages(
        facts=facts,
        period=period,
        digests=lines,
        partials=partials,
        figures=figures(facts),
        top=top_authors(facts),
        schema=schema_text(mode, WeeklyNarrative),
    )


def _fixed_tokens(facts: WeeklyFacts, settings: Settings) -> int:
    empty = _messages(facts, [], [], settings, "json_object")  # the longest instructions
    return count("\n".join(m["content"] for m in empty), settings.encoding) + MARGIN


def assemble(n: WeeklyNarrative, facts: WeeklyFacts) -> WeeklyNarrative:
    """The narrative as the report prints it, whatever the model wrote.

    A tie for the most PRs crowns no author; the summary leaves the figures printed before it to
    them; each paragraph appears once, where the report shows it first; the lead is never empty.
    """
    n = _edit(n, plain)
    if len(top_authors(facts)) > 1:
        n = _edit(n, lambda text: _without(text, lambda s: any(c in s for c in CROWNS)))
    n = n.model_copy(update={"summary": _without(n.summary, lambda s: restates(s, facts))})
    n = _once(n)
    return n if n.lead else n.model_copy(update={"lead": lead(facts)})


def plain(text: str) -> str:
    """A PR's line of the prompt (`#N [tags] title | verdict，重要性 x：reason | 风险：…`),
    which small models copy into highlights, as sentences: `#N title。reason`."""

    def sentence(m: re.Match[str]) -> str:
        return f"#{m['number']} {m['title'].strip().rstrip('。')}。{m['reason'].strip()}"

    return COPIED_LINE.sub(sentence, text)


def restates(sentence: str, facts: WeeklyFacts) -> bool:
    """True when a sentence repeats the computed figures line: PR count, tags, mean importance."""
    if "平均重要性" in sentence or "标签分布" in sentence:
        return True
    if any(int(m[1]) == facts.pr_count for m in PR_COUNT.finditer(sentence)):
        return True
    mean = facts.mean_importance
    return mean is not None and bool(re.search(rf"(?<![\d.]){mean:.2f}(?!\d)", sentence))


def _without(text: str, drop: Callable[[str], bool]) -> str:
    return "".join(s for s in sentences(text) if not drop(s)).strip()


def _edit(n: WeeklyNarrative, change: Callable[[str], str]) -> WeeklyNarrative:
    """Every text of the narrative changed by `change`; list items left empty go."""

    def items(texts: list[str]) -> list[str]:
        return [t for t in map(change, texts) if t]

    return n.model_copy(
        update={
            "lead": change(n.lead),
            "summary": change(n.summary),
            "highlights": items(n.highlights),
            "key_changes": items(n.key_changes),
            "risks": items(n.risks),
            "follow_ups": items(n.follow_ups),
            "trends": [
                t.model_copy(update={"judgement": j})
                for t in n.trends
                if (j := change(t.judgement))
            ],
            "key_prs": [
                k.model_copy(update={"note": note}) for k in n.key_prs if (note := change(k.note))
            ],
        }
    )


def _once(n: WeeklyNarrative) -> WeeklyNarrative:
    """Each paragraph kept where the report prints it first: the lead, highlights, risks, the
    summary, key changes, trends, key-PR notes, then follow-ups."""
    seen: set[str] = set()

    def first(text: str) -> str:
        key = re.sub(r"[\W_]+", "", text).lower()
        if not key or key in seen:
            return ""
        seen.add(key)
        return text

    lead_text = first(n.lead)
    highlights = [t for t in n.highlights if first(t)]
    risks = [t for t in n.risks if first(t)]
    summary = first(n.summary)
    return n.model_copy(
        update={
            "lead": lead_text,
            "highlights": highlights,
            "risks": risks,
            "summary": summary,
            "key_changes": [t for t in n.key_changes if first(t)],
            "trends": [t for t in n.trends if first(t.judgement)],
            "key_prs": [k for k in n.key_prs if first(k.note)],
            "follow_ups": [t for t in n.follow_ups if first(t)],
        }
    )


def fact_counts(facts: WeeklyFacts) -> set[int]:
    """Every PR count the week's facts hold: the only ones a narrative may state."""
    sizes = [len(facts.key_prs), len(facts.untested), len(facts.reverts), len(facts.breaking)]
    return {
        facts.pr_count,
        *sizes,
        *facts.tags.values(),
        *(len(a.prs) for a in [*facts.authors, *facts.first_time]),
        *(len(h.prs) for h in [*facts.hot_files, *facts.hot_dirs]),
    }


def credits_wrongly(text: str, changed: dict[int, set[str]], own: int | None = None) -> bool:
    """Whether `text` cites PRs (or is the row of PR `own`) and a path none of them changed."""
    numbers = {*cited(text), *({own} if own is not None else set())}
    paths = [*files(text), *(s.strip() for s in SPAN.findall(text) if "/" in s or files(s))]
    if not numbers or not paths or not numbers <= changed.keys():
        return False
    theirs = {p for n in numbers for p in changed[n]}
    return not all(any(names(p, path) for p in theirs) for path in paths)


def ground_weekly(
    n: WeeklyNarrative, facts: WeeklyFacts, changed: dict[int, set[str]] | None = None
) -> tuple[WeeklyNarrative, list[Drop]]:
    """Removes citations of PRs not in the week and PR counts the facts do not hold, each with
    the clause that only points at it, else with its sentence or item (`excise`); with
    `changed` (each PR's changed paths), a sentence or item that credits a path to PRs that did
    not change it goes whole.

    Returns the narrative and what was dropped.
    """
    week, figures = set(facts.prs), fact_counts(facts)
    drops: list[Drop] = []

    def judged(field: str, text: str, own: int | None = None) -> str | None:
        """`text` as it may stand, or None when it goes; each drop recorded."""
        if changed is not None and credits_wrongly(text, changed, own):
            drops.append(Drop(field=field, text=text.strip(), reason="mentioned_as_changed"))
            return None
        left, gone = excise(text, PR_REF, lambda m: int(m.group(1)) in week)
        if left is not None:
            left, counts = excise(left, PR_COUNT, lambda m: int(m.group(1)) in figures)
            gone += counts
        if left is None:
            drops.append(Drop(field=field, text=text.strip(), reason="unknown_number"))
        else:
            drops.extend(Drop(field=field, text=g, reason="unknown_number") for g in gone)
        return left

    def prose(field: str, text: str) -> str:
        kept = [judged(field, sentence) for sentence in sentences(text)]
        return "".join(k for k in kept if k is not None).strip()

    def items(field: str, values: list[str]) -> list[str]:
        kept = [judged(field, value) for value in values]
        return [k.strip() for k in kept if k is not None and k.strip()]

    def outside(field: str, numbers: list[int]) -> None:
        drops.extend(Drop(field=field, text=f"#{p}", reason="unknown_number") for p in numbers)

    def trend(t: Trend) -> Trend | None:
        outside("trends", [p for p in t.prs if p not in week])
        theme = judged("trends", t.theme)
        if theme is None:
            return None
        prs = [p for p in t.prs if p in week]
        judgement = prose("trends", t.judgement)
        return t.model_copy(update={"theme": theme.strip(), "prs": prs, "judgement": judgement})

    def key_pr(k: KeyPRNote) -> KeyPRNote | None:
        if k.number not in week:
            outside("key_prs", [k.number])
            return None
        topic = judged("key_prs", k.topic)
        if topic is None:
            return None
        note = judged("key_prs", k.note, k.number) or ""
        return k.model_copy(update={"topic": topic.strip(), "note": note.strip()})

    # In the order of the fields, so the drops are too.
    lead_text = prose("lead", n.lead)
    summary = prose("summary", n.summary)
    highlights = items("highlights", n.highlights)
    key_changes = items("key_changes", n.key_changes)
    trends = [t for t in map(trend, n.trends) if t is not None]
    risks = items("risks", n.risks)
    key_prs = [k for k in map(key_pr, n.key_prs) if k is not None]
    follow_ups = items("follow_ups", n.follow_ups)
    grounded = WeeklyNarrative(
        lead=lead_text,
        summary=summary,
        highlights=highlights,
        key_changes=key_changes,
        trends=trends,
        risks=risks,
        key_prs=key_prs,
        follow_ups=follow_ups,
    )
    return grounded, drops
