"""Packing: decide each file's view and cut the diff into chunks that fit the token budget."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from prhub.prepare.diff import Entry, blocks
from prhub.prepare.tokens import count

# Tokens reserved for each newline that joins two parts; the final count checks the estimate.
SEP = 1
# Tokens to allow for an excerpt's closing note before it is written.
NOTE_TOKENS = 24
OVER_BUDGET = "over budget"
NO_FILES = "No files changed."


@dataclass
class Unit:
    """An unbreakable run of chunk text: a section's first hunk with its header, a hunk, a line."""

    text: str
    tokens: int
    # The file whose section this continues: a new chunk must repeat its header first.
    continues: Entry | None = None
    # Opens a section: a blank line goes before it.
    section: bool = False


@lru_cache(maxsize=8192)
def tokens_of(text: str, encoding: str) -> int:
    """Token count of a short, often repeated text (suffixes, headers, directory lines)."""
    return count(text, encoding)


def trace_line(e: Entry) -> str:
    """The one line that keeps a file in view when its diff is not shown."""
    if e.excluded is not None:
        return f"{e.header} [excluded: {e.excluded}]"
    if e.pure_rename:
        return e.header
    return f"{e.header} [diff not shown: {e.reason if e.no_patch else OVER_BUDGET}]"


def _line_tokens(e: Entry, encoding: str) -> int:
    # The header is counted once per file; suffixes repeat, so their counts are cached.
    return e.header_tokens + tokens_of(trace_line(e)[len(e.header) :], encoding) + SEP


def directory(path: str, depth: int | None) -> str:
    """The directory of `path`, cut to its first `depth` parts (all when None)."""
    parts = path.split("/")[:-1]
    if depth is not None:
        parts = parts[:depth]
    return "/".join(parts) + "/" if parts else "./"


def depths(entries: Iterable[Entry]) -> list[int | None]:
    """Directory depths to try when aggregating, finest first."""
    deepest = max((e.path.count("/") for e in entries), default=0)
    return [None, *range(deepest - 1, -1, -1)]


def group(entries: Iterable[Entry], depth: int | None) -> dict[str, list[Entry]]:
    """Entries by directory, in the order directories first appear."""
    groups: dict[str, list[Entry]] = {}
    for e in entries:
        groups.setdefault(directory(e.path, depth), []).append(e)
    return groups


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def _aggregate_lines(entries: list[Entry], depth: int | None) -> list[str]:
    lines = []
    for folder, members in group(entries, depth).items():
        excluded = sum(e.view == "excluded" for e in members)
        listed = len(members) - excluded
        adds = sum(e.additions for e in members)
        dels = sum(e.deletions for e in members)
        if not excluded:
            what = "listed only"
        elif not listed:
            what = "excluded as noise"
        else:
            what = f"{listed:,} listed only, {excluded:,} excluded as noise"
        lines.append(f"{folder} — {plural(len(members), 'file')}, +{adds:,}/-{dels:,}, {what}")
    return lines


def _trace_depth(entries: list[Entry], room: int, encoding: str) -> int | None:
    """The finest depth whose directory lines for all files fit `room`."""
    options = depths(entries)
    for depth in options:
        lines = _aggregate_lines(entries, depth)
        if sum(tokens_of(line, encoding) + SEP for line in lines) <= room:
            return depth
    return options[-1]


def _full_tokens(e: Entry) -> int:
    return e.header_tokens + sum(b.tokens + SEP for b in e.blocks)


def _excerpt(e: Entry, room: int, encoding: str) -> int | None:
    """Show the first hunks that fit `room`; the tokens used, or None when none fits."""
    room -= e.header_tokens + SEP + NOTE_TOKENS + SEP
    shown = []
    used = 0
    skipped = -1
    for b in e.blocks:
        # Once a piece of a hunk is left out, the rest of that hunk goes too.
        if b.hunk != skipped and used + b.tokens + SEP <= room:
            shown.append(b)
            used += b.tokens + SEP
        else:
            skipped = b.hunk
    if not shown:
        return None
    total = Counter(b.hunk for b in e.blocks)
    seen = Counter(b.hunk for b in shown)
    whole = sum(total[h] == seen.get(h, 0) for h in total)
    left = sum(b.changed for b in e.blocks) - sum(b.changed for b in shown)
    e.view, e.shown = "excerpt", shown
    e.reason = f"{OVER_BUDGET}: {whole} of {plural(len(e.hunks), 'hunk')} shown in full"
    e.note = f"… {plural(left, 'changed line')} in {len(e.hunks) - whole} more hunks not shown"
    return e.header_tokens + SEP + used + tokens_of(e.note, encoding) + SEP


