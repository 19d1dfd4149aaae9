"""Markdown and JSON from the views: no fetching, no model calls; Markdown escaping lives here."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2

from prhub.model import PRDigest, WeeklyReport
from prhub.publish import parts
from prhub.publish.parts import CODE_SPAN, DigestLink, Links, Text, linked_pr, one_line
from prhub.publish.view import digest_view, weekly_view
from prhub.text import PR_REF

__all__ = [
    "code",
    "digest_json",
    "digest_markdown",
    "markdown",
    "md",
    "md_text",
    "weekly_json",
    "weekly_markdown",
]

TEMPLATES = Path(__file__).parent / "templates"
PRUrl = Callable[[int], str]


def environment(**options: Any) -> jinja2.Environment:
    """The templates, as every format reads them: strict, and a line that holds only a tag
    leaves no line."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        **options,
    )


_INLINE_MARK = re.compile(
    r"\\(?=[!-/:-@\[-`{-~]|$)"  # a backslash that would escape the next mark or break the line
    r"|[`*~$\[]"  # code, emphasis, strikethrough, GitHub math, links and images
    r"|_+"  # emphasis, unless inside a word
    r"|<(?=\S)"  # HTML and autolinks
    r"|&(?=#\d{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)"  # entities
)
# Renderers older than CommonMark keep a backslash before < and & but all read entities.
_ENTITIES = {"<": "&lt;", "&": "&amp;"}
# Marks that start a block only at the start of a line: headings, quotes, lists, rules.
_BLOCK_START = re.compile(r"^(?:#{1,6}(?=\s|$)|>|[-+](?=\s|$)|-(?=-))")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")
_HEADING_END = re.compile(r"(?:(?<=\s)|^)#+$")  # the closing #s of a heading would vanish


def md(text: str | None, *, table: bool = False, pr_url: PRUrl | None = None) -> str:
    """Untrusted text as inert Markdown on one line: only its `code` spans stay markup, and its
    #123 link to `pr_url(123)` when given."""
    text = one_line(text)
    out, last = [], 0
    for match in CODE_SPAN.finditer(text):
        out += [_linked(text[last : match.start()], last == 0, False, pr_url), match.group(0)]
        last = match.end()
    out.append(_linked(text[last:], last == 0, True, pr_url))
    escaped = "".join(out)
    # GFM splits table rows at pipes before it reads code spans, so those are escaped too.
    return escaped.replace("|", "\\|") if table else escaped


def _linked(text: str, starts_line: bool, ends_text: bool, pr_url: PRUrl | None) -> str:
    """Text outside code spans escaped, its PR references linked."""
    if pr_url is None:
        return _escape(text, starts_line, ends_text)
    out, last = [], 0
    for match in PR_REF.finditer(text):
        if (number := linked_pr(match)) is None:
            continue
        out += [_escape(text[last : match.start()], starts_line and last == 0, False)]
        out.append(_pr_link(number, pr_url))
        last = match.end()
    out.append(_escape(text[last:], starts_line and last == 0, ends_text))
    return "".join(out)


def _linked_words(match: re.Match[str], pr_url: PRUrl) -> str:
    number = linked_pr(match)
    return match.group(0) if number is None else _pr_link(number, pr_url)


def _pr_link(number: int, pr_url: PRUrl) -> str:
    return f"[#{number}]({_address(pr_url(number))})"


def _escape(text: str, starts_line: bool, ends_text: bool) -> str:
    def mark(match: re.Match[str]) -> str:
        found = match.group(0)
        if found[0] == "_" and _inside_word(text, match.start(), match.end()):
            return found  # snake_case stays readable: CommonMark cannot open or close there
        return _ENTITIES.get(found) or "".join("\\" + c for c in found)

    text = _INLINE_MARK.sub(mark, text)
    if starts_line:
        text = _ORDERED.sub(r"\1\\\2", _BLOCK_START.sub(r"\\\g<0>", text))
    return _HEADING_END.sub(r"\\\g<0>", text) if ends_text else text


def _inside_word(text: str, start: int, end: int) -> bool:
    return 0 < start and end < len(text) and _wordlike(text[start - 1]) and _wordlike(text[end])


def _wordlike(char: str) -> bool:
    # CommonMark's flanking rules: neither whitespace nor Unicode punctuation (P*) or symbol (S*).
    return not char.isspace() and unicodedata.category(char)[0] not in "PS"


def code(text: str | None, *, table: bool = False) -> str:
    """Text as one Markdown code span that shows it exactly, whatever backticks it holds."""
    text = one_line(text)
    if not text:
        return ""
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" else ""
    span = f"{fence}{pad}{text}{pad}{fence}"
    return span.replace("|", "\\|") if table else span


def md_text(x: Text, table: bool = False, links: Links | None = None) -> str:
    """A view's text in Markdown: data escaped, prhub's words as written, PRs linked (with the
    view's `links`, also the #123 its texts cite)."""
    pr_url = links.pr if links else None
    match x:
        case str():
            return md(x, table=table, pr_url=pr_url)
        case parts.Tag():
            return md(x.text, table=table)
        case parts.Words() if pr_url:
            return PR_REF.sub(lambda m: _linked_words(m, pr_url), x.text)
        case parts.Words():
            return x.text
        case parts.Code():
            return code(x.text, table=table)
        case parts.Strong():
            return f"**{x.text}**"
        case parts.Verdict():
            return x.text if table else f"**{x.text}**"
        case parts.Flag():
            return x.text
        case parts.Link():
            return f"[{md_text(x.text, table)}]({_address(x.url)})"  # no link inside a link
        case parts.Refs():
            return x.sep.join(f"[#{n}]({_address(url)})" for n, url in x.prs) or "—"
        case parts.Line():
            return "".join(md_text(p, table, links) for p in x.parts)


def _address(url: str) -> str:
    """A link's address as Markdown reads it whole: no space, parenthesis or bracket unescaped."""
    return quote(url, safe="/:#?=&%.-_~+,;@!$'*")


@cache
def _env() -> jinja2.Environment:
    env = environment()
    env.filters["md"] = _md
    return env


@jinja2.pass_context
def _md(context: jinja2.runtime.Context, x: Text, table: bool = False) -> str:
    return md_text(x, table, getattr(context["v"], "links", None))  # a view without PRs has none


def markdown(template: str, view: object) -> str:
    """A view in Markdown, by its template."""
    return _env().get_template(template).render(v=view)


def digest_markdown(d: PRDigest, tz: str = "Asia/Shanghai") -> str:
    """One digest as Markdown, in the shape of a reader's daily digest."""
    return markdown("digest.md.j2", digest_view(d, tz))


def digest_json(d: PRDigest) -> str:
    return d.model_dump_json(indent=2) + "\n"


def weekly_markdown(r: WeeklyReport, *, digest_link: DigestLink | None = None) -> str:
    """The weekly report: lead, highlights and risks first, then the full report with its tables."""
    return markdown("weekly.md.j2", weekly_view(r, digest_link=digest_link))


def weekly_json(r: WeeklyReport) -> str:
    return r.model_dump_json(indent=2) + "\n"
