"""One file's diff made ready to pack: its rank, header and token-counted blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from prhub.model import FileChange, View
from prhub.paths import kind
from prhub.prepare.compact import compact, removed_block, short_header
from prhub.prepare.noise import is_pure_rename
from prhub.prepare.tokens import count, truncate

_HUNK_RANGE = re.compile(r"@@ [^@\n]*@@")
_HUNK_START = re.compile(r"^(?=@@)", re.M)
TIERS = {"test": 1, "docs": 2, "config": 2}


def tier(path: str) -> int:
    """1 for tests, 2 for docs and config, 0 for source and the rest: lower ranks first."""
    return TIERS.get(kind(path), 0)


@dataclass(frozen=True)
class Hunk:
    """One hunk of a unified diff: its @@ line ("" for text before the first) and its lines."""

    header: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join((self.header, *self.lines) if self.header else self.lines)

    @property
    def changed(self) -> int:
        """Lines starting with + or -."""
        return sum(line.startswith(("+", "-")) for line in self.lines)


def parse_hunks(patch: str | None) -> list[Hunk]:
    """The hunks of a unified-diff patch, without trailing empty lines."""
    hunks = []
    for piece in _HUNK_START.split(patch or ""):
        piece = piece.rstrip("\n")
        if not piece:
            continue
        first, *rest = piece.split("\n")
        if first.startswith("@@"):
            hunks.append(Hunk(first, tuple(rest)))
        else:
            hunks.append(Hunk("", (first, *rest)))
    return hunks


@dataclass
class Block:
    """A hunk, or a piece of a hunk too big to pack whole."""

    text: str
    tokens: int
    changed: int  # changed lines it holds (+ and -)
    hunk: int  # which hunk of the file it belongs to


@dataclass(frozen=True)
class Copy:
    """A hunk left out because the same change is shown in another place: where, and its size."""

    original: Entry
    hunk: int  # index into the original's hunks
    changed: int

    def seen(self) -> bool:
        return self.original.shows_hunk(self.hunk)


@dataclass(eq=False)
class Entry:
    """One file of the PR as packing sees it; view, shown and note are decided by packing."""

    order: int
    path: str  # redacted
    status: str
    additions: int
    deletions: int
    tier: int
    header: str
    header_tokens: int
    hunks: list[tuple[str, int]] = field(default_factory=list)  # text, changed lines
    keys: list[str] = field(default_factory=list)  # each hunk's changed lines, to find copies
    copies: list[Copy] = field(default_factory=list)  # hunks shown once, in another place
    blocks: list[Block] = field(default_factory=list)  # counted by packing, when needed
    excluded: str | None = None  # the noise reason
    no_patch: bool = False
    pure_rename: bool = False
    bare: bool = False  # a new file's lines, maybe without + signs: each one is a changed line
    omitted: int = 0  # changed lines dropped before packing (notebook outputs)
    hidden: int = 0  # removed lines a shortened removal hunk leaves out (not seen)
    base_reason: str = ""  # what holds whatever the budget: pure rename, notebook, no patch
    reason: str = ""
    view: View = "listed"
    shown: list[Block] = field(default_factory=list)
    note: str = ""

    @property
    def changes(self) -> int:
        return self.additions + self.deletions

    @property
    def repeated(self) -> bool:
        """Every hunk of this file is the same change as one shown elsewhere."""
        return not self.hunks and bool(self.copies)

    @property
    def showable(self) -> bool:
        return self.excluded is None and (bool(self.hunks) or self.pure_rename)

    def rank(self) -> tuple[bool, int, bool, int, str]:
        """Sort key: shown kinds before excluded, source before tests before docs, a deleted
        file after those that stay (what replaced it says more), big first."""
        return (
            self.excluded is not None,
            self.tier,
            self.status == "removed",
            -self.changes,
            self.path,
        )

    def shows_hunk(self, index: int) -> bool:
        """True when hunk `index` of this file is in the chunks in full."""
        if self.view == "full" and not self.repeated:
            return True
        if self.view != "excerpt" or not self.blocks:
            return False
        return all(b in self.shown for b in self.blocks if b.hunk == index)

    def lines_seen(self) -> int:
        copied = sum(c.changed for c in self.copies)
        seen = sum(c.changed for c in self.copies if c.seen())
        own = 0
        if self.view == "full" and not self.repeated:
            own = max(0, self.changes - self.omitted - self.hidden - copied)
        elif self.view == "excerpt" and not self.repeated:
            own = sum(b.changed for b in self.shown)
        return min(self.changes, own + seen)


def header(file: FileChange, path: str, previous: str | None) -> str:
    """The line that opens a file's section, or the whole section of a pure rename."""
    if is_pure_rename(file):
        return f"{file.status}: {previous} -> {path}"
    status = f"renamed from {previous}" if previous and previous != path else file.status
    return f"### {path} ({status}, +{file.additions}/-{file.deletions})"


