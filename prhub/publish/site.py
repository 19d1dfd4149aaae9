"""`prhub site`: a static site from the store, built from the one view of each report: a home
page, per repository its weeks, its stream of digests and a tag view, a page per week (with its
Markdown, PDF and JSON) and per PR, an Atom feed, and a search that needs no server. Every link
is relative, so the site works from any folder of any static host, or from the disk."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from prhub.config import REPO_SHAPE, Settings
from prhub.digest.digest import retag
from prhub.errors import EmptySite, PdfUnavailable
from prhub.model import PRDigest, Usage, WeeklyFacts, WeeklyMeta, WeeklyReport
from prhub.publish import feed, html, labels, manifest, pdf, render, search
from prhub.publish.formats import Format
from prhub.publish.manifest import Record
from prhub.publish.output import report_path
from prhub.publish.pages import Pages, digest_page, week_row
from prhub.publish.parts import links
from prhub.publish.rows import LabelsView
from prhub.store.store import Store
from prhub.text import plural

__all__ = ["Repo", "SiteResult", "Week", "build", "gather"]

log = logging.getLogger("prhub")


@dataclass(frozen=True)
class Week:
    report: WeeklyReport
    stem: str  # the page's name without .html: 2026-W31, as the reports folder names it


@dataclass(frozen=True)
class Repo:
    name: str
    weeks: tuple[Week, ...]  # the latest window first
    digests: tuple[PRDigest, ...]  # each PR's latest, the latest merged first

    def appears(self, number: int) -> tuple[Week, ...]:
        """The weeks whose report holds this PR's digest, the latest first."""
        return tuple(w for w in self.weeks if any(d.number == number for d in w.report.digests))


@dataclass(frozen=True)
class SiteResult:
    out: Path
    repos: int
    weeks: int
    digests: int
    wrote: int
    unchanged: int
    removed: int
    pdfs: int
    no_pdf: str  # why some week has no PDF: Chromium could not print it

    def summary(self) -> str:
        """One line: what the site holds and what the build changed."""
        return (
            f"site in {self.out}: {plural(self.repos, 'repository', 'repositories')}, "
            f"{plural(self.weeks, 'week')}, {plural(self.digests, 'digest')}, "
            f"{plural(self.pdfs, 'PDF')}; {self.wrote} written, {self.unchanged} unchanged, "
            f"{self.removed} removed"
        )


def gather(store: Store, names: list[str] | None, settings: Settings) -> list[Repo]:
    """The repositories to publish (all in the store, or those named), with their reports and
    each PR's latest digest; a name the store spells otherwise is found all the same."""
    stored = store.repos()
    if names is not None:
        by_lower = {s.lower(): s for s in stored}
        stored = sorted({by_lower[n.lower()] for n in names if n.lower() in by_lower})
    found = []
    for name in stored:
        if not (REPO_SHAPE.fullmatch(name) and name.split("/")[1] not in {".", ".."}):
            log.warning("skipped %r: not a repository name a site can have a folder for", name)
            continue
        reports = store.reports(name)
        latest: dict[int, PRDigest] = {}
        for d in [*store.digests(name), *(d for r in reports for d in r.digests)]:
            old = latest.get(d.number)
            if old is None or old.meta.created_at < d.meta.created_at:
                latest[d.number] = d
        digests = sorted(latest.values(), key=_merged, reverse=True)
        weeks = [Week(r, report_path(r, Format.html, Path()).stem) for r in reports]
        found.append(Repo(name, tuple(weeks), tuple(retag(d, settings) for d in digests)))
    return [r for r in found if r.weeks or r.digests]


def _merged(d: PRDigest) -> tuple[datetime, int]:
    return (d.merged_at or d.meta.created_at, d.number)


Printer = Callable[[str, str], bytes | None]  # a PDF's path and its page -> the PDF, or none


def build(
    settings: Settings,
    store: Store,
    out: Path,
    names: list[str] | None = None,
    want_pdf: bool | None = None,
) -> SiteResult:
    """Builds the site into `out`: PDFs when `want_pdf` (None: when Chromium is there)."""
    repos = gather(store, names, settings)
    if not repos:
        which = f"for {', '.join(names)} " if names else ""
        raise EmptySite(
            f"the store {store.path} holds no weekly report or digest {which}to publish: "
            "run prhub weekly first, or prhub import a published site"
        )
    old = manifest.read(out)
    printer = _Printer(out, old, want_pdf)
    files, printed = site_files(repos, settings.tz, printer)
    done = manifest.write_site(out, files, printed, old)
    return SiteResult(
        out=out,
        repos=len(repos),
        weeks=sum(len(r.weeks) for r in repos),
        digests=sum(len(r.digests) for r in repos),
        wrote=done.wrote,
        unchanged=done.unchanged,
        removed=done.removed,
        pdfs=len(printed),
        no_pdf=printer.why,
    )


