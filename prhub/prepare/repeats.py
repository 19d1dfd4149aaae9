"""Near-duplicate hunks: a change applied in many places is sent once, with where it applies."""

from __future__ import annotations

from collections import defaultdict

from prhub.model import View
from prhub.prepare.diff import Copy, Entry
from prhub.prepare.pack import OVER_BUDGET, plural

# Shorter changes cost less than the note naming the other files they apply to.
MIN_CHARS = 40
NAMED = 12  # places named after the hunk shown; the rest are counted


def merge_repeats(entries: list[Entry]) -> int:
    """Keep the first of hunks whose changed lines are equal; the others become a note on it.

    `entries` are in rank order, so the change is shown where the model reads first. Context
    lines may differ between the copies: only the + and - lines must match. Returns the
    number of hunks left out.
    """
    first: dict[str, tuple[Entry, int]] = {}
    places: defaultdict[tuple[int, int], list[str]] = defaultdict(list)
    left_out = 0
    for e in entries:
        if not e.showable or e.pure_rename or len(e.keys) != len(e.hunks):
            continue
        hunks: list[tuple[str, int]] = []
        keys: list[str] = []
        for hunk, key in zip(e.hunks, e.keys, strict=True):
            if len(key) >= MIN_CHARS and key in first:
                original, index = first[key]
                e.copies.append(Copy(original, index, hunk[1]))
                places[id(original), index].append(e.path)
                left_out += 1
                continue
            if len(key) >= MIN_CHARS:
                first[key] = (e, len(hunks))
            hunks.append(hunk)
            keys.append(key)
        e.hunks, e.keys = hunks, keys
        if e.repeated:
            e.view = "full"
            e.reason = e.base_reason = "same change as " + _names(
                list(dict.fromkeys(c.original.path for c in e.copies))
            )
    for e in entries:
        for i, (text, changed) in enumerate(e.hunks):
            if (id(e), i) in places:
                e.hunks[i] = (text + _note(e.path, places[id(e), i]), changed)
    return left_out


def settle(entries: list[Entry]) -> None:
    """After packing: a file made only of copies is seen as far as the changes it copies are."""
    for e in entries:
        if not e.repeated:
            continue
        seen = [c.seen() for c in e.copies]
        view: View = "full" if all(seen) else "excerpt" if any(seen) else "listed"
        e.view = view
        if view == "listed":
            e.reason = f"{e.base_reason} ({OVER_BUDGET})"


def _note(path: str, places: list[str]) -> str:
    here = sum(p == path for p in places)
    others = [p for p in places if p != path]
    parts = [f"{plural(here, 'more place')} in this file"] if here else []
    if others:
        parts.append(_names(others))
    return "\n↳ same change also applied to: " + "; ".join(parts)


def _names(paths: list[str]) -> str:
    counts = dict.fromkeys(paths, 0)
    for p in paths:
        counts[p] += 1
    named = [p if n == 1 else f"{p} (×{n})" for p, n in list(counts.items())[:NAMED]]
    more = len(counts) - NAMED
    return ", ".join(named) + (f" and {plural(more, 'more file')}" if more > 0 else "")
