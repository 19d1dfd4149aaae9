"""The files of a site, each made only when its inputs changed since the last build: one
repository's (its weeks' files and pages, its digests' pages and JSON, its months and tags, its
feed and its page), then the root's (style and script, search, the home page, manifest.json).
A repository is read from the store an entry at a time (sitedata): what a build holds in memory
does not grow with its history."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import cache, partial

from prhub.config import Settings
from prhub.errors import PdfUnavailable
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import feed, html, pages, pdf, render, search, sitelists
from prhub.publish.manifest import MANIFEST
from prhub.publish.pages import Card, Pages, WeekRow
from prhub.publish.parts import links
from prhub.publish.render import TEMPLATES
from prhub.publish.sitedata import Sources, survey
from prhub.publish.siteindex import Entry, Lists, Memo, WeekNote
from prhub.publish.swap import Site
from prhub.store.store import Store

__all__ = ["Build", "Printer", "site_address"]

NEWEST = 10  # digests a repository's page lists; the rest are in its months
RECENT = 52  # weeks its page lists whole; the older ones a link each, by year


class Printer:
    """A week's PDF printed by Chromium; none with --no-pdf, nor without Chromium unless --pdf
    asks for them (then an error)."""

    def __init__(self, want: bool | None) -> None:
        self.want = want
        self.why = ""  # why the site lacks a PDF, when Chromium could not print one

    def __call__(self, page: str) -> bytes | None:
        if self.want is False or self.why:
            return None
        try:
            return pdf.pdf(page)
        except PdfUnavailable as exc:
            if self.want:
                raise
            self.why = str(exc)
            return None


@cache
def _version() -> str:
    """What every page is made with besides its data: prhub's templates and version."""
    from prhub import __version__

    made = hashlib.sha256(__version__.encode())
    for path in sorted(TEMPLATES.rglob("*")):
        if path.is_file():
            made.update(path.name.encode() + path.read_bytes())
    return made.hexdigest()


def _key(*inputs: object) -> str:
    return hashlib.sha256(repr((_version(), inputs)).encode()).hexdigest()


def _json(model: WeeklyReport | PRDigest) -> str:
    """The JSON a site publishes of a report or a digest: what --format json writes, without
    its indentation (a quarter of its bytes)."""
    return model.model_dump_json() + "\n"


