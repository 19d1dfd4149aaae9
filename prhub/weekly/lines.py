"""Each PR of a week as the narrative's prompt shows it: one line of its digest, whole when the
week's lines fit the room there is, else a fair share of it for each PR."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from prhub.config import Settings
from prhub.model import PRDigest
from prhub.prepare.tokens import count

# A PR's line takes at least this much of the prompt: below it the week is written in groups.
LINE_MIN = 150
# A digest's lists with the label each carries, in the order a line shows them.
SECTIONS = (
    ("风险", "risks"),
    ("设计", "design_decisions"),
    ("后续", "follow_ups"),
    ("讨论", "discussion"),
)
JOIN = 2  # tokens a line's newline and list mark take in the prompt


def written(d: PRDigest) -> int:
    """The items a digest's line may show: its risks, design decisions, follow-ups and
    discussion notes."""
    return sum(len(getattr(d.content, name)) for _, name in SECTIONS)


def digest_line(d: PRDigest, settings: Settings, share: int | None = None) -> str:
    """One PR as the weekly prompt sees it: whole, or within `share` tokens.

    Within a share, whole items are taken a round at a time: the first of each list (risks,
    design decisions, follow-ups, discussion), then the second of each, so no list is
    starved; an item that does not fit is left out, never cut, and the line says how many
    were.
    """
    return _chosen(d, settings, share)[0]


def shown(d: PRDigest, settings: Settings, share: int | None = None) -> int:
    """How many of the digest's items (written) its line shows within `share`."""
    return _chosen(d, settings, share)[1]


def _chosen(d: PRDigest, settings: Settings, share: int | None) -> tuple[str, int]:
    c = d.content
    head = f"#{d.number} [{', '.join(d.tags)}] {c.title}"
    reason = ("", f"{c.verdict}，重要性 {c.importance:.1f}：{c.importance_reason}")
    lists = [[(label, item) for item in getattr(c, name)] for label, name in SECTIONS]
    most = max(map(len, lists), default=0)
    rounds = [items[i] for i in range(most) for items in lists if i < len(items)]
    if share is None:
        return _line(head, [reason, *rounds], 0), len(rounds)
    kept: list[tuple[str, str]] = []
    left = 0
    for item in [reason, *rounds]:
        if count(_line(head, [*kept, item], 0), settings.encoding) <= share:
            kept.append(item)
        else:
            left += 1
    # The note of what was left out takes room too: the last items kept make way for it.
    while left and kept and count(_line(head, kept, left), settings.encoding) > share:
        kept.pop()
        left += 1
    return _line(head, kept, left), sum(1 for label, _ in kept if label)


def _line(head: str, items: list[tuple[str, str]], left: int) -> str:
    order = [label for label, _ in SECTIONS]
    items = sorted(items, key=lambda item: order.index(item[0]) if item[0] else -1)
    parts = [head]
    for label, group in groupby(items, key=lambda item: item[0]):
        texts = [" ".join(text.split()) for _, text in group]  # one line a PR
        parts.append(f"{label}：" + "；".join(texts) if label else "；".join(texts))
    if left:
        parts.append(f"另有 {left} 条未列出")
    return " | ".join(parts)


def level(sizes: Sequence[int], room: int) -> int:
    """The most tokens each line may take so that all fit `room`: lines under it whole, the
    others held to it (a fair share, as water fills the room); 0 when not even that fits."""
    if sum(sizes) <= room:
        return max(sizes, default=0)
    lo, hi = 0, max(sizes, default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(s, mid) for s in sizes) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fitted(digests: Sequence[PRDigest], settings: Settings, room: int) -> list[str]:
    """The PRs' lines within `room` tokens: every item of every digest when they fit, else a
    fair share each (never below LINE_MIN: such a week is written in groups)."""
    return [line for line, _ in fitted_items(digests, settings, room)]


def fitted_items(
    digests: Sequence[PRDigest], settings: Settings, room: int
) -> list[tuple[str, int]]:
    """`fitted`'s lines, each with how many of its digest's items it shows."""
    full = [_chosen(d, settings, None) for d in digests]
    sizes = [count(line, settings.encoding) + JOIN for line, _ in full]
    cap = max(LINE_MIN, level(sizes, room))
    return [
        whole if size <= cap else _chosen(d, settings, cap - JOIN)
        for d, whole, size in zip(digests, full, sizes, strict=True)
    ]


def groups(digests: Sequence[PRDigest], settings: Settings, room: int) -> list[list[PRDigest]]:
    """The week's digests in groups whose lines, each at least its LINE_MIN share, fit `room`."""
    made: list[list[PRDigest]] = [[]]
    used = 0
    for d in digests:
        size = min(count(digest_line(d, settings), settings.encoding), LINE_MIN) + JOIN
        if made[-1] and used + size > room:
            made.append([])
            used = 0
        made[-1].append(d)
        used += size
    return made


def fits(digests: Sequence[PRDigest], settings: Settings, room: int) -> bool:
    """Whether one call can show every PR with at least its LINE_MIN share."""
    return len(groups(digests, settings, room)) == 1
