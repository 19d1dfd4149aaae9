"""What a view is made of: text parts (data, prhub's words, code, PR links), blocks (paragraphs,
lists, tables), sections, a report's links, and the text rules every format follows."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar
from urllib.parse import quote, urlsplit

from prhub.text import ref_repo

# Text as a reader sees it, in every format

# A code span as CommonMark reads it: a backtick run closed by the next run of the same length.
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def linked_pr(match: re.Match[str]) -> int | None:
    """The number a PR reference (text.PR_REF) in a report's prose links to: a bare `#123` is
    the report's repository's; one naming a repository, or a page's address, stays as written."""
    return None if ref_repo(match) is not None else int(match.group(1))


# Everything str.splitlines() breaks at; a paragraph separator also ends a paragraph.
_BREAK = r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]"
# Invisible controls that reorder or hide text (bidi overrides and isolates, zero-width
# characters, byte-order marks): a title could read unlike what it says.
_HIDDEN = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def visible(text: str) -> str:
    """Text with its invisible controls named (‹U+202E›), so none acts unseen and none is lost."""
    return _HIDDEN.sub(lambda m: f"‹U+{ord(m.group()):04X}›", text)


def one_line(text: str | None) -> str:
    """Text on one line: each line or paragraph break, with the space around it, is one space."""
    return visible(re.sub(rf"\s*{_BREAK}\s*", " ", text or "").strip())


def paragraphs(text: str | None) -> list[str]:
    """Paragraphs, split at blank lines and paragraph separators, each on one line."""
    text = re.sub(r"\r\n?|[\v\f\x1c-\x1e\x85\u2028]", "\n", text or "").replace("\u2029", "\n\n")
    return [p for p in map(one_line, re.split(r"\n\s*\n", text)) if p]


# The parts of a text. A bare str is data (a PR's or the model's text), escaped where it is shown;
# a str field that is not a Text (a heading of a table, a label) is prhub's own words.


@dataclass(frozen=True)
class Shown:
    """Text shown a way of its own, which its class names."""

    text: str


class Words(Shown):
    """prhub's own words, shown as they are written."""


class Code(Shown):
    """Data shown exactly, as code: a tag, a path."""


class TagCode(Code):
    """A PR's tag, shown as code: a page never breaks it inside a word."""


class Tag(Shown):
    """A tag named in a sentence: code on a page, plain text in Markdown; never broken inside."""


class Strong(Shown):
    """A figure set in bold."""


class Verdict(Shown):
    """A reading verdict: a badge on a page; bold in Markdown, plain in its tables."""


@dataclass(frozen=True)
class Refs:
    """PRs with their URLs, read #1、#2 (— for none), each linked to its PR."""

    prs: tuple[tuple[int, str], ...]
    sep: str = "、"


@dataclass(frozen=True)
class Link:
    """Text linked to a page of prhub's own, such as a PR's digest: a relative address."""

    text: str | Words
    url: str


@dataclass(frozen=True)
class Flag:
    """A short marker on a row, such as a digest's failed checks; `why` says what it stands
    for (a page's tooltip)."""

    text: str
    why: str


Part = str | Words | Code | Tag | Strong | Verdict | Refs | Link | Flag


@dataclass(frozen=True)
class Line:
    """Words and data on one line, in order."""

    parts: tuple[Part, ...]


Text = Part | Line
# Where a PR's digest is, by number: a link, or None where there is none.
DigestLink = Callable[[int], str | None]

# The blocks of a section


@dataclass(frozen=True)
class Para:
    kind: ClassVar[str] = "para"
    text: Text


@dataclass(frozen=True)
class Items:
    """A list: `items`, then the `long` ones, which a page folds after the fifth."""

    kind: ClassVar[str] = "items"
    items: tuple[Text, ...] = ()
    numbered: bool = False
    long: tuple[Text, ...] = ()
    label: str = ""  # what the long ones are, for the fold's summary
    shown: ClassVar[int] = 5

    @property
    def folded(self) -> str:
        """What a page folds away, in its own words; "" when it folds nothing."""
        hidden = len(self.long) - self.shown
        return f"另有 {hidden} 项{self.label}（共 {len(self.long)} 项）" if hidden > 0 else ""


