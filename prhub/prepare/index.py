"""The index: every file with its view, for the call that reduces the chunks' notes."""

from __future__ import annotations

from collections import Counter

from prhub.model import View
from prhub.prepare.diff import Entry
from prhub.prepare.pack import depths, group, plural
from prhub.prepare.tokens import count, truncate

VIEWS: tuple[View, ...] = ("full", "excerpt", "listed", "excluded")
CUT = "\n… (index cut to its budget)"


def _file_line(e: Entry) -> str:
    label = e.header.removeprefix("### ")
    return f"{label}: {e.view}" + (f" — {e.reason}" if e.reason else "")


def _dir_line(folder: str, members: list[Entry]) -> str:
    views = Counter(e.view for e in members)
    adds = sum(e.additions for e in members)
    dels = sum(e.deletions for e in members)
    shown = ", ".join(f"{views[v]:,} {v}" for v in VIEWS if views[v])
    return f"{folder} — {plural(len(members), 'file')}, +{adds:,}/-{dels:,}: {shown}"


def _text(entries: list[Entry], keep_shown: bool, depth: int | None, aggregate: bool) -> str:
    views = Counter(e.view for e in entries)
    adds = sum(e.additions for e in entries)
    dels = sum(e.deletions for e in entries)
    lines = [
        f"{plural(len(entries), 'file')}, +{adds:,}/-{dels:,}: "
        + ", ".join(f"{views[v]:,} {v}" for v in VIEWS)
    ]
    if not aggregate:
        return "\n".join(lines + [_file_line(e) for e in entries])
    shown = ("full", "excerpt") if keep_shown else ()
    kept = [e for e in entries if e.view in shown]
    rest = [e for e in entries if e.view not in shown]
    lines += [_file_line(e) for e in kept]
    lines += [_dir_line(folder, members) for folder, members in group(rest, depth).items()]
    return "\n".join(lines)


def build_index(entries: list[Entry], budget: int, encoding: str) -> str:
    """Every file with its view and stats, in rank order, summed up per directory if too long."""
    levels: list[tuple[bool, int | None, bool]] = [(True, None, False)]
    levels += [(True, d, True) for d in depths(entries)]
    levels += [(False, d, True) for d in depths(entries)]
    text = ""
    for keep_shown, depth, aggregate in levels:
        text = _text(entries, keep_shown, depth, aggregate)
        if count(text, encoding) <= budget:
            return text
    return truncate(text, budget - count(CUT, encoding), encoding) + CUT
