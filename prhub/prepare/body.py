"""A PR body without the parts of its template the author left as they were."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import groupby

from markdown_it import MarkdownIt
from markdown_it.token import Token

from prhub.text import PR_REF

HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)  # invisible on GitHub
_TASK = re.compile(r"\[[ xX]\]")
_ALERT = re.compile(r"^\s*>\s*\[!\w+\]")
# A comment line of a template's example block; not C's #include or a shell's #! line.
_PLACEHOLDER_LINE = re.compile(r"^(?://|#(?!include\b|define\b|if|ifdef\b|endif\b|pragma\b|!))")
# Ends a sentence: the line after it starts a new thought, not a wrapped quote line.
_SENTENCE_END = re.compile(r"[.!?:。！？：]\s*$")
_BLANKS = re.compile(r"\n(?:[ \t]*\n){2,}")
# Git trailers a squash merge appends: who signed off says nothing of the change.
_TRAILER = re.compile(r"(?:signed-off-by|co-authored-by):", re.I)
# Headings of a template's own boxes; a list of tasks under any other heading (a to-do list,
# a plan) is the author's and stays.
_CHECKLIST = re.compile(r"check ?list|before (?:you )?(?:submit|start|open|merg)", re.I)
# Blocks and their lines are all it reads: the inline rules (links, emphasis) are not run.
_MD = MarkdownIt("commonmark").disable(["inline", "text_join"])


@dataclass
class _Section:
    """The lines under a top-level # heading or thematic break (a break is a line of its own
    section), up to the next; the block tokens they parse to."""

    heading: str
    start: int
    end: int = 0
    tokens: list[Token] = field(default_factory=list)


def strip_template(body: str) -> str:
    """`body` without HTML comments, template guidance quotes, checklists and empty sections.

    Guidance is a quote that opens a section; a checklist is a section headed as one, with
    task boxes: of it, only the author's own paragraphs and items citing a PR or an issue
    stay. A section left empty loses its heading too, and sign-off trailers go. Code blocks
    stay as they are, but for those that hold nothing but comments.
    """
    body = _uncommented(body.replace("\r\n", "\n"))
    lines, tokens = body.split("\n"), _MD.parse(body)
    code = _code(tokens)
    trailers = {i for i, line in enumerate(lines) if i not in code and _TRAILER.match(line)}
    kept = []
    for section in _sections(tokens, lines):
        dropped = trailers | _guidance(section, lines)
        if _is_checklist(section, dropped):
            dropped |= _checklist_dropped(section, lines)
        else:
            dropped |= _placeholder_code(section)
        text = [
            line
            for i, line in enumerate(lines[section.start : section.end], section.start)
            if i not in dropped or not line.strip()
        ]
        if any(line.strip() for line in text):
            heading = [section.heading] if section.heading else []
            kept.append("\n".join(heading + text).strip("\n"))
    return _BLANKS.sub("\n\n", "\n\n".join(kept))


def _uncommented(body: str) -> str:
    """`body` without HTML comments, but in code, where they are text."""
    if "<!--" not in body:
        return body
    lines = body.split("\n")
    code = _code(_MD.parse(body))
    parts = []
    for is_code, group in groupby(range(len(lines)), key=code.__contains__):
        text = "\n".join(lines[i] for i in group)
        parts.append(text if is_code else HTML_COMMENT.sub("", text))
    return "\n".join(parts)


def _code(tokens: list[Token]) -> set[int]:
    """The lines of code blocks, fenced or indented."""
    return {i for t in tokens if t.type in ("fence", "code_block") for i in _span(t)}


def _sections(tokens: list[Token], lines: list[str]) -> list[_Section]:
    sections = [_Section("", 0)]
    heading = False
    for token in tokens:
        # A template's sections are # headings: a line over a stray "-" is not one.
        atx = token.type == "heading_open" and token.markup.startswith("#")
        if token.level == 0 and (atx or token.type == "hr") and token.map:
            start, end = token.map
            sections[-1].end = start
            if token.type == "hr":
                sections.append(_Section("", start, tokens=[token]))
            else:
                sections.append(_Section("\n".join(lines[start:end]), end))
            heading = atx
        elif heading:
            heading = token.type != "heading_close"
        else:
            sections[-1].tokens.append(token)
    sections[-1].end = len(lines)
    return sections


def _guidance(section: _Section, lines: list[str]) -> set[int]:
    """The lines of the quote the section opens with, up to the author's own text written
    right under it (a line that continues the quote after a full stop)."""
    first = section.tokens[0] if section.tokens else None
    if first is None or first.type != "blockquote_open" or not first.map:
        return set()
    start, end = first.map
    if _ALERT.match(lines[start]):  # > [!WARNING] and its kind: the author's own callout
        return set()
    for i in range(start + 1, end):
        if not lines[i].lstrip().startswith(">") and _SENTENCE_END.search(lines[i - 1]):
            return set(range(start, i))
    return set(range(start, end))


def _is_checklist(section: _Section, dropped: set[int]) -> bool:
    if not _CHECKLIST.search(section.heading):
        return False
    tokens = section.tokens
    return any(
        item.type == "list_item_open"
        and (para.type, inline.type) == ("paragraph_open", "inline")
        and _TASK.match(inline.content) is not None
        and not dropped.intersection(_span(item))
        for item, para, inline in zip(tokens, tokens[1:], tokens[2:], strict=False)
    )


def _checklist_dropped(section: _Section, lines: list[str]) -> set[int]:
    """Of a checklist, its quotes and the items that cite no PR or issue: the author's own
    paragraphs, and items that link their work, stay.

    A block right under a dropped item, with no blank line between, goes with it: the author
    wrote it as part of the item (a link pasted under an empty "-"), whatever Markdown reads.
    """
    dropped: set[int] = set()
    for token in section.tokens:
        span = _span(token)
        quote = token.type == "blockquote_open" and token.level == 0
        item = token.type == "list_item_open" and token.level == 1
        block = token.level == 0 and token.nesting != -1 and not token.type.endswith("list_open")
        under = block and span.start - 1 in dropped
        if under and lines[span.start - 1].strip():
            dropped.update(span)
        elif quote or (item and not PR_REF.search("\n".join(lines[i] for i in span))):
            dropped.update(span)
    return dropped


def _placeholder_code(section: _Section) -> set[int]:
    """The lines of the fenced code blocks that hold nothing but comments."""
    return {
        i
        for t in section.tokens
        if t.type == "fence"
        and all(_PLACEHOLDER_LINE.match(x.strip()) for x in t.content.split("\n") if x.strip())
        for i in _span(t)
    }


def _span(token: Token) -> range:
    return range(*token.map) if token.map else range(0)