@dataclass(frozen=True)
class Row:
    cells: tuple[Text, ...]
    pr: int | None = None  # a row of the PR list: its PR and tags, for the page's tag filter
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    kind: ClassVar[str] = "table"
    head: tuple[str, ...]
    rows: tuple[Row, ...]
    columns: tuple[str, ...]  # each column's kind: "pr" (PRs), "num" (figures) or ""
    compact: bool = False


@dataclass(frozen=True)
class TagFilter:
    """A page's tag chips over the PR list: every tag with its PR count, and all PRs."""

    kind: ClassVar[str] = "filter"
    tags: tuple[tuple[str, int], ...]
    total: int


Block = Para | Items | Table | TagFilter


@dataclass(frozen=True)
class Section:
    heading: Text
    blocks: tuple[Block, ...] = ()
    sections: tuple[Section, ...] = ()
    level: int = 2
    callout: str = ""  # "highlights" or "risks": set apart at the top of a report
    empty: str = ""  # said when the section has nothing
    anchor: str = ""  # its heading's id, for links to it: the one GitHub gives its Markdown


# Where a report's PRs are


@dataclass(frozen=True)
class Links:
    """The web addresses of a report's PRs: a digest's own, else next to the others."""

    base: str  # the repository's web address
    known: Mapping[int, str]

    def pr(self, number: int) -> str:
        return self.known.get(number, f"{self.base}/pull/{number}")

    def commit(self, sha: str) -> str:
        return f"{self.base}/commit/{sha}"


def links(repo: str, urls: Mapping[int, str]) -> Links:
    """A report's links from its PRs' URLs; only plain http(s) ones, so none from the data can
    become a javascript: link."""
    known = {number: url for number, url in urls.items() if _web(url)}
    # GitHub Enterprise digests carry their host; PRs without a digest link next to them.
    base = next(
        (u.rsplit("/pull/", 1)[0] for u in known.values() if "/pull/" in u),
        f"https://github.com/{quote(repo, safe='/')}",
    )
    return Links(base, known)


def _web(url: str) -> bool:
    try:
        return urlsplit(url).scheme in ("http", "https")
    except ValueError:
        return False


# Texts built of parts


def anchor(heading: str) -> str:
    """The id GitHub gives a Markdown heading of this text (github-slugger): lower case, only
    letters, digits, marks, `_`, `-` and spaces, each space a `-`."""
    kept = (c for c in heading.lower() if c in "_- " or unicodedata.category(c)[0] in "LNM")
    return "".join(kept).replace(" ", "-")


def refs(urls: Links, numbers: Iterable[int], sep: str = "、") -> Refs:
    return Refs(tuple((n, urls.pr(n)) for n in numbers), sep)


def pr_heading(url: str, number: int, title: str, digest: str | None = None) -> Line:
    """A PR's heading: its number, linked, and a title, linked to its digest when there is one."""
    return Line((Refs(((number, url),)), Words(" "), titled(title, digest)))


def lined(*parts: Part) -> Text:
    """Parts as one text: a Line, or the part alone."""
    return parts[0] if len(parts) == 1 else Line(parts)


def titled(title: str, digest: str | None) -> Part:
    return Link(title, digest) if digest else title


def joined(parts: Iterable[Part | Line], sep: str) -> tuple[Part, ...]:
    """The parts with `sep` between them; a Line's parts inline."""
    out: list[Part] = []
    for part in parts:
        out += [Words(sep)] if out else []
        out += part.parts if isinstance(part, Line) else [part]
    return tuple(out)


def filled(make: Callable[[Callable[[str], str]], str]) -> Line:
    """A text the facts make with the data it names (`make(escape)`), its words and data apart."""
    data: list[str] = []

    def hole(value: str) -> str:
        data.append(value)
        return f"\0{len(data) - 1}\0"

    pieces = re.split("\0([0-9]+)\0", make(hole))
    parts = [data[int(p)] if i % 2 else Words(p) for i, p in enumerate(pieces)]
    return Line(tuple(p for p in parts if p != Words("")))
