"""Pure checks of what a model cites: PR numbers, paths and identifiers must be in its input."""

from __future__ import annotations

import re
from collections.abc import Callable

from prhub.model import DigestContent, PullRequest
from prhub.report import WeeklyFacts, WeeklyNarrative
from prhub.source import references
from prhub.text import NUMBER, PR_COUNT, sentences

SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.\w{1,8})(?![\w/])")
FILE = re.compile(
    r"[\w.-]+\.(?:py|pyi|md|rst|txt|ya?ml|toml|json|cfg|ini|sh|cc?|cpp|cu|h|hpp|go|rs|js|ts)"
)
# Words that say a path was only mentioned, not changed.
MENTIONED = re.compile(r"提到|提及|描述中|评论中|讨论中|评审中|mention", re.IGNORECASE)


class _Tally:
    """Counts what a grounding pass drops."""

    def __init__(self) -> None:
        self.dropped = 0

    def keep_items(self, items: list[str], unknown: Callable[[str], list[str]]) -> list[str]:
        kept = [item for item in items if not unknown(item)]
        self.dropped += len(items) - len(kept)
        return kept

    def keep_numbers(self, values: list[int], allowed: set[int]) -> list[int]:
        kept = [v for v in dict.fromkeys(values) if v in allowed]
        self.dropped += len(values) - len(kept)
        return kept


def pr_source(pr: PullRequest) -> str:
    """All the text a digest of `pr` may cite from: title, body, discussion, paths, diff."""
    said = [
        pr.title,
        pr.body,
        *(c.body for c in pr.discussion),
        *(c.path or "" for c in pr.discussion),
    ]
    return "\n".join([*said, changed_source(pr)])


def changed_source(pr: PullRequest) -> str:
    """The text of what `pr` changed: its paths and its diff."""
    return "\n".join(
        [*(f.path for f in pr.files), *(f.previous_path or "" for f in pr.files)]
        + [f.patch or "" for f in pr.files]
    )


def known_numbers(pr: PullRequest) -> set[int]:
    """PR and issue numbers a digest of `pr` may cite: from its title, body, discussion, diff."""
    return {*pr.referenced_issues, *references(pr_source(pr)), pr.number}


def only_mentioned(pr: PullRequest) -> Callable[[str], bool]:
    """Whether a cited path is one the body or discussion names and the PR did not change:
    not a changed file (nor its name's tail at a folder boundary), nor in the diff's text."""
    said = "\n".join([pr.body, *(c.body for c in pr.discussion)])
    mentioned = {
        *PATH.findall(said),
        *(span.strip() for span in SPAN.findall(said) if FILE.fullmatch(span.strip())),
        *(c.path for c in pr.discussion if c.path),
    }
    paths = {p for f in pr.files for p in (f.path, f.previous_path) if p}
    patches = "\n".join(f.patch or "" for f in pr.files)

    def changed(cited: str) -> bool:
        return cited in patches or any(p == cited or p.endswith("/" + cited) for p in paths)

    return lambda cited: cited in mentioned and not changed(cited)


def ground_digest(content: DigestContent, pr: PullRequest) -> tuple[DigestContent, int]:
    """Drops what the digest cites that its input never had: PR numbers, paths, identifiers.

    A path the PR did not change (one its body or discussion only mentions) may not be shown
    as changed: design decisions and risks naming it go, and so does a sentence of running
    text that names it without saying it was mentioned. A list item citing something unknown
    goes; in running text the span loses its code marks. Returns the digest and how many
    citations were dropped.
    """
    source, numbers, mentioned = pr_source(pr), known_numbers(pr), only_mentioned(pr)
    tally = _Tally()

    def cited(text: str) -> list[str]:
        return [c.strip() for c in [*SPAN.findall(text), *PATH.findall(SPAN.sub("", text))]]

    def unknown(text: str) -> list[str]:
        return [c for c in cited(text) if c not in source] + [
            f"#{n}" for n in map(int, NUMBER.findall(text)) if n not in numbers
        ]

    def unchanged(text: str) -> list[str]:
        """Paths cited as if changed that only the body or discussion names, and anything
        unknown; an item that says the path was mentioned may name it."""
        shown_changed = [] if MENTIONED.search(text) else [c for c in cited(text) if mentioned(c)]
        return unknown(text) + shown_changed

    def as_changed(text: str) -> str:
        """Running text without the sentences that show a merely mentioned path as changed."""
        kept = []
        for sentence in sentences(text):
            if MENTIONED.search(sentence) or not any(map(mentioned, cited(sentence))):
                kept.append(sentence)
            else:
                tally.dropped += 1
        return "".join(kept).strip()

    def unmark(text: str) -> str:
        """Unknown spans lose their code marks, unknown numbers go."""

        def span(match: re.Match[str]) -> str:
            if match.group(1).strip() in source:
                return match.group(0)
            tally.dropped += 1
            return match.group(1)

        def number(match: re.Match[str]) -> str:
            if int(match.group(1)) in numbers:
                return match.group(0)
            tally.dropped += 1
            return ""

        return NUMBER.sub(number, SPAN.sub(span, text))

    grounded = content.model_copy(
        update={
            "title": unmark(content.title),
            "advice": unmark(as_changed(content.advice)),
            "importance_reason": unmark(as_changed(content.importance_reason)),
            "design_decisions": tally.keep_items(content.design_decisions, unchanged),
            "risks": tally.keep_items(content.risks, unchanged),
            "follow_ups": tally.keep_items(content.follow_ups, unknown),
            "discussion": tally.keep_items(content.discussion, unknown),
            "related_prs": tally.keep_numbers(content.related_prs, numbers - {pr.number}),
        }
    )
    return grounded, tally.dropped


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


def ground_weekly(n: WeeklyNarrative, facts: WeeklyFacts) -> tuple[WeeklyNarrative, int]:
    """Removes citations of PRs not in the week and PR counts the facts do not hold.

    Returns the narrative and how many citations and figures went.
    """
    week, figures = set(facts.prs), fact_counts(facts)
    tally = _Tally()

    def clean(text: str) -> str:
        def keep(match: re.Match[str]) -> str:
            if int(match.group(1)) in week:
                return match.group(0)
            tally.dropped += 1
            return ""

        def counted(match: re.Match[str]) -> str:
            if int(match.group(1)) in figures:
                return match.group(0)
            tally.dropped += 1
            return "多" + match.group(2).lstrip()  # a count no fact backs: say "several"

        text = PR_COUNT.sub(counted, NUMBER.sub(keep, text))
        return re.sub(r"[（(]\s*[）)]", "", text).strip()

    tally.dropped += sum(k.number not in week for k in n.key_prs)
    grounded = WeeklyNarrative(
        lead=clean(n.lead),
        summary=clean(n.summary),
        highlights=[clean(x) for x in n.highlights],
        key_changes=[clean(x) for x in n.key_changes],
        trends=[
            t.model_copy(
                update={
                    "theme": clean(t.theme),
                    "prs": [p for p in t.prs if p in week],
                    "judgement": clean(t.judgement),
                }
            )
            for t in n.trends
        ],
        risks=[clean(x) for x in n.risks],
        key_prs=[
            k.model_copy(update={"topic": clean(k.topic), "note": clean(k.note)})
            for k in n.key_prs
            if k.number in week
        ],
        follow_ups=[clean(x) for x in n.follow_ups],
    )
    tally.dropped += sum(len(t.prs) - len([p for p in t.prs if p in week]) for t in n.trends)
    return grounded, tally.dropped
