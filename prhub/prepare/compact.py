"""A hunk made shorter for reading: every changed line kept, less unchanged text around it."""

from __future__ import annotations

import re
from collections.abc import Sequence

_HEADER = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@ ?(.*)")
# Unchanged lines kept on each side of a change (none): only the lines that enclose it stay,
# its function, class or config section, which say where a change is at the least cost.
CONTEXT = 0
GAP = " ⋯"  # stands for unchanged lines left out
NO_NEWLINE = "\\ No newline at end of file"
# Removed lines that all come back among the PR's added lines (moved, re-indented) are one
# line when a run holds at least this many lines of substance.
MOVED_RUN = 4
SUBSTANCE = 8  # characters, stripped: shorter lines (")", "else:") come back anywhere


def short_header(header: str, old: bool = False) -> str:
    """The @@ line with one first line only: `@@ +98 @@ def f():` (`@@ -98 @@` for `old`)."""
    m = _HEADER.match(header)
    if not m:
        return header
    start = f"-{m.group(1)}" if old else f"+{m.group(2)}"
    return f"@@ {start} @@" + ("" if old or not m.group(3) else f" {m.group(3)}")


def compact(
    header: str, lines: Sequence[str], added_file: bool, added: frozenset[str] = frozenset()
) -> str:
    """The hunk's text with less context; a new file's lines bare, without + or a header,
    unless one of them would then look like a header of the prompt's own.

    Unchanged lines are kept next to a change and where they open a block that encloses it
    (a less indented line above it: its function, class or config section). A run of removed
    lines whose text is among `added`, the PR's added lines stripped, becomes one line.
    """
    if added_file and bare_safe(lines):
        return "\n".join(line[1:] for line in lines if line != NO_NEWLINE)
    lines = _fold_moved([line for line in lines if line != NO_NEWLINE], added)
    changed = [line[:1] in ("+", "-") and line != "" for line in lines]
    keep = changed[:]
    for i, line in enumerate(lines):
        if not changed[i]:
            continue
        keep[max(0, i - CONTEXT) : i + CONTEXT + 1] = [True] * len(
            keep[max(0, i - CONTEXT) : i + CONTEXT + 1]
        )
        if i and changed[i - 1]:
            continue  # the run's first line has looked for its enclosing lines already
        depth = _indent(line[1:])
        for j in range(i - 1, -1, -1):
            if changed[j] or depth == 0:
                break
            indent = _indent(lines[j][1:])
            if indent < depth:
                keep[j] = True
                depth = indent
    out: list[str] = []
    for kept, line in zip(keep, lines, strict=True):
        if kept:
            out.append(line)
        elif out and out[-1] != GAP:
            out.append(GAP)  # none first: the @@ line already says the hunk starts further in
    if out[-1:] == [GAP]:
        out.pop()
    return "\n".join(([short_header(header)] if header else []) + out)


# Removed lines that take behaviour away when they go: a definition, a CLI flag, a config field.
_DEFINES = re.compile(
    r"^\s*(?:(?:export\s+)?(?:async\s+)?(?:def|class|function|func|fn|pub\s+fn|interface|struct)"
    r"\s+\w|[A-Za-z_]\w*\s*:\s*[^=:]+=)|add_argument\(|[.@]option\(|Option\(|['\"]--[A-Za-z]"
)
_CONFIG_KEY = re.compile(r"^\s*(?:-\s+)?[\w.-]+\s*[:=]")  # a key of YAML, TOML, INI, .env


def removed_block(head: str, lines: Sequence[str], config: bool) -> tuple[str, int]:
    """A hunk that only removes lines, shortened to the lines that define something (its
    functions, classes, flags; every key of a config file), and how many of them it shows."""
    removed = [line for line in lines if line.startswith("-")]
    pattern = _CONFIG_KEY if config else _DEFINES
    kept = [line for line in removed if pattern.search(line[1:])]
    note = f"{head} ({len(removed)} lines deleted"
    note += f", {len(kept)} shown: the lines that define something)" if kept else ")"
    return "\n".join([note, *kept]), len(kept)


def added_lines(patches: Sequence[str | None]) -> frozenset[str]:
    """The stripped text of every added line of substance in `patches`."""
    return frozenset(
        text
        for patch in patches
        for line in (patch or "").split("\n")
        if line.startswith("+") and len(text := line[1:].strip()) >= SUBSTANCE
    )


def _fold_moved(lines: list[str], added: frozenset[str]) -> list[str]:
    if not added:
        return lines
    out: list[str] = []
    run: list[str] = []
    substance = 0
    for line in lines + [""]:  # the empty line ends the last run
        text = line[1:].strip() if line[:1] == "-" else None
        if text is not None and (len(text) < SUBSTANCE or text in added):
            run.append(line)
            substance += len(text) >= SUBSTANCE
            continue
        if run:
            if substance >= MOVED_RUN:
                out.append(f"-⋯ {len(run)} removed lines, all among the added lines (moved)")
            else:
                out += run
            run, substance = [], 0
        out.append(line)
    return out[:-1]


def bare_safe(lines: Sequence[str]) -> bool:
    """True when no line, stripped of its +, could be read as a file's or a hunk's header."""
    return not any(line.startswith(("+###", "+@@")) for line in lines)


def _indent(text: str) -> int:
    """Columns of leading white space; a blank line encloses nothing."""
    if not text.strip():
        return 1 << 30
    text = text.expandtabs(4)
    return len(text) - len(text.lstrip())