class Build:
    """One build: the site being written, the search index, and what it publishes."""

    def __init__(self, site: Site, settings: Settings, printer: Printer) -> None:
        self.site, self.settings, self.tz, self.printer = site, settings, settings.tz, printer
        self.base = site_address(settings)
        # What every page is made with besides its data: the settings that change what it shows.
        self.salt = (settings.tz, sorted(settings.tags.items()), self.base)
        self.index = search.Index()
        self.lists = Lists()
        self.memo = Memo(site.root.parent / f".{site.root.name}.prhub-memo")
        self.done = False
        self.cards: list[Card] = []
        self.weeks = self.digests = self.pdfs = 0

    def put(
        self,
        path: str,
        make: Callable[[], str | bytes],
        *inputs: object,
        kind: str = "",
        repo: str = "",
    ) -> str:
        """`path` as the last build wrote it when its inputs are the same, else made anew; a
        report's or a digest's JSON is of `kind` "report" or "digest", of `repo` (the manifest
        lists them)."""
        key = _key(path, self.salt, *inputs)
        if (sha := self.site.kept(path, key, kind, repo)) is not None:
            return sha
        return self.site.put(path, key, make(), kind, repo)

    def repo(self, store: Store, name: str) -> bool:
        """Every file of one repository, leaves first, the pages that link to them after;
        False when the store holds nothing of it to publish."""
        weeks = survey(store, name, self.settings, self.memo, self.lists)
        count = self.lists.count()
        if not weeks and not count:
            return False
        at, tz, src = f"{name}/", self.tz, Sources(store, name, self.settings)
        here = Pages(2, tz, name)
        newest = self.lists.newest(feed.DIGESTS)
        home = links(name, {n.number: n.url for n, _ in newest[:1]}).base
        rows = _Rows(weeks, tz)
        entries: list[feed.Entry] = []
        self.lists.rank([w.stem for m in rows.mains for w in (m, *rows.variants[m.stem])])
        for i, m in enumerate(rows.mains):
            for w in (m, *rows.variants[m.stem]):
                self.week(at, w, rows, i, here, src)
                entries.append(_entry(w.entry, f"{home}#prhub-weekly-{w.stem}", f"{w.stem}.html"))
        entries = sorted(entries, key=lambda e: (e.updated, e.id), reverse=True)[: feed.WEEKS]
        fed = {e.id for e in entries}
        self.pages(at, name, rows, src)
        stream = sitelists.months(self.put, at, self.lists, src, tz)
        counts = sitelists.tags(self.put, at, self.lists, src, tz)
        self.put(f"{at}tags.html", lambda: here.tags(name, counts), counts)
        entries += [_entry(n.entry, n.url, f"pr/{n.number}.html", n.url) for n, _ in newest]
        base = f"{self.base}{at}" if self.base else ""
        self.put(
            f"{at}feed.xml",
            lambda: feed.atom(name, home, "index.html", entries, base),
            [(w.stem, w.fp) for w in weeks if f"{home}#prhub-weekly-{w.stem}" in fed],
            [n.fp for n, _ in newest],
            home,
        )
        top = newest[:NEWEST]
        self.put(
            f"{at}index.html",
            lambda: here.repo(
                name,
                rows.listed()[:RECENT],
                [src.digest(s) for _, s in top],
                stream,
                len(counts),
                rows.archive(RECENT),
            ),
            rows.keys,
            [n.fp for n, _ in top],
            [(m.name, m.count) for m in stream],
            len(counts),
        )
        latest = next((i for i, m in enumerate(rows.mains) if m.prs), None)
        shown = rows.entry(latest) if latest is not None else None
        self.cards.append(
            Card(
                name,
                replace(shown, href=f"{at}{shown.href}", variants=()) if shown else None,
                len(rows.mains),
                count,
                links(name, {n.number: n.url for n, _ in newest[:1]}),
            )
        )
        self.weeks += len(weeks)
        self.digests += count
        return True

    def week(self, at: str, w: WeekNote, rows: _Rows, i: int, here: Pages, src: Sources) -> None:
        """A week's files: its JSON, Markdown and PDF, then its page (entry `i` of `rows`)."""
        path, h = f"{at}{w.stem}", w.fp
        self.put(f"{path}.json", lambda: _json(src.report(w)), h, kind="report", repo=src.name)
        self.put(
            f"{path}.md",
            lambda: render.weekly_markdown(src.report(w), digest_link=pages.digest_page),
            h,
        )
        wanted = self.printer.want is not False
        key = _key(f"{path}.pdf", self.salt, h)
        printed = wanted and self.site.kept(f"{path}.pdf", key) is not None
        if wanted and not printed:
            if (doc := self.printer(html.weekly_html(src.report(w)))) is not None:
                self.site.put(f"{path}.pdf", key, doc)
                printed = True
        self.pdfs += printed
        self.index.note(f"{path}.html", h)
        self.lists.note_week(w.stem)
        self.put(
            f"{path}.html",
            lambda: here.week(
                src.report(w), w.stem, printed, rows.around(i), rows.entry(i).variants
            ),
            h,
            printed,
            rows.keys[max(0, i - 1) : i + 2],
        )

    def pages(self, at: str, name: str, rows: _Rows, src: Sources) -> None:
        """Each digest's page, and its JSON where no week's JSON holds it as it is."""
        deeper = Pages(3, self.tz, name)
        for row in self.lists.latest():
            path = f"{at}pr/{row.number}"
            stems, held = self.lists.weeks(row)
            if held is None:
                make = partial(_digest_json, src, row.source)
                self.put(f"{path}.json", make, row.fp, kind="digest", repo=name)
            self.put(
                f"{path}.html",
                partial(_digest_page, deeper, src, row.source, name, rows, stems, held),
                row.fp,
                [(stem, rows.fp(stem)) for stem in stems],
                held,
            )
            self.index.note(f"{path}.html", row.fp)
        self.lists.note_digests()

    def finish(self) -> None:
        """The root's files: style and script, search (when it changed, from the entries in
        the order the repositories noted them), the home page, the manifest."""
        for path, text in pages.assets().items():
            self.site.put(path, _key(path), text)
        key = _key("search", self.index.key, self.index.shards, self.tz)
        parts = self.site.books.old_paths(f"{search.FOLDER}/")
        if not self.site.kept_all([*parts, "search.html"], key):
            for path, text in self.index.files(self.lists.docs()):
                self.site.put(path, key, text)
            page = Pages(0, self.tz).search(self.index.shards, self.index.count)
            self.site.put("search.html", key, page)
        cards = self.cards
        self.put("index.html", lambda: Pages(0, self.tz).home(cards), cards)
        self.site.put(MANIFEST, _key(MANIFEST), self.site.books.manifest(self.digests))
        self.done = True

    def close(self) -> None:
        self.lists.close()
        self.memo.close(self.done)


