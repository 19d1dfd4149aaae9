"""`prhub site`: a static site from the store, built from the one view of each report: a home
page, per repository its weeks, its stream of digests by month and a page per tag, a page per
week (with its Markdown, PDF and JSON) and per PR, an Atom feed, a search that needs no server,
and manifest.json, the list of every report and digest JSON file for a restore. Every link is
relative, so the site works from any folder of any static host, or from the disk.

One repository is in memory at a time; a page is rendered only when its inputs changed since
the last build (siteparts), and written into a copy of the site swapped in whole (swap)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from prhub.config import REPO_SHAPE, Settings
from prhub.digest.digest import retag
from prhub.errors import EmptySite
from prhub.model import PRDigest
from prhub.publish.formats import Format
from prhub.publish.manifest import MANIFEST
from prhub.publish.output import report_path
from prhub.publish.siteparts import Build, Printer, Repo, Week, documents
from prhub.publish.swap import Site
from prhub.store.store import Store
from prhub.text import plural

__all__ = ["PAGES_LIMIT", "SiteResult", "build"]

log = logging.getLogger("prhub")
PAGES_LIMIT = 1_000_000_000  # GitHub Pages' published site


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
    removed_weeks: tuple[str, ...] = ()  # published weeks this build removed
    size: int = 0  # the site's bytes

    def summary(self) -> str:
        """One line: what the site holds and what the build changed."""
        return (
            f"site in {self.out}: {plural(self.repos, 'repository', 'repositories')}, "
            f"{plural(self.weeks, 'week')}, {plural(self.digests, 'digest')}, "
            f"{plural(self.pdfs, 'PDF')}; {self.wrote} written, {self.unchanged} unchanged, "
            f"{self.removed} removed"
        )


def _names(store: Store, names: list[str] | None) -> list[str]:
    """The repositories to publish: all in the store, or those named in any spelling."""
    stored = store.repos()
    if names is not None:
        by_lower = {s.lower(): s for s in stored}
        stored = sorted({by_lower[n.lower()] for n in names if n.lower() in by_lower})
    chosen = []
    for name in stored:
        if not (REPO_SHAPE.fullmatch(name) and name.split("/")[1] not in {".", ".."}):
            log.warning("skipped %r: not a repository name a site can have a folder for", name)
            continue
        chosen.append(name)
    return chosen


def _repo(store: Store, name: str, settings: Settings) -> Repo | None:
    """One repository's reports and each PR's latest digest."""
    reports = store.reports(name)
    latest: dict[int, PRDigest] = {}
    for d in [*store.digests(name), *(d for r in reports for d in r.digests)]:
        old = latest.get(d.number)
        if old is None or old.meta.created_at < d.meta.created_at:
            latest[d.number] = d
    digests = sorted(latest.values(), key=_merged, reverse=True)
    weeks = [Week(r, report_path(r, Format.html, Path()).stem) for r in reports]
    if not weeks and not digests:
        return None
    return Repo(name, tuple(weeks), tuple(retag(d, settings) for d in digests))


def _merged(d: PRDigest) -> tuple[datetime, int]:
    return (d.merged_at or d.meta.created_at, d.number)


def build(
    settings: Settings,
    store: Store,
    out: Path,
    names: list[str] | None = None,
    want_pdf: bool | None = None,
) -> SiteResult:
    """Builds the site into `out`: PDFs when `want_pdf` (None: when Chromium is there)."""
    chosen = _names(store, names)
    which = f"for {', '.join(names)} " if names else ""
    empty = EmptySite(
        f"the store {store.path} holds no weekly report or digest {which}to publish: "
        "run prhub weekly first, or prhub import a published site"
    )
    if not chosen:
        raise empty
    with Site(out) as site:
        made = Build(site, settings, Printer(want_pdf))
        try:
            for name in chosen:
                if (repo := _repo(store, name, settings)) is not None:
                    made.repo(repo)
            if not made.cards:
                raise empty
            made.finish(partial(_again, store, chosen, settings))
        finally:
            made.index.close()
        site.finish()
        size = site.size()
    gone = tuple(_week_of(p) for p in site.removed_paths if _week_of(p))
    if gone:
        log.warning(
            "removed %s the store no longer holds: %s",
            plural(len(gone), "published week"),
            ", ".join(gone),
        )
    if not made.base:
        log.warning(
            "the feeds link relative to themselves: pass --url (or PRHUB_SITE_URL) with the "
            "site's address for absolute links"
        )
    if size > PAGES_LIMIT * 0.8:
        log.warning(
            "the site is %.0f MB, near GitHub Pages' 1 GB: publish a site per repository "
            "(prhub site OUT --repo OWNER/NAME)",
            size / 1e6,
        )
    return SiteResult(
        out=out,
        repos=len(made.cards),
        weeks=made.weeks,
        digests=made.digests,
        wrote=site.wrote,
        unchanged=site.unchanged,
        removed=site.removed,
        pdfs=made.pdfs,
        no_pdf=made.printer.why,
        removed_weeks=gone,
        size=size,
    )


def _again(store: Store, names: list[str], settings: Settings) -> Iterator[dict[str, Any]]:
    """Every search document, read from the store again one repository at a time."""
    for name in names:
        if (repo := _repo(store, name, settings)) is not None:
            yield from documents(repo, settings.tz)


def _week_of(path: str) -> str:
    """A published week's name (OWNER/REPO/STEM) for its report's JSON, else ""."""
    parts = path.split("/")
    if len(parts) == 3 and parts[2].endswith(".json") and parts[2] != MANIFEST:
        return path[: -len(".json")]
    return ""