def split_hunks(patch: str) -> list[tuple[str, int]]:
    """The hunks of a unified-diff patch with their changed lines."""
    return [(text, changed) for text, changed, _ in keyed_hunks(patch)]


def keyed_hunks(
    patch: str,
    *,
    short: bool = False,
    added: bool = False,
    moved: frozenset[str] = frozenset(),
    fold_removed: bool = False,
    config: bool = False,
) -> list[tuple[str, int, str]]:
    """split_hunks(), each hunk with its changed lines as one text: equal keys, equal changes.

    `short` keeps less unchanged text (prepare.compact); `added` says the patch creates the
    file, whose lines then go without their + signs; removed lines found in `moved`, the PR's
    added lines, are then folded. `fold_removed` shortens a hunk that only removes lines to
    the lines that define something (`config`: every key); its count is then the lines shown.
    """
    out = []
    for hunk in parse_hunks(patch):
        key = "\n".join(line for line in hunk.lines if line.startswith(("+", "-")))
        removal = hunk.changed and not any(line.startswith("+") for line in hunk.lines)
        m = _HUNK_RANGE.match(hunk.header)
        head = short_header(hunk.header, old=True) if short else m.group() if m else "@@"
        if removal and fold_removed:
            text, shown = removed_block(head, hunk.lines, config)
            out.append((text, shown, key))
        elif removal and short:
            # The old side's line numbers: the new side has none of these lines.
            body = compact("", hunk.lines, False, moved)
            out.append((f"{head}\n{body}" if hunk.header else body, hunk.changed, key))
        elif short:
            out.append((compact(hunk.header, hunk.lines, added, moved), hunk.changed, key))
        else:
            out.append((hunk.text, hunk.changed, key))
    return out


def _new_lines(piece: str) -> int:
    """Lines of a piece of a new file: each is a changed line, with its + sign or without."""
    return sum(not line.startswith("@@") for line in piece.split("\n"))


def changed_lines(text: str) -> int:
    """Lines starting with + or - in a piece of a patch."""
    return text.count("\n+") + text.count("\n-") + text.startswith(("+", "-"))


def blocks(
    hunks: list[tuple[str, int]],
    piece_chars: int,
    max_tokens: int,
    encoding: str,
    bare: bool = False,
) -> list[Block]:
    """Token-counted blocks of at most max_tokens; long hunks are cut at line ends into pieces.

    `bare` hunks are a new file's lines without + signs: every line is a changed one.
    """
    out = []
    for i, (hunk, changed) in enumerate(hunks):
        pieces = _counted_pieces(hunk, piece_chars, max_tokens, encoding)
        for piece, tokens in pieces:
            if len(pieces) == 1:
                n = changed
            else:
                n = _new_lines(piece) if bare else changed_lines(piece)
            out.append(Block(piece, tokens, n, i))
    return out


def _counted_pieces(
    text: str, piece_chars: int, max_tokens: int, encoding: str
) -> list[tuple[str, int]]:
    out = []
    for piece in _pieces(text, piece_chars):
        tokens = count(piece, encoding)
        if tokens <= max_tokens:
            out.append((piece, tokens))
        elif "\n" in piece:
            # Denser than expected (CJK, data): cut again, smaller. Rare, so counted twice.
            smaller = max(1, len(piece) * max_tokens // (2 * tokens))
            out += _counted_pieces(piece, smaller, max_tokens, encoding)
        else:
            # One enormous line (embedded data): keep its start only.
            piece = truncate(piece, max_tokens - 8, encoding) + "\n… (line cut)"
            out.append((piece, count(piece, encoding)))
    return out


def _pieces(hunk: str, limit: int) -> list[str]:
    if len(hunk) <= limit:
        return [hunk]
    pieces: list[str] = []
    lines: list[str] = []
    size = 0
    for line in hunk.split("\n"):
        if lines and size + len(line) + 1 > limit:
            pieces.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    pieces.append("\n".join(lines))
    return pieces
