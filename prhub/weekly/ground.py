"""Grounding a week's narrative: PR numbers of the period (and, where it looks back, of the
last), PR counts the facts hold, paths credited to PRs that changed them; each drop recorded."""

from __future__ import annotations

import re

from prhub.digest.claims import SPAN, VERSIONS, files, names
from prhub.digest.ground import excise
from prhub.model import Drop, Followed, KeyPRNote, Risk, Trend, WeeklyFacts, WeeklyNarrative
from prhub.text import PR_COUNT, PR_REF, cited, sentences

# The narrative's sections in the order the report shows them, as grounding names them.
SECTIONS = (
    "lead",
    "summary",
    "highlights",
    "key_changes",
    "trends",
    "risks",
    "key_prs",
    "follow_ups",
    "carried_over",
)


def fact_counts(facts: WeeklyFacts) -> set[int]:
    """Every PR count the week's facts hold: the only ones a narrative may state."""
    sizes = [len(facts.key_prs), len(facts.untested), len(facts.reverts), len(facts.breaking)]
    last = [len(facts.last.prs), *facts.last.tags.values()] if facts.last else []
    return {
        facts.pr_count,
        *sizes,
        *last,
        *facts.tags.values(),
        *(len(a.prs) for a in [*facts.authors, *facts.first_time]),
        *(len(h.prs) for h in [*facts.hot_files, *facts.hot_dirs]),
    }


def credited_paths(text: str, changed: dict[int, set[str]]) -> list[str]:
    """The paths `text` credits to a PR: paths with their folder, and bare file names that a
    changed file of the week bears (a bare name no PR changed is a word, not a claim); a
    version pair is no path."""
    spans = [s.strip() for s in SPAN.findall(text)]
    said = [*files(text), *(s for s in spans if ("/" in s and not _version(s)) or files(s))]
    every = {p for paths in changed.values() for p in paths}
    return [p for p in said if "/" in p or any(names(q, p) for q in every)]


def _version(text: str) -> bool:
    return re.fullmatch(VERSIONS, text) is not None


def credits_wrongly(text: str, changed: dict[int, set[str]], own: int | None = None) -> bool:
    """Whether `text` cites PRs (or is the row of PR `own`) and a path none of them changed."""
    numbers = {*cited(text), *({own} if own is not None else set())}
    paths = credited_paths(text, changed)
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
    not change it goes whole. What looks back at the last period may cite its PRs too; with
    no last period, it goes.

    Returns the narrative and what was dropped.
    """
    # The PRs a revert of the period undoes may be cited too, wherever they were merged.
    week = set(facts.prs) | {r.reverted for r in facts.reverts if r.reverted}
    figures = fact_counts(facts)
    both = week | set(facts.last.prs if facts.last else [])
    drops: list[Drop] = []

    def judged(field: str, text: str, own: int | None = None, known: set[int] = week) -> str | None:
        """`text` as it may stand, or None when it goes; each drop recorded."""
        if changed is not None and credits_wrongly(text, changed, own):
            drops.append(Drop(field=field, text=text.strip(), reason="mentioned_as_changed"))
            return None
        left, gone = excise(text, PR_REF, lambda m: int(m.group(1)) in known)
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

    def risk(r: Risk) -> Risk | None:
        text = judged("risks", r.text)
        if text is None or not text.strip():
            return None
        # A headline that cannot stand leaves the risk without one: the report uses its text.
        headline = judged("risk_headlines", r.headline) if r.headline.strip() else ""
        return Risk(headline=(headline or "").strip(), text=text.strip())

    def key_pr(k: KeyPRNote) -> KeyPRNote | None:
        if k.number not in week:
            outside("key_prs", [k.number])
            return None
        topic = judged("key_prs", k.topic)
        if topic is None:
            return None
        note = judged("key_prs", k.note, k.number) or ""
        return k.model_copy(update={"topic": topic.strip(), "note": note.strip()})

    def followed(f: Followed) -> Followed | None:
        if facts.last is None:  # nothing to look back at: the model made it up
            drops.append(Drop(field="carried_over", text=f.item, reason="no_previous"))
            return None
        outside("carried_over", [p for p in f.prs if p not in week])
        prs = [p for p in f.prs if p in week]
        item = judged("carried_over", f.item, known=both)
        note = judged("carried_over", f.note, known=both)
        if item is None or note is None:
            return None
        if f.status != "仍未跟进" and not prs:  # taken up, by no PR of this period
            drops.append(Drop(field="carried_over", text=f.item, reason="not_taken_up"))
            return None
        return f.model_copy(update={"item": item.strip(), "note": note.strip(), "prs": prs})

    # In the order of the fields, so the drops are too.
    lead_text = prose("lead", n.lead)
    summary = prose("summary", n.summary)
    highlights = items("highlights", n.highlights)
    key_changes = items("key_changes", n.key_changes)
    trends = [t for t in map(trend, n.trends) if t is not None]
    risks = [r for r in map(risk, n.risks) if r is not None]
    key_prs = [k for k in map(key_pr, n.key_prs) if k is not None]
    follow_ups = items("follow_ups", n.follow_ups)
    carried = [f for f in map(followed, n.carried_over) if f is not None]
    grounded = WeeklyNarrative(
        lead=lead_text,
        summary=summary,
        highlights=highlights,
        key_changes=key_changes,
        trends=trends,
        risks=risks,
        key_prs=key_prs,
        follow_ups=follow_ups,
        carried_over=carried,
    )
    return grounded, drops


def emptied(n: WeeklyNarrative, drops: list[Drop]) -> list[str]:
    """The sections grounding left with nothing: the model wrote some, all went."""
    lost = {d.field for d in drops}
    return [name for name in SECTIONS if name in lost and not getattr(n, name)]


def hollow(n: WeeklyNarrative) -> bool:
    """A narrative with nothing of the model's left in any section but the lead."""
    return not any(getattr(n, name) for name in SECTIONS if name != "lead")
