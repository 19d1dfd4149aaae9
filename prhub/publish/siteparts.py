"""The files of a site, each made only when its inputs changed since the last build: one
repository's (its weeks' files and pages, its digests' JSON and pages, its months, its tags, its
feed and its page), then the root's (style and script, search, the home page, manifest.json)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cache, partial
from typing import Any
from zoneinfo import ZoneInfo

from prhub.config import Settings
from prhub.errors import PdfUnavailable
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import feed, html, pages, pdf, render, search
from prhub.publish.manifest import MANIFEST, Published, manifest_json
from prhub.publish.pages import Card, Month, Pages, WeekRow, tag_file, week_row
from prhub.publish.parts import links
from prhub.publish.render import TEMPLATES
from prhub.publish.swap import Site

__all__ = ["Build", "Printer", "Repo", "Week", "documents", "site_address"]

NEWEST = 10  # digests a repository's page lists; the rest are in its months


@dataclass(frozen=True)
class Week:
    report: WeeklyReport
    stem: str  # the page's name without .html: 2026-W31, as the reports folder names it


@dataclass(frozen=True)
class Repo:
    name: str
    weeks: tuple[Week, ...]  # the latest window first
    digests: tuple[PRDigest, ...]  # each PR's latest, the latest merged first


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


def _json(model: WeeklyReport | PRDigest) -> tuple[str, str]:
    """The JSON a site publishes of a report or a digest, as --format json writes it, and its
    fingerprint, which stands for all a page makes of it."""
    text = model.model_dump_json(indent=2) + "\n"
    return text, hashlib.sha256(text.encode()).hexdigest()


class Build:
    """One build: the site being written, the search index, and what it publishes."""

    def __init__(self, site: Site, settings: Settings, printer: Printer) -> None:
        self.site, self.tz, self.printer = site, settings.tz, printer
        self.base = site_address(settings)
        self.index = search.Index()
        self.published: list[Published] = []
        self.cards: list[Card] = []
        self.weeks = self.digests = self.pdfs = 0

    def put(self, path: str, make: Callable[[], str | bytes], *inputs: object) -> str:
        """`path` as the last build wrote it when its inputs are the same, else made anew."""
        key = _key(path, *inputs)
        if self.site.kept(path, key):
            return self.site.files[path]
        return self.site.put(path, key, make())

    def repo(self, repo: Repo) -> None:
        """Every file of one repository: leaves first, the pages that link to them after."""
        at, tz, name = f"{repo.name}/", self.tz, repo.name
        here, deeper = Pages(2, tz, name), Pages(3, tz, name)
        made = {w.stem: _json(w.report) for w in repo.weeks}
        hashes = {stem: h for stem, (_, h) in made.items()}
        rows = _Rows(repo.weeks, tz, hashes)
        entries: list[feed.Entry] = []
        appears: dict[int, list[str]] = defaultdict(list)
        for i, m in enumerate(rows.mains):
            for w in (m, *rows.variants[m.stem]):
                self.week(at, w, made[w.stem], rows, i, here)
                entries.append(feed.week_entry(w.report, _repo_url(repo), w.stem, f"{w.stem}.html"))
                for d in w.report.digests:
                    appears[d.number].append(w.stem)
        months: dict[str, list[PRDigest]] = defaultdict(list)
        tagged: dict[str, list[PRDigest]] = defaultdict(list)
        digest_hash = {}
        for d in repo.digests:
            text, h = _json(d)
            digest_hash[d.number] = h
            path = f"{at}pr/{d.number}"
            sha = self.put(f"{path}.json", partial(str, text), h)
            self.published.append(Published(f"{path}.json", "digest", name, sha))
            stems = appears.get(d.number, [])
            self.put(
                f"{path}.html",
                partial(_digest_page, deeper, d, name, rows, stems),
                h,
                [(stem, hashes[stem]) for stem in stems],
                tz,
            )
            self.index.note(f"{path}.html", h)
            months[_month(d, tz)].append(d)
            for t in d.tags:
                tagged[t].append(d)
        stream = [Month(m, f"stream/{m}.html", len(ds)) for m, ds in sorted(months.items())][::-1]
        for i, month in enumerate(stream):
            ds = months[month.name]
            near = (stream[i - 1] if i else None, stream[i + 1] if i + 1 < len(stream) else None)
            self.put(
                f"{at}{month.href}",
                partial(deeper.month, name, month, ds, near),
                [digest_hash[d.number] for d in ds],
                near,
            )
        for tag, ds in tagged.items():
            self.put(
                f"{at}{tag_file(tag)}",
                partial(deeper.tag, name, tag, ds),
                tag,
                [digest_hash[d.number] for d in ds],
            )
        counts = sorted((t, len(ds)) for t, ds in tagged.items())
        self.put(f"{at}tags.html", lambda: here.tags(name, counts), counts)
        newest = repo.digests[: feed.DIGESTS]
        entries += [feed.digest_entry(d, f"pr/{d.number}.html") for d in newest]
        base = f"{self.base}{at}" if self.base else ""
        self.put(
            f"{at}feed.xml",
            lambda: feed.atom(name, _repo_url(repo), "index.html", entries, base),
            [hashes[w.stem] for w in repo.weeks],
            [digest_hash[d.number] for d in newest],
            base,
        )
        top = repo.digests[:NEWEST]
        self.put(
            f"{at}index.html",
            lambda: here.repo(name, rows.listed(), top, stream, len(tagged)),
            rows.keys,
            [digest_hash[d.number] for d in top],
            stream,
            len(tagged),
        )
        latest = next((i for i, m in enumerate(rows.mains) if m.report.facts.pr_count), None)
        shown = rows.entry(latest) if latest is not None else None
        self.cards.append(
            Card(
                name,
                replace(shown, href=f"{at}{shown.href}", variants=()) if shown else None,
                len(rows.mains),
                len(repo.digests),
                links(name, {d.number: d.url for d in repo.digests[:1]}),
            )
        )
        self.weeks += len(repo.weeks)
        self.digests += len(repo.digests)

    def week(
        self, at: str, w: Week, made: tuple[str, str], rows: _Rows, i: int, here: Pages
    ) -> None:
        """A week's files: its JSON, Markdown and PDF, then its page (entry `i` of `rows`)."""
        r, path = w.report, f"{at}{w.stem}"
        text, h = made
        sha = self.put(f"{path}.json", lambda: text, h)
        self.published.append(Published(f"{path}.json", "report", r.facts.repo, sha))
        self.put(f"{path}.md", lambda: render.weekly_markdown(r, digest_link=pages.digest_page), h)
        wanted = self.printer.want is not False
        printed = wanted and self.site.kept(f"{path}.pdf", _key(f"{path}.pdf", h))
        if wanted and not printed and (doc := self.printer(html.weekly_html(r))) is not None:
            self.site.put(f"{path}.pdf", _key(f"{path}.pdf", h), doc)
            printed = True
        self.pdfs += printed
        self.index.note(f"{path}.html", h)
        self.put(
            f"{path}.html",
            lambda: here.week(r, w.stem, printed, rows.around(i), rows.entry(i).variants),
            h,
            printed,
            rows.keys[max(0, i - 1) : i + 2],
        )

    def finish(self, documents: Callable[[], Iterator[dict[str, Any]]]) -> None:
        """The root's files: style and script, search (from `documents`, in the order the
        repositories noted them, when it changed), the home page, the manifest."""
        for path, text in pages.assets().items():
            self.site.put(path, _key(path), text)
        key = _key("search", self.index.key, self.index.shards, self.tz)
        parts = [p for p in self.site.old.inputs if p.startswith(f"{search.FOLDER}/")]
        if not self.site.kept_all([*parts, "search.html"], key):
            for entry in documents():
                self.index.add(entry)
            for path, text in self.index.files():
                self.site.put(path, key, text)
            page = Pages(0, self.tz).search(self.index.shards, self.index.count)
            self.site.put("search.html", key, page)
        cards = self.cards
        self.put("index.html", lambda: Pages(0, self.tz).home(cards), cards)
        self.site.put(MANIFEST, _key(MANIFEST), manifest_json(self.published))


