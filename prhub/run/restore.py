"""`prhub import`: a store rebuilt from the JSON prhub wrote, so a rerun pays for nothing again.

A folder (a built site, a reports folder of `--format json`, or both) is walked for weekly
reports and digests; each file is read whole and checked before anything of it is kept, and
the store keeps whichever of two entries was made later.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prhub.config import Settings
from prhub.errors import ConfigError
from prhub.model import PRDigest, Usage, WeeklyReport
from prhub.prepare.redact import scrub_reply
from prhub.run.keys import narrative_key
from prhub.store.store import Store, StoredNarrative, made_at
from prhub.text import plural

log = logging.getLogger("prhub")

Week = tuple[WeeklyReport, str, StoredNarrative | None]


class Invalid(Exception):
    """A file that claims to be prhub's but is not what prhub writes."""


@dataclass
class Restored:
    """What an import found and kept."""

    folder: Path
    digests: int = 0  # written to the store
    weeks: int = 0
    skipped: int = 0  # files: not prhub's, or invalid
    redacted: int = 0  # secret-shaped texts replaced by markers before they were kept
    problems: list[str] = field(default_factory=list)  # one line per invalid file

    def summary(self) -> str:
        """imported N digests and M weeks from DIR (K files skipped)."""
        text = (
            f"imported {plural(self.digests, 'digest')} and {plural(self.weeks, 'week')} "
            f"from {self.folder} ({plural(self.skipped, 'file')} skipped"
        )
        if self.redacted:
            text += f", {plural(self.redacted, 'secret-shaped text')} redacted"
        return text + ")"


def import_dir(folder: Path, settings: Settings) -> Restored:
    """Restores every weekly report and digest under `folder` into the store of `settings`.

    A digest is found again by its `meta.cache_key`; a week's narrative by its report's
    `meta.narrative_key` (for a report without one, the key these settings would give it).
    """
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is no directory"
        raise ConfigError(
            f"{folder} {what}: name the folder a site or `prhub weekly --format json` wrote"
        )
    done = Restored(folder)
    digests: dict[str, PRDigest] = {}
    weeks: dict[tuple[str, datetime, datetime], Week] = {}
    # A digest's own file before a report's copy of it: among equals, the first one is kept.
    for item in sorted(_read(folder, done), key=lambda x: isinstance(x, WeeklyReport)):
        if isinstance(item, PRDigest):
            _newest(digests, item)
            continue
        for d in item.digests:
            _newest(digests, d)
        f = item.facts
        week = (item, item.meta.narrative_key or _key(item, settings), _narrative(item))
        old = weeks.get((f.repo, f.start, f.end))
        if old is None or made_at(old[0]) < made_at(item):
            weeks[(f.repo, f.start, f.end)] = week
    with closing(Store(settings.store)) as store:
        done.digests, done.weeks = store.restore(list(digests.values()), list(weeks.values()))
    return done


def _read(folder: Path, done: Restored) -> Iterator[PRDigest | WeeklyReport]:
    """Each weekly report and digest under `folder`, checked and cleaned of secrets; the
    other JSON files counted as skipped, an invalid one also named in `done.problems`."""
    for path in sorted(p for p in folder.rglob("*.json") if p.is_file()):
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            log.info("%s: skipped, not JSON prhub wrote (%s)", path, exc)
            done.skipped += 1
            continue
        kind = _kind(data)
        if kind is None:
            log.info("%s: skipped, neither a weekly report nor a digest", path)
            done.skipped += 1
            continue
        try:
            item = _checked(kind, data)
        except Invalid as exc:
            done.problems.append(f"{path}: {exc}")
            done.skipped += 1
            continue
        item, found = scrub_reply(item)
        if found:
            count = sum(found.values())
            kinds = ", ".join(sorted(found))
            log.warning("%s: %s replaced by markers (%s)", path, plural(count, "secret"), kinds)
            done.redacted += count
        yield item


def _kind(data: Any) -> type[PRDigest] | type[WeeklyReport] | None:
    """What a JSON document claims to be, by the keys only prhub's have."""
    if not isinstance(data, dict) or "meta" not in data:
        return None
    if {"facts", "digests"} <= data.keys():
        return WeeklyReport
    if {"content", "number", "repo"} <= data.keys():
        return PRDigest
    return None


def _checked(kind: type[PRDigest] | type[WeeklyReport], data: Any) -> PRDigest | WeeklyReport:
    """`data` as `kind`, with what a rerun finds it by; Invalid says what is wrong."""
    name = "weekly report" if kind is WeeklyReport else "digest"
    try:
        item: PRDigest | WeeklyReport = kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise Invalid(
            f"not a valid {name}: {where}: {first['msg']} ({plural(exc.error_count(), 'problem')})"
        ) from None
    for d in item.digests if isinstance(item, WeeklyReport) else [item]:
        if not d.meta.cache_key:
            raise Invalid(f"the digest of #{d.number} has no meta.cache_key to be found by")
        _aware(d.meta.created_at, f"the digest of #{d.number}: meta.created_at")
    if isinstance(item, WeeklyReport):
        if item.narrative is not None and item.meta.generated_at is None:
            raise Invalid("a narrative without meta.generated_at")
        if item.meta.generated_at is not None:
            _aware(item.meta.generated_at, "meta.generated_at")
        if min(_spent(item).model_dump().values()) < 0:
            raise Invalid("meta.usage is less than its digests' usage")
    return item


def _aware(when: datetime, where: str) -> None:
    if when.utcoffset() is None:
        raise Invalid(f"{where} has no timezone")


def _spent(report: WeeklyReport) -> Usage:
    """What the narrative cost: the report's usage less its digests'."""
    return report.meta.usage - sum((d.meta.usage for d in report.digests), Usage())


def _narrative(report: WeeklyReport) -> StoredNarrative | None:
    """The report's narrative as the store keeps it."""
    made, m = report.meta.generated_at, report.meta
    if report.narrative is None or made is None:
        return None
    return StoredNarrative(
        report.narrative, m.dropped_citations, _spent(report), made, tuple(m.dropped)
    )


def _key(report: WeeklyReport, settings: Settings) -> str:
    """The narrative's key under `settings`, for a report made before reports named it."""
    return narrative_key(report.facts, report.digests, settings) if report.narrative else ""


def _newest(found: dict[str, PRDigest], d: PRDigest) -> None:
    """Keeps `d` under its key unless one made at its time or later is there."""
    old = found.get(d.meta.cache_key)
    if old is None or old.meta.created_at < d.meta.created_at:
        found[d.meta.cache_key] = d
