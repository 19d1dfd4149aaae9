"""The site's pages from the views: the home page, a repository's weeks, its stream of digests
by month, a page per tag and their index, a week's page, a PR's page and the search page. Every
page loads the site's one style and one script (prhub.css, prhub.js at the root), and links
only relative to where it is."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from prhub.model import VERDICTS, PRDigest, WeeklyReport
from prhub.publish import html, view
from prhub.publish.footers import MARKER, failed_checks, local_time
from prhub.publish.parts import (
    Flag,
    Items,
    Line,
    Link,
    Links,
    Section,
    Tag,
    Text,
    Verdict,
    Words,
    links,
    paragraphs,
    pr_heading,
)
from prhub.publish.render import TEMPLATES
from prhub.publish.rows import KINDS
from prhub.publish.view import TagsView, check_marker, period, weekly_title, weekly_view

__all__ = [
    "Item",
    "Month",
    "Pages",
    "Paging",
    "WeekRow",
    "assets",
    "digest_page",
    "item",
    "tag_file",
    "week_row",
]


def digest_page(number: int) -> str:
    """Where a PR's page is from its repository's folder: a week's rows link there."""
    return f"pr/{number}.html"


def tag_file(tag: str) -> str:
    """A tag's page in its repository's folder, by a name that stays the tag's for good: the
    tag itself when it is a plain word, else its word characters and a short hash."""
    if re.fullmatch(r"[^\W_][\w.-]*", tag) and tag == tag.lower():
        return f"tags/{tag}.html"
    slug = re.sub(r"[^\w.-]+", "-", tag.lower()).strip("-._") or "tag"
    return f"tags/{slug}-{hashlib.sha256(tag.encode()).hexdigest()[:6]}.html"


@dataclass(frozen=True)
class WeekRow:
    """A week as a list shows it: its page, title, window, counts, what it lacks, and the same
    ISO week's reports in other time zones."""

    href: str
    title: str
    period: str
    prs: int
    key_prs: int
    lead: str
    flag: Flag | None  # for a week with PRs missing or digests failing checks: its notice
    variants: tuple[tuple[str, str], ...] = ()  # (time zone, page) of the same ISO week


def week_row(r: WeeklyReport, href: str) -> WeekRow:
    first, last = period(r)
    v = weekly_view(r)
    return WeekRow(
        href=href,
        title=weekly_title(r),
        period=f"{first} 至 {last}",
        prs=r.facts.pr_count,
        key_prs=len(r.facts.key_prs),
        lead=v.lead,
        flag=Flag("⚠ 不完整" if _missing(r) else MARKER, v.notice) if v.notice else None,
    )


def _missing(r: WeeklyReport) -> bool:
    """Whether some PR of the week has no digest in the report."""
    return bool(r.failed) or len(r.digests) < r.facts.pr_count


@dataclass(frozen=True)
class Card:
    """A repository on the home page, with its latest week that has PRs."""

    name: str
    latest: WeekRow | None
    weeks: int
    digests: int
    links: Links


@dataclass(frozen=True)
class Item:
    """A digest in a list, as 000, 002 and 004 list them."""

    heading: Line  # with the marker of failed checks, naming them
    verdict: Verdict
    minutes: int
    importance: float
    advice: str  # the first paragraph
    tags: tuple[tuple[str, str], ...]  # each tag and its page, from the repository's folder
    merged: str
    author: str


TITLE = 120  # characters of a title a list shows: a long one is cut, its page has it whole
ADVICE = 300  # characters of advice a list shows
TAGS = 8  # tags a list shows under a digest


def item(
    d: PRDigest, urls: Links, tz: str, up: str = "", *, sentence: bool = False, linked: bool = True
) -> Item:
    """A digest as a list shows it, each part of a bounded size (its page has it whole): its
    advice's first paragraph (or only its first `sentence`); its PR linked on GitHub too unless
    not `linked`. `up` leads from the page to the repository's folder."""
    c = d.content
    marker = check_marker(d)
    flagged = (Words(" "), Flag(marker, f"未通过检查：{failed_checks(d)}")) if marker else ()
    title = _clipped(c.title, TITLE)
    page = up + digest_page(d.number)
    heading = (
        pr_heading(urls.pr(d.number), d.number, title, page)
        if linked
        else Line((Link(f"#{d.number} {title}", page),))
    )
    advice = paragraphs(c.advice)
    if advice and sentence:
        advice = [_sentence(advice[0])]
    return Item(
        heading=Line((*heading.parts, *flagged)),
        verdict=Verdict(c.verdict),
        minutes=c.minutes,
        importance=c.importance,
        advice=_clipped(advice[0], ADVICE) if advice else "",
        tags=tuple((t, tag_file(t)) for t in d.tags[:TAGS]),
        merged=local_time(d.merged_at, tz)[:10] if d.merged_at else "未合并",
        author=d.author,
    )


