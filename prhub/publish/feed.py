"""A repository's Atom feed (RFC 4287): its latest weekly reports and digests, their summaries
as plain text (no Markdown). Ids and times come from the data, never the clock, so the same
store gives the same bytes."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from xml.etree import ElementTree

from prhub.model import PRDigest, WeeklyReport
from prhub.publish.parts import one_line, paragraphs
from prhub.publish.search import plain
from prhub.publish.view import weekly_title
from prhub.weekly.prose import lead

__all__ = ["DIGESTS", "WEEKS", "Entry", "atom", "digest_entry", "week_entry"]

ATOM = "http://www.w3.org/2005/Atom"
DIGESTS = 50  # the newest digests a feed carries
WEEKS = 50  # the newest weeks it carries: a reader follows what is new, not the archive
# What XML 1.0 cannot hold at all: most C0 controls, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class Entry:
    id: str  # an absolute IRI that stays the entry's for good
    title: str
    link: str  # the entry's page, relative to the feed
    updated: datetime
    summary: str
    published: datetime | None = None
    related: str = ""  # the PR on GitHub


def week_entry(r: WeeklyReport, repo_url: str, stem: str, link: str) -> Entry:
    """A weekly report: updated when its content was made, the window's end if never."""
    n = r.narrative
    return Entry(
        id=f"{repo_url}#prhub-weekly-{stem}",
        title=weekly_title(r),
        link=link,
        updated=r.meta.generated_at or r.facts.end,
        summary=plain((n.lead or lead(r.facts)) if n else lead(r.facts)),
        published=r.facts.end,
    )


def digest_entry(d: PRDigest, link: str) -> Entry:
    """A digest: its PR's address is its id; updated when it was made."""
    advice = paragraphs(d.content.advice)
    return Entry(
        id=d.url,
        title=f"#{d.number} {plain(d.content.title)}",
        link=link,
        updated=d.meta.created_at,
        summary=f"{d.content.verdict}（约 {d.content.minutes} 分钟）。"
        + plain(advice[0] if advice else ""),
        published=d.merged_at,
        related=d.url,
    )


def atom(repo: str, repo_url: str, home: str, entries: Iterable[Entry], base: str = "") -> str:
    """The feed's XML: newest entries first; `home` is the repository's page, and each entry's
    link, relative to the feed, made absolute on `base` (the feed's folder's address)."""
    ordered = sorted(entries, key=lambda e: (e.updated, e.id), reverse=True)
    root = ElementTree.Element("feed", {"xmlns": ATOM, "xml:lang": "zh-CN"})
    _text(root, "id", f"{repo_url}#prhub")
    _text(root, "title", f"{repo} · Prhub 导读与周报")
    _text(root, "updated", _time(max((e.updated for e in ordered), default=_EPOCH)))
    ElementTree.SubElement(
        root, "link", {"rel": "alternate", "type": "text/html", "href": base + home}
    )
    ElementTree.SubElement(root, "link", {"rel": "self", "href": f"{base}feed.xml"})
    author = ElementTree.SubElement(root, "author")
    _text(author, "name", repo)
    _text(root, "generator", "prhub")
    for e in ordered:
        entry = ElementTree.SubElement(root, "entry")
        _text(entry, "id", e.id)
        _text(entry, "title", e.title)
        ElementTree.SubElement(entry, "link", {"rel": "alternate", "href": base + e.link})
        if e.related:
            ElementTree.SubElement(entry, "link", {"rel": "related", "href": e.related})
        _text(entry, "updated", _time(e.updated))
        if e.published is not None:
            _text(entry, "published", _time(e.published))
        _text(entry, "summary", e.summary)
    ElementTree.indent(root)
    body = ElementTree.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="utf-8"?>\n{body}\n'


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _text(parent: ElementTree.Element, tag: str, text: str) -> None:
    ElementTree.SubElement(parent, tag).text = _NOT_XML.sub("", one_line(text))


def _time(moment: datetime) -> str:
    """RFC 3339 in UTC, to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
