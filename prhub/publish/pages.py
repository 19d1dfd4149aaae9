"""The site's pages from the views: the home page, a repository's weeks and stream of digests,
its tag view, a week's page, a PR's page and the search page. Each page inlines its style and
script, loads nothing, and links only relative to where it is."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from markupsafe import Markup

from prhub.model import VERDICTS, PRDigest, WeeklyReport
from prhub.publish import html, view
from prhub.publish.footers import MARKER, failed_checks, local_time
from prhub.publish.parts import Flag, Line, Links, Verdict, Words, links, paragraphs, pr_heading
from prhub.publish.render import TEMPLATES
from prhub.publish.rows import LabelsView
from prhub.publish.view import check_marker, period, tags_view, weekly_title, weekly_view

__all__ = ["Pages", "WeekRow", "digest_page", "week_row"]


def digest_page(number: int) -> str:
    """Where a PR's page is from its repository's folder: a week's rows link there."""
    return f"pr/{number}.html"


@dataclass(frozen=True)
class WeekRow:
    """A week as a list shows it: its page, title, window, counts, and what it lacks."""

    href: str
    title: str
    period: str
    prs: int
    key_prs: int
    lead: str
    flag: Flag | None  # for a week with PRs missing or digests failing checks: its notice


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
    """A repository on the home page, with its latest week."""

    name: str
    latest: WeekRow | None
    weeks: int
    digests: int
    links: Links


@dataclass(frozen=True)
class Item:
    """A digest in a repository's stream, as 000 and 002 list them."""

    heading: Line  # with the marker of failed checks, naming them
    verdict: Verdict
    minutes: int
    importance: float
    advice: str  # the first paragraph
    tags: tuple[str, ...]
    merged: str
    author: str


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
    tags: tuple[tuple[str, int], ...] = ()


class Pages:
    """The pages at one depth under the site's root (0: the root, 2: a repository's folder)."""

    def __init__(self, depth: int, tz: str) -> None:
        self.root = "../" * depth
        self.tz = tz

    def _page(self, template: str, v: object, script: str = "site.js", **values: Any) -> str:
        return (
            html.page_environment()
            .get_template(f"site/{template}")
            .render(**_assets(script), v=v, root=self.root, text=html.html_text, **values)
        )

    def home(self, cards: Sequence[tuple[str, WeekRow | None, int, int, Links]]) -> str:
        made = tuple(Card(*c) for c in cards)
        return self._page("home.html", SiteView("Prhub", links("", {}), cards=made))

    def repo(self, name: str, weeks: Sequence[WeekRow], digests: Sequence[PRDigest]) -> str:
        """A repository's weeks, newest first, and its digests, filterable by verdict and tag."""
        urls = links(name, {d.number: d.url for d in digests})
        items = tuple(_item(d, urls, self.tz) for d in digests)
        verdicts = Counter[str](d.content.verdict for d in digests)
        tags = Counter(t for d in digests for t in d.tags)
        v = SiteView(
            title=f"{name} · Prhub",
            links=urls,
            name=name,
            weeks=tuple(weeks),
            items=items,
            verdicts=tuple((x, verdicts[x]) for x in VERDICTS if verdicts[x]),
            tags=tuple(sorted(tags.items(), key=lambda t: (-t[1], t[0]))),
        )
        return self._page("repo.html", v)

    def week(
        self,
        r: WeeklyReport,
        stem: str,
        pdf: bool,
        newer: WeekRow | None,
        older: WeekRow | None,
    ) -> str:
        """A week's page: the report's view, its downloads, and the weeks around it."""
        v = weekly_view(r, digest_link=digest_page)
        downloads = [("Markdown", f"{stem}.md")]
        downloads += [("PDF", f"{stem}.pdf")] if pdf else []
        downloads += [("JSON", f"{stem}.json")]
        return self._page(
            "week.html", v, name=r.facts.repo, downloads=downloads, newer=newer, older=older
        )

    def digest(self, d: PRDigest, name: str, weeks: Sequence[WeekRow]) -> str:
        """A PR's page: its digest, its PR on GitHub, and the weeks it appears in."""
        v = view.digest_view(d, self.tz)
        return self._page("pr.html", v, name=name, d=d, weeks=weeks, github=v.links.pr(d.number))

    def tags(self, labels_view: LabelsView, name: str) -> str:
        return self._page("tags.html", tags_view(labels_view, digest_link=digest_page), name=name)

    def search(self, index: str) -> str:
        """The search page, holding the index: a page opened from the disk may fetch nothing."""
        data = Markup(index.strip().replace("<", "\\u003c"))  # no </script> can end it early
        v = SiteView("搜索 · Prhub", links("", {}))
        return self._page("search.html", v, script="search.js", index=data)


def _item(d: PRDigest, urls: Links, tz: str) -> Item:
    c = d.content
    marker = check_marker(d)
    flagged = (Words(" "), Flag(marker, f"未通过检查：{failed_checks(d)}")) if marker else ()
    heading = pr_heading(urls.pr(d.number), d.number, c.title, digest_page(d.number))
    heading = Line((*heading.parts, *flagged))
    advice = paragraphs(c.advice)
    return Item(
        heading=heading,
        verdict=Verdict(c.verdict),
        minutes=c.minutes,
        importance=c.importance,
        advice=advice[0] if advice else "",
        tags=tuple(d.tags),
        merged=local_time(d.merged_at, tz)[:10] if d.merged_at else "未合并",
        author=d.author,
    )


@cache
def _assets(script: str) -> dict[str, str]:
    """page.css and page.js, then the site's own style and script."""
    css = "\n".join(
        (TEMPLATES / p).read_text(encoding="utf-8") for p in ("page.css", "site/site.css")
    )
    js = "\n".join(
        (TEMPLATES / p).read_text(encoding="utf-8")
        for p in ("page.js", "site/site.js", *([f"site/{script}"] if script != "site.js" else []))
    )
    return html.assets(css, js)