def _clipped(text: str, most: int) -> str:
    """`text` cut to `most` characters, with an ellipsis where it was cut; a code span cut in
    two is closed, so no mark is left open."""
    text = " ".join(text.split())
    if len(text) <= most:
        return text
    cut = text[:most]
    return cut + ("`" if cut.count("`") % 2 else "") + "…"


@dataclass(frozen=True)
class Paging:
    """Where a page of a long list is among the others: the pages of older and newer digests
    (from this page), the months around a month's newest page, and what the page holds."""

    older: str | None = None
    newer: str | None = None
    months: tuple[Month | None, Month | None] = (None, None)  # newer, older
    total: int | None = None  # the whole list's digests, on its newest page
    span: str = ""  # on an older page: the days its PRs were merged


@dataclass(frozen=True)
class Month:
    """A month of a repository's stream: its page and how many digests it holds."""

    name: str  # 2026-07
    href: str  # from the repository's folder
    count: int


@dataclass(frozen=True)
class SiteView:
    """What a site page shows besides a report's own view: its title and parts."""

    title: str
    links: Links
    name: str = ""  # the repository's
    cards: tuple[Card, ...] = ()
    weeks: tuple[WeekRow, ...] = ()
    items: tuple[Item, ...] = ()
    verdicts: tuple[tuple[str, int], ...] = ()
    tags: tuple[tuple[str, int, str], ...] = ()  # tag, count, page
    months: tuple[Month, ...] = ()
    heading: str = ""