class _Rows:
    """A repository's weeks as its lists show them, each made only when a page shows it: the
    pages' inputs are the weeks' names and fingerprints."""

    def __init__(self, weeks: Sequence[Week], tz: str, hashes: dict[str, str]) -> None:
        self.mains, self.variants = _entries(weeks, tz)
        self.by_stem = {w.stem: w for w in weeks}
        self.hashes = hashes
        self._made: dict[str, WeekRow] = {}
        # What the entries are made of: each week's name and fingerprint, its variants' names.
        self.keys = [
            (m.stem, hashes[m.stem], tuple(v.stem for v in self.variants[m.stem]))
            for m in self.mains
        ]

    def row(self, stem: str) -> WeekRow:
        if stem not in self._made:
            self._made[stem] = week_row(self.by_stem[stem].report, f"{stem}.html")
        return self._made[stem]

    def entry(self, i: int) -> WeekRow:
        """The i-th entry: its main week's row, with its other time zones."""
        m = self.mains[i]
        variants = tuple((v.report.facts.tz, f"{v.stem}.html") for v in self.variants[m.stem])
        return replace(self.row(m.stem), variants=variants)

    def listed(self) -> list[WeekRow]:
        return [self.entry(i) for i in range(len(self.mains))]

    def around(self, i: int) -> tuple[WeekRow | None, WeekRow | None]:
        """The entries before and after the i-th: newer, older."""
        newer = self.entry(i - 1) if i else None
        return newer, self.entry(i + 1) if i + 1 < len(self.mains) else None

    def up(self, stems: Sequence[str]) -> list[WeekRow]:
        """The rows of these weeks as a PR's page (in pr/) links them."""
        return [replace(self.row(s), href=f"../{s}.html") for s in stems]


