"""The weekly prose around the computed facts, written through `llm` and grounded."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from prhub.config import Settings
from prhub.llm.llm import LLM, schema_text
from prhub.llm.prompt import MARGIN, task_prompt
from prhub.model import Drop, PRDigest, Usage, WeeklyFacts, WeeklyNarrative
from prhub.prepare.redact import scrub_reply
from prhub.prepare.tokens import count
from prhub.text import PR_COUNT, sentences
from prhub.weekly.ground import ground_weekly
from prhub.weekly.lines import JOIN, fits, fitted, groups
from prhub.weekly.prose import figures, lead, period_word, top_authors

log = logging.getLogger("prhub")
# Tokens a PR's line is counted at in a dry run's estimate, made before the digests exist: a
# strong model's digests of ten verl PRs made lines of 144 to 1,062 tokens, 558 on average.
LINE_ESTIMATE = 800
Messages = list[dict[str, str]]
# Words that crown one author: wrong when several tie for the most PRs.
CROWNS = ("最多产", "最高产", "产出最多")
# digest_line's shape, as a model may copy it back; the escaped brackets are render's.
COPIED_LINE = re.compile(
    r"#(?P<number>\d+)\s*\\?\[[^\]]*\]\s*(?P<title>[^|\n]+?)\s*\|\s*(?:精读|快速浏览|可跳过)，"
    r"重要性\s*[\d.]+：(?P<reason>[^|\n]*)(?:\s*\|\s*(?:风险|设计|后续|讨论|另有)[^\n]*)?"
)


def narrate(
    facts: WeeklyFacts,
    digests: list[PRDigest],
    settings: Settings,
    llm: LLM,
    changed: dict[int, set[str]] | None = None,
) -> tuple[WeeklyNarrative, Usage, list[Drop]]:
    """The week's narrative, grounded in its facts; with its usage and what grounding dropped.
    `changed` holds each PR's changed paths, to judge what a sentence credits to a PR.

    One call when every PR's line fits the budget with at least its least share (each whole
    when they all fit, else a fair share each); else one call per group and a final one.
    """
    room = settings.input_budget - _fixed_tokens(facts, settings)
    if fits(digests, settings, room):
        lines = fitted(digests, settings, room)
        narrative, usage = llm.complete(
            _messages(facts, lines, [], settings, llm.mode), WeeklyNarrative
        )
        grounded, dropped = ground_weekly(narrative, facts, changed)
        return assemble(scrub_reply(grounded)[0], facts), usage, _recorded(dropped)

    parts = [fitted(g, settings, room) for g in groups(digests, settings, room)]
    with ThreadPoolExecutor(max_workers=min(len(parts), settings.jobs)) as pool:
        drafts = list(
            pool.map(
                lambda g: llm.complete(
                    _messages(facts, g, [], settings, llm.mode), WeeklyNarrative
                ),
                parts,
            )
        )
    usage = sum((u for _, u in drafts), Usage())
    part = max(200, (room // 2) // len(drafts))
    partials = [whole_lines(draft_text(n), part, settings.encoding) for n, _ in drafts]
    ranked = sorted(digests, key=lambda d: -d.content.importance)
    short = [f"#{d.number} [{', '.join(d.tags)}] {d.content.title}" for d in ranked]
    while short and count("\n".join(short + partials), settings.encoding) > room:
        short = short[: len(short) * 3 // 4]  # keep the titles that fit, most important first
    narrative, final = llm.complete(
        _messages(facts, short, partials, settings, llm.mode), WeeklyNarrative
    )
    grounded, dropped = ground_weekly(narrative, facts, changed)
    return assemble(scrub_reply(grounded)[0], facts), usage + final, _recorded(dropped)


def _recorded(dropped: list[Drop]) -> list[Drop]:
    """What grounding dropped from the narrative, each logged (a secret in it redacted)."""
    dropped = [scrub_reply(d)[0] for d in dropped]
    for d in dropped:
        log.info("weekly: grounding dropped from %s (%s): %s", d.field, d.reason, d.text)
    return dropped


def planned_tokens(facts: WeeklyFacts, digests: int, settings: Settings) -> tuple[int, int]:
    """The calls and prompt tokens the narrative of `digests` PRs would take, before they exist.

    Each PR's line is counted at LINE_ESTIMATE, within the room the instructions leave, and
    the final call of a map-reduce at the whole budget: an upper bound, as a cost estimate
    should be.
    """
    if not digests:
        return 0, 0
    fixed = _fixed_tokens(facts, settings)
    room = settings.input_budget - fixed
    size = LINE_ESTIMATE + JOIN
    if digests * min(size, 150 + JOIN) <= room:
        return 1, fixed + min(room, digests * size)
    each = room // (150 + JOIN)
    calls = -(-digests // max(1, each))
    return calls + 1, calls * settings.input_budget + settings.input_budget


def draft_text(n: WeeklyNarrative) -> str:
    """A partial narrative as text for the final call of a map-reduce."""
    parts = [n.lead, n.summary, *n.highlights, *n.key_changes, *(r.text for r in n.risks)]
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
        word=period_word(facts),
        last=last_lines(facts),
        schema=schema_text(mode, WeeklyNarrative),
    )


def last_lines(facts: WeeklyFacts) -> list[str]:
    """The last period's report as the prompt tells it: its tag counts against this period's,
    its risks and its follow-ups, a line each."""
    last = facts.last
    if last is None:
        return []
    tags = sorted(set(last.tags) | set(facts.tags), key=lambda t: -facts.tags.get(t, 0))
    prev, word = ("上周", "本周") if facts.week is not None else ("上期", "本期")
    counts = "，".join(f"{t} {facts.tags.get(t, 0)}（{prev} {last.tags.get(t, 0)}）" for t in tags)
    return [
        f"{prev}合入 PR 数：{len(last.prs)}；各标签{word} PR 数（{prev}）：{counts or '无'}",
        *(f"{prev}风险：{' '.join(r.split())}" for r in last.risks),
        *(f"{prev}后续建议：{' '.join(f.split())}" for f in last.follow_ups),
    ]


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
            "risks": [
                r.model_copy(update={"text": text, "headline": change(r.headline)})
                for r in n.risks
                if (text := change(r.text))
            ],
            "follow_ups": items(n.follow_ups),
            "carried_over": [
                f.model_copy(update={"note": note})
                for f in n.carried_over
                if (note := change(f.note))
            ],
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
    summary, key changes, trends, key-PR notes, then follow-ups (a look back at the last
    period says what it says of its own items, and is left as it is)."""
    seen: set[str] = set()

    def first(text: str) -> str:
        key = re.sub(r"[\W_]+", "", text).lower()
        if not key or key in seen:
            return ""
        seen.add(key)
        return text

    lead_text = first(n.lead)
    highlights = [t for t in n.highlights if first(t)]
    risks = [r for r in n.risks if first(r.text)]
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