def allocate(entries: list[Entry], capacity: int, encoding: str) -> list[Unit]:
    """Give each file, in rank order, the largest view that fits; returns the trace lines."""
    for e in entries:
        if e.showable:
            e.view, e.shown, e.note, e.reason = "listed", [], "", e.base_reason
    lines = sum(_line_tokens(e, encoding) for e in entries)
    # The trace of files not shown must fit; when per-file lines would crowd out the diff,
    # files not shown are summed up per directory instead.
    per_file = lines <= capacity // 2
    depth = None if per_file else _trace_depth(entries, capacity // 4, encoding)
    reserve = (
        lines
        if per_file
        else sum(tokens_of(line, encoding) + SEP for line in _aggregate_lines(entries, depth))
    )
    used = 0
    for e in entries:
        if not e.showable:
            continue
        line = _line_tokens(e, encoding)
        if per_file:
            reserve -= line
        room = capacity - used - reserve
        full = _full_tokens(e) + SEP
        if full <= room:
            e.view, e.shown = "full", e.blocks
            used += full
            continue
        spent = None if e.pure_rename else _excerpt(e, room, encoding)
        if spent is not None:
            used += spent
            continue
        e.reason = OVER_BUDGET
        used += line if per_file else 0
    hidden = [e for e in entries if e.view in ("listed", "excluded")]
    if per_file:
        trace = [Unit(trace_line(e), _line_tokens(e, encoding) - SEP) for e in hidden]
    else:
        folders = _aggregate_lines(hidden, depth)
        trace = [Unit(line, tokens_of(line, encoding)) for line in folders]
    if trace:
        trace[0].section = True
    return trace


def _units(entries: list[Entry], encoding: str) -> list[Unit]:
    units = []
    for e in entries:
        if e.view not in ("full", "excerpt"):
            continue
        if not e.shown:  # a pure rename is its header line
            units.append(Unit(e.header, e.header_tokens, section=True))
            continue
        first = e.shown[0]
        text = e.header + "\n" + first.text
        units.append(Unit(text, e.header_tokens + SEP + first.tokens, section=True))
        units += [Unit(b.text, b.tokens, e) for b in e.shown[1:]]
        if e.note:
            units.append(Unit(e.note, tokens_of(e.note, encoding), e))
    return units


def _pack(units: list[Unit], limit: int, encoding: str) -> list[list[Unit]]:
    """Fill chunks in order; a unit that does not fit starts the next chunk."""
    chunks: list[list[Unit]] = [[]]
    used = 0
    for unit in units:
        if chunks[-1] and used + unit.tokens + SEP > limit:
            chunks.append([])
            used = 0
            if unit.continues is not None:
                head = f"### {unit.continues.path} (continued)"
                chunks[-1].append(Unit(head, tokens_of(head, encoding), section=True))
                used += chunks[-1][0].tokens + SEP
        chunks[-1].append(unit)
        used += unit.tokens + SEP
    return chunks


def _render(chunk: list[Unit]) -> str:
    # A blank line between file sections, one newline inside a section.
    return "".join(
        ("" if i == 0 else "\n\n" if u.section else "\n") + u.text for i, u in enumerate(chunk)
    )


def _whole(entries: list[Entry], budget: int) -> str | None:
    """Every file in full as one chunk; None when it is too long to be worth counting."""
    # Most PRs fit one call: one count of the whole text then checks and sizes it at once.
    # Code runs about four characters a token; far longer text cannot fit.
    if sum(len(text) for e in entries for text, _ in e.hunks) > 4 * budget:
        return None
    sections = []
    for e in entries:
        if e.showable:
            e.view, e.shown, e.note, e.reason = "full", [], "", e.base_reason
            sections.append("\n".join([e.header, *(text for text, _ in e.hunks)]))
    trace = "\n".join(trace_line(e) for e in entries if not (e.showable or e.repeated))
    return "\n\n".join([*sections, trace] if trace else sections)


def pack(entries: list[Entry], budget: int, max_calls: int, encoding: str) -> list[str]:
    """Set each entry's view and return the chunk texts, each at most `budget` tokens."""
    if not entries:
        return [NO_FILES]
    whole = _whole(entries, budget)
    if whole is not None and count(whole, encoding) <= budget:
        return [whole]
    for e in entries:
        # Hunks longer than half a budget in characters (about an eighth of a chunk in tokens)
        # are cut into pieces, so a chunk ends with little room wasted.
        e.blocks = blocks(
            e.hunks, max(500, budget // 2), max(64, budget // 3), encoding, bare=e.bare
        )
    margin = 4 + budget // 200  # slack for tokens merging or splitting across joins
    limit = budget - margin
    for calls in sorted({1, max_calls}):
        capacity = limit * calls
        while capacity > 0:
            trace = allocate(entries, capacity, encoding)
            if calls < max_calls and any(e.showable and e.view != "full" for e in entries):
                break  # not everything fits one call: spread over more
            chunks = _pack(_units(entries, encoding) + trace, limit, encoding)
            if len(chunks) > calls:
                # Chunks end early when a hunk does not fit; give up that much and retry.
                spill = sum(u.tokens + SEP for chunk in chunks[calls:] for u in chunk)
                capacity -= spill + limit // 50
                continue
            texts = [_render(chunk) for chunk in chunks]
            over = max(count(text, encoding) for text in texts) - budget
            if over <= 0:
                return texts
            limit -= over + margin
            capacity = min(capacity, limit * calls)
    raise ValueError(f"chunk budget of {budget} tokens cannot hold even a per-directory list")