class _Printer:
    """A week's PDF: the last build's when its page is the same, else printed by Chromium;
    none with --no-pdf, nor without Chromium unless --pdf asks for them (then an error)."""

    def __init__(self, out: Path, old: Record, want: bool | None) -> None:
        self.out, self.old, self.want = out, old, want
        self.why = ""  # why the site lacks a PDF, when Chromium could not print one

    def __call__(self, path: str, page: str) -> bytes | None:
        if self.want is False:
            return None
        if (kept := manifest.reused(self.out, self.old, path, page)) is not None:
            return kept
        if self.why:
            return None
        try:
            return pdf.pdf(page)
        except PdfUnavailable as exc:
            if self.want:
                raise
            self.why = str(exc)
            return None


def site_files(
    repos: list[Repo], tz: str, printer: Printer
) -> tuple[dict[str, bytes], dict[str, str]]:
    """Every file of the site by its path, and each PDF's page's fingerprint."""
    files: dict[str, str | bytes] = {}
    printed: dict[str, str] = {}
    index: list[dict[str, object]] = []
    for repo in repos:
        at, here, deeper = f"{repo.name}/", Pages(2, tz), Pages(3, tz)
        url = _repo_url(repo)
        entries: list[feed.Entry] = []
        rows = [week_row(w.report, f"{w.stem}.html") for w in repo.weeks]
        # The same rows as a PR's page (in pr/) lists them.
        up = {
            w.stem: replace(row, href=f"../{row.href}")
            for w, row in zip(repo.weeks, rows, strict=True)
        }
        for i, w in enumerate(repo.weeks):
            r, path = w.report, f"{at}{w.stem}"
            page = html.weekly_html(r)  # a PDF prints the report's own page
            made = printer(f"{path}.pdf", page)
            if made is not None:
                files[f"{path}.pdf"], printed[f"{path}.pdf"] = made, manifest.digest(page)
            newer, older = rows[i - 1] if i else None, rows[i + 1] if i + 1 < len(rows) else None
            files[f"{path}.html"] = here.week(r, w.stem, made is not None, newer, older)
            files[f"{path}.md"] = render.weekly_markdown(r, digest_link=digest_page)
            files[f"{path}.json"] = render.weekly_json(r)
            entries.append(feed.week_entry(r, url, w.stem, f"{w.stem}.html"))
            index.append(search.week_entry(r, f"{path}.html"))
        for d in repo.digests:
            path = f"{at}pr/{d.number}"
            weeks = [up[w.stem] for w in repo.appears(d.number)]
            files[f"{path}.html"] = deeper.digest(d, repo.name, weeks)
            files[f"{path}.json"] = render.digest_json(d)
            index.append(search.digest_entry(d, f"{path}.html", tz))
        entries += [
            feed.digest_entry(d, f"pr/{d.number}.html") for d in repo.digests[: feed.DIGESTS]
        ]
        files[f"{at}index.html"] = here.repo(repo.name, rows, repo.digests)
        files[f"{at}tags.html"] = here.tags(_tag_view(repo, tz), repo.name)
        files[f"{at}feed.xml"] = feed.atom(repo.name, url, "index.html", entries)
    home = Pages(0, tz)
    cards = [
        (
            r.name,
            week_row(r.weeks[0].report, f"{r.name}/{r.weeks[0].stem}.html") if r.weeks else None,
            len(r.weeks),
            len(r.digests),
            links(r.name, {d.number: d.url for d in r.digests}),
        )
        for r in repos
    ]
    files["index.html"] = home.home(cards)
    data = search.index_json(index)
    files["search.json"] = data
    files["search.html"] = home.search(data)
    encoded = {p: x.encode("utf-8") if isinstance(x, str) else x for p, x in files.items()}
    return encoded, printed


def _repo_url(repo: Repo) -> str:
    """The repository's web address, on its digests' host (GitHub Enterprise too)."""
    return links(repo.name, {d.number: d.url for d in repo.digests[:1]}).base


def _tag_view(repo: Repo, tz: str) -> LabelsView:
    """The repository's digests by tag, as the labels view groups a week's."""
    digests = sorted(repo.digests, key=lambda d: d.number)
    times = [d.merged_at or d.meta.created_at for d in digests]
    facts = repo.weeks[0].report.facts if repo.weeks else None
    start = min(times, default=facts.start if facts else None)
    end = max(times, default=facts.end if facts else None)
    assert start is not None and end is not None  # a repository has a week or a digest
    window = WeeklyReport(
        facts=WeeklyFacts(
            repo=repo.name,
            year=start.year,
            start=start,
            end=end + timedelta(seconds=1),
            tz=tz,
            prs=[d.number for d in digests],
            pr_count=len(digests),
        ),
        narrative=None,
        digests=digests,
        meta=WeeklyMeta(prompt="", model="", usage=Usage()),
    )
    return labels.view(window).model_copy(update={"title": f"全部 {len(digests)} 个 PR"})