def _digest_page(at: Pages, d: PRDigest, name: str, rows: _Rows, stems: list[str]) -> str:
    return at.digest(d, name, rows.up(stems))


def _entries(weeks: Sequence[Week], tz: str) -> tuple[list[Week], dict[str, list[Week]]]:
    """One entry per ISO week (in the site's time zone if it has one, else the first) with the
    same week's other time zones inside it; each window of dates an entry of its own; the
    latest first."""
    groups: dict[object, list[Week]] = {}
    for w in weeks:
        f = w.report.facts
        groups.setdefault((f.year, f.week) if f.week is not None else w.stem, []).append(w)
    mains, variants = [], {}
    for group in groups.values():
        main = next((w for w in group if w.report.facts.tz == tz), group[0])
        mains.append(main)
        variants[main.stem] = [w for w in group if w is not main]
    return sorted(mains, key=_latest, reverse=True), variants


def _latest(w: Week) -> tuple[datetime, bool, datetime]:
    """The latest period ends last; of two that end together, the ISO week comes first."""
    f = w.report.facts
    return (f.end, f.week is not None, f.start)


def documents(repo: Repo, tz: str) -> Iterator[dict[str, Any]]:
    """A repository's search documents, in the order a build notes them."""
    mains, variants = _entries(repo.weeks, tz)
    for m in mains:
        for w in (m, *variants[m.stem]):
            yield search.week_entry(w.report, f"{repo.name}/{w.stem}.html")
    for d in repo.digests:
        yield search.digest_entry(d, f"{repo.name}/pr/{d.number}.html", tz)


def _month(d: PRDigest, tz: str) -> str:
    return (d.merged_at or d.meta.created_at).astimezone(ZoneInfo(tz)).strftime("%Y-%m")


def _repo_url(repo: Repo) -> str:
    """The repository's web address, on its digests' host (GitHub Enterprise too)."""
    return links(repo.name, {d.number: d.url for d in repo.digests[:1]}).base


def site_address(settings: Settings) -> str:
    """The site's address, ending in /: --url (site_url), else report_url's where it names the
    site's week pages (https://HOST/PATH/{repo}/{week}.html); "" when neither says it."""
    if settings.site_url:
        return settings.site_url
    url = settings.report_url
    if url and url.endswith("{repo}/{week}.html") and "{" not in url[: -len("{repo}/{week}.html")]:
        return url[: -len("{repo}/{week}.html")]
    return ""