class Pages:
    """The pages at one depth under the site's root (0: the root, 2: a repository's folder)."""

    def __init__(self, depth: int, tz: str, repo: str = "") -> None:
        self.root = "../" * depth
        self.tz = tz
        self.of = repo  # whose tags a page links: the repository's folder from here
        self.here = "../" * (depth - 2) if repo else ""

    def _page(self, template: str, v: object, **values: Any) -> str:
        return (
            html.page_environment()
            .get_template(f"site/{template}")
            .render(
                v=v,
                root=self.root,
                text=html.html_text,
                tag_href=lambda t: f"{self.here}{tag_file(t)}",
                up=self.here,
                **values,
            )
        )

    def home(self, cards: Sequence[Card]) -> str:
        return self._page("home.html", SiteView("Prhub", links("", {}), cards=tuple(cards)))

    def repo(
        self,
        name: str,
        weeks: Sequence[WeekRow],
        newest: Sequence[PRDigest],
        months: Sequence[Month],
        tags: int,
        older: Sequence[tuple[str, Sequence[tuple[str, str]]]] = (),
    ) -> str:
        """A repository's weeks, newest first (then the `older` ones by year, a link each), its
        newest digests and its stream's months."""
        urls = links(name, {d.number: d.url for d in newest})
        v = SiteView(
            title=f"{name} · Prhub",
            links=urls,
            name=name,
            weeks=tuple(weeks),
            items=tuple(item(d, urls, self.tz) for d in newest),
            months=tuple(months),
        )
        total = sum(m.count for m in months)
        return self._page("repo.html", v, tag_count=tags, total=total, older=older)

    def month(self, name: str, month: str, digests: Sequence[PRDigest], at: Paging) -> str:
        """A page of a month of the stream: its digests, filterable by verdict and tag."""
        urls = links(name, {d.number: d.url for d in digests})
        verdicts = Counter[str](d.content.verdict for d in digests)
        tags = Counter(t for d in digests for t in d.tags)
        v = SiteView(
            title=f"{name} · {month} · Prhub",
            links=urls,
            name=name,
            # A line each, and the advice's first sentence: the digest's page has the rest.
            items=tuple(
                item(d, urls, self.tz, self.here, sentence=True, linked=False) for d in digests
            ),
            verdicts=tuple((x, verdicts[x]) for x in VERDICTS if verdicts[x]),
            tags=tuple((t, n, tag_file(t)) for t, n in sorted(tags.items(), key=_by_count)),
            heading=month,
        )
        return self._page("month.html", v, page=at)

    def tag(self, name: str, tag: str, digests: Sequence[PRDigest], at: Paging) -> str:
        """A page of a tag's digests, the latest merged first: each a line of its title,
        verdict and importance. A digest is under each of its tags: its advice is on its page
        and in its month, not repeated here."""
        urls = links(name, {d.number: d.url for d in digests})
        v = SiteView(
            title=f"{tag} · {name} · Prhub",
            links=urls,
            name=name,
            items=tuple(item(d, urls, self.tz, self.here, linked=False) for d in digests),
            heading=tag,
        )
        return self._page("tag.html", v, page=at)

    def tags(self, name: str, counts: Sequence[tuple[str, str, int]]) -> str:
        """The repository's tags by what they name (module, type, label), most digests first,
        each linking to its page: the labels view's body, as `prhub labels` shows a week's."""
        kinds: dict[str, list[Text]] = {}
        for tag, kind, n in sorted(counts, key=lambda c: (-c[2], c[0])):
            kinds.setdefault(kind, []).append(Line((Tag(tag), Words(f"（{n}）"))))
        v = TagsView(
            title=f"{name} · 标签视图 · Prhub",
            heading=Line((name, Words(" · 标签视图"))),
            sections=tuple(
                Section(Words(KINDS[k]), (Items(tuple(kinds[k])),)) for k in KINDS if k in kinds
            ),
            available=None,
            links=links(name, {}),
        )
        return self._page("tags.html", v, name=name)

    def week(
        self,
        r: WeeklyReport,
        stem: str,
        pdf: bool,
        around: tuple[WeekRow | None, WeekRow | None],
        variants: Sequence[tuple[str, str]],
    ) -> str:
        """A week's page: the report's view, its downloads, its other time zones and the weeks
        around it."""
        v = weekly_view(r, digest_link=digest_page)
        downloads = [("Markdown", f"{stem}.md")]
        downloads += [("PDF", f"{stem}.pdf")] if pdf else []
        downloads += [("JSON", f"{stem}.json")]
        newer, older = around
        return self._page(
            "week.html",
            v,
            name=r.facts.repo,
            downloads=downloads,
            newer=newer,
            older=older,
            variants=variants,
        )

    def digest(
        self, d: PRDigest, name: str, weeks: Sequence[WeekRow], held: str | None = None
    ) -> str:
        """A PR's page: its digest, its PR on GitHub, the weeks it appears in, and its JSON:
        its own file, or the week's (`held`) that holds it as it is."""
        v = view.digest_view(d, self.tz)
        c = d.content
        if not c.importance_reason.strip():  # no reason: the score ends its line
            parts = v.verdict.parts
            v = replace(v, verdict=Line((*parts[:-2], Words("/10"))))
        bare = not (v.advice or v.sections)
        return self._page(
            "pr.html",
            v,
            name=name,
            d=d,
            weeks=weeks,
            github=v.links.pr(d.number),
            bare=bare,
            json=(f"../{held}.json", "JSON（周报中）") if held else (f"{d.number}.json", "JSON"),
        )

    def search(self, shards: int, docs: int) -> str:
        """The search page: its script loads the index's parts a query needs."""
        v = SiteView("搜索 · Prhub", links("", {}))
        return self._page("search.html", v, shards=shards, docs=docs)


def _sentence(text: str) -> str:
    """A paragraph's first sentence."""
    end = re.search(r"[。！？]+", text)
    return text[: end.end()] if end else text


def _by_count(pair: tuple[str, int]) -> tuple[int, str]:
    return (-pair[1], pair[0])


@cache
def assets() -> dict[str, str]:
    """The site's shared files: one style and one script for every page, and search's."""

    def joined(*names: str) -> str:
        return "\n".join((TEMPLATES / n).read_text(encoding="utf-8") for n in names)

    return {
        "prhub.css": joined("page.css", "site/site.css"),
        "prhub.js": joined("page.js", "site/site.js"),
        "search.js": joined("site/search.js"),
    }