class _Rows:
    """A repository's weeks as its lists show them: one entry per ISO week, its other time
    zones inside it; the pages' inputs are the weeks' names and fingerprints."""

    def __init__(self, weeks: Sequence[WeekNote], tz: str) -> None:
        self.mains, self.variants = _entries(weeks, tz)
        self.by_stem = {w.stem: w for w in weeks}
        # What the entries are made of: each week's name and fingerprint, its variants' names.
        self.keys = [
            (m.stem, m.fp, tuple(v.stem for v in self.variants[m.stem])) for m in self.mains
        ]

    def fp(self, stem: str) -> str:
        return self.by_stem[stem].fp

    def entry(self, i: int) -> WeekRow:
        """The i-th entry: its main week's row, with its other time zones."""
        m = self.mains[i]
        variants = tuple((v.tz, f"{v.stem}.html") for v in self.variants[m.stem])
        return replace(m.row(f"{m.stem}.html"), variants=variants)

    def listed(self) -> list[WeekRow]:
        return [self.entry(i) for i in range(len(self.mains))]

    def archive(self, after: int) -> list[tuple[str, list[tuple[str, str]]]]:
        """The entries after the first `after`, by year: each a short name and its page."""
        years: dict[str, list[tuple[str, str]]] = {}
        for m in self.mains[after:]:
            first, _, last = m.period.partition(" 至 ")
            year = str(m.year) if m.week is not None else first[:4]
            label = f"W{m.week:02d}" if m.week is not None else f"{first[5:]} 至 {last[5:]}"
            years.setdefault(year, []).append((label, f"{m.stem}.html"))
        return list(years.items())

    def around(self, i: int) -> tuple[WeekRow | None, WeekRow | None]:
        """The entries before and after the i-th: newer, older."""
        newer = self.entry(i - 1) if i else None
        return newer, self.entry(i + 1) if i + 1 < len(self.mains) else None

    def up(self, stems: Sequence[str]) -> list[WeekRow]:
        """The rows of these weeks as a PR's page (in pr/) links them."""
        return [self.by_stem[s].row(f"../{s}.html") for s in stems]


def _digest_json(src: Sources, source: str) -> str:
    return _json(src.digest(source))


def _digest_page(
    at: Pages,
    src: Sources,
    source: str,
    name: str,
    rows: _Rows,
    stems: list[str],
    held: str | None,
) -> str:
    d = src.digest(source)
    return at.digest(d, name, rows.up(stems), held)


def _entries(
    weeks: Sequence[WeekNote], tz: str
) -> tuple[list[WeekNote], dict[str, list[WeekNote]]]:
    """One entry per ISO week (in the site's time zone if it has one, else the first) with the
    same week's other time zones inside it; each window of dates an entry of its own; the
    latest first."""
    groups: dict[object, list[WeekNote]] = {}
    for w in weeks:
        groups.setdefault((w.year, w.week) if w.week is not None else w.stem, []).append(w)
    mains, variants = [], {}
    for group in groups.values():
        main = next((w for w in group if w.tz == tz), group[0])
        mains.append(main)
        variants[main.stem] = [w for w in group if w is not main]
    return sorted(mains, key=_latest, reverse=True), variants


def _latest(w: WeekNote) -> tuple[datetime, bool, datetime]:
    """The latest period ends last; of two that end together, the ISO week comes first."""
    return (w.last, w.week is not None, w.first)


def _entry(e: Entry, id: str, link: str, related: str = "") -> feed.Entry:
    """A feed's entry from a note's."""
    return feed.Entry(id, e.title, link, e.updated, e.summary, e.published, related)


def site_address(settings: Settings) -> str:
    """The site's address, ending in /: --url (site_url), else report_url's where it names the
    site's week pages (https://HOST/PATH/{repo}/{week}.html); "" when neither says it."""
    if settings.site_url:
        return settings.site_url
    url = settings.report_url
    if url and url.endswith("{repo}/{week}.html") and "{" not in url[: -len("{repo}/{week}.html")]:
        return url[: -len("{repo}/{week}.html")]
    return ""
