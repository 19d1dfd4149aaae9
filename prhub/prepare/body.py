"""A PR body without the parts of its template the author left as they were."""

from __future__ import annotations

import re

HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)  # invisible on GitHub
_HEADING = re.compile(r"^#{1,6}\s")
_RULE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")  # a thematic break ends a section too
_TASK = re.compile(r"^\s*[-*+]\s+\[[ xX]\]")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_FENCE = re.compile(r"^\s*(```|~~~)")
_ALERT = re.compile(r"^\s*>\s*\[!\w+\]")
# A comment line of a template's example block; not C's #include or a shell's #! line.
_PLACEHOLDER_LINE = re.compile(r"^(?://|#(?!include\b|define\b|if|ifdef\b|endif\b|pragma\b|!))")
# Ends a sentence: the line after it starts a new thought, not a wrapped quote line.
_SENTENCE_END = re.compile(r"[.!?:。！？：]\s*$")
_BLANKS = re.compile(r"\n(?:[ \t]*\n){2,}")
_CITES = re.compile(r"(?<![\w&])#\d+\b")
# Git trailers a squash merge appends: who signed off says nothing of the change.
_TRAILER = re.compile(r"^(?:signed-off-by|co-authored-by):.*$\n?", re.I | re.M)
# Headings of a template's own boxes; a list of tasks under any other heading (a to-do list,
# a plan) is the author's and stays.
_CHECKLIST = re.compile(r"check ?list|before (?:you )?(?:submit|start|open|merg)", re.I)


def strip_template(body: str) -> str:
    """`body` without HTML comments, template guidance quotes, checklists and empty sections.

    Guidance is a quote that opens a section; a checklist is a section headed as one, with
    task boxes: of it, only the author's own paragraphs and items citing a PR or an issue
    stay. A section left empty loses its heading too, and sign-off trailers go.
    """
    body = _TRAILER.sub("", HTML_COMMENT.sub("", body.replace("\r\n", "\n")))
    kept = []
    for heading, lines in _sections(body.split("\n")):
        lines = _without_guidance(lines)
        if _is_checklist(heading, lines):
            lines = _checklist_kept(lines)
        else:
            lines = _without_placeholder_code(lines)
        if any(line.strip() for line in lines):
            kept.append("\n".join(([heading] if heading else []) + lines).strip("\n"))
    return _BLANKS.sub("\n\n", "\n\n".join(kept))


def _sections(lines: list[str]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = [("", [])]
    fenced = False
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and _HEADING.match(line):
            out.append((line, []))
        elif not fenced and _RULE.match(line):
            out.append(("", [line]))
        else:
            out[-1][1].append(line)
    return out


def _without_guidance(lines: list[str]) -> list[str]:
    """The section without the quote it opens with, and its lazily continued lines."""
    start = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    if start == len(lines) or not lines[start].lstrip().startswith(">"):
        return lines
    if _ALERT.match(lines[start]):  # > [!WARNING] and its kind: the author's own callout
        return lines
    end = start
    while end < len(lines) and lines[end].strip():
        line = lines[end]
        quoted = line.lstrip().startswith(">")
        # A rewrapped quote continues without ">"; after a full stop, a list or code starts
        # the author's own text written right under the guidance.
        if not quoted and (
            _SENTENCE_END.search(lines[end - 1]) or _FENCE.match(line) or _ITEM.match(line)
        ):
            break
        end += 1
    rest = lines[end:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    return lines[:start] + rest


def _is_checklist(heading: str, lines: list[str]) -> bool:
    return bool(_CHECKLIST.search(heading)) and any(_TASK.match(line) for line in lines)


def _checklist_kept(lines: list[str]) -> list[str]:
    """Of a checklist, the author's own paragraphs and the items that cite a PR or issue."""
    groups: list[tuple[str, list[str]]] = []  # kind: item, quote, text or blank
    for line in lines:
        if not line.strip():
            groups.append(("blank", [line]))
        elif _ITEM.match(line):
            groups.append(("item", [line]))
        elif line.lstrip().startswith(">"):
            groups.append(("quote", [line]))
        elif groups and groups[-1][0] != "blank":
            groups[-1][1].append(line)  # a wrapped line continues what it follows
        else:
            groups.append(("text", [line]))
    kept = [
        (kind, group)
        for kind, group in groups
        if kind in ("blank", "text") or (kind == "item" and _CITES.search(" ".join(group)))
    ]
    return [line for _, group in kept for line in group]


def _without_placeholder_code(lines: list[str]) -> list[str]:
    """The section without code blocks that hold nothing but comments."""
    out: list[str] = []
    block: list[str] | None = None
    for line in lines:
        if block is None:
            if _FENCE.match(line):
                block = [line]
            else:
                out.append(line)
            continue
        block.append(line)
        if _FENCE.match(line):
            inner = [x.strip() for x in block[1:-1] if x.strip()]
            if any(not _PLACEHOLDER_LINE.match(x) for x in inner):
                out += block
            block = None
    return out + (block or [])
