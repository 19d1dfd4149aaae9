"""`prhub import`: a store rebuilt from the JSON prhub wrote, so a rerun pays for nothing again.

A folder (a built site, a reports folder of `--format json`, or both) is walked for weekly
reports and digests; each file is read whole and checked as the online path checks what it
keeps (sizes, time zones, names, links, times) before anything of it is kept, and the store
keeps whichever of two entries was made later. A file that claims to be prhub's and fails a
check is refused and named; the command then fails, the valid files imported.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from prhub.config import REPO_SHAPE, Settings, named_zone
from prhub.defaults import CHARS_PER_TOKEN
from prhub.errors import ConfigError, ImportRefused
from prhub.model import PRDigest, Usage, WeeklyReport
from prhub.names import web_host
from prhub.prepare.redact import scrub_reply
from prhub.run.keys import narrative_key
from prhub.store.store import Store, StoredNarrative, made_at
from prhub.text import plural

log = logging.getLogger("prhub")

Week = tuple[WeeklyReport, str, StoredNarrative | None]
# The largest file read: a week of a thousand digests is a few MB, and GitHub's largest answer
# prhub reads is as big (source_http.MAX_ANSWER).
MAX_FILE = 64 * 2**20
SKEW = timedelta(minutes=10)  # how far ahead of this machine's clock another's may be


class Invalid(Exception):
    """A file that claims to be prhub's but is not what prhub writes."""


@dataclass
class Restored:
    """What an import found and kept."""

    folder: Path
    digests: int = 0  # written to the store
    weeks: int = 0
    skipped: int = 0  # refused files: claiming to be prhub's, but unreadable or invalid
    ignored: int = 0  # other JSON files: not a report nor a digest (a site's search index)
    redacted: int = 0  # secret-shaped texts replaced by markers before they were kept
    problems: list[str] = field(default_factory=list)  # one line per refused file

    def summary(self) -> str:
        """imported N digests and M weeks from DIR (K files refused)."""
        text = (
            f"imported {plural(self.digests, 'digest')} and {plural(self.weeks, 'week')} "
            f"from {self.folder} ({plural(self.skipped, 'file')} refused"
        )
        if self.ignored:
            text += f", {plural(self.ignored, 'other JSON file')} ignored"
        if self.redacted:
            text += f", {plural(self.redacted, 'secret-shaped text')} redacted"
        return text + ")"

    def refused(self) -> ImportRefused | None:
        """The error the command ends with when files were refused."""
        if not self.skipped:
            return None
        return ImportRefused(
            f"{plural(self.skipped, 'file')} of {self.folder} refused (named above): the valid "
            "ones are imported; replace the refused ones with files prhub wrote, and import again"
        )


@dataclass(frozen=True)
class Rules:
    """What the online path accepts, as an imported file must meet it."""

    longest: int  # characters of the longest text one reply can hold
    host: str  # where GitHub's pages are, for the GitHub API configured
    scheme: str
    now: datetime

    @classmethod
    def of(cls, settings: Settings, now: datetime | None = None) -> Rules:
        host = web_host(settings.github_url)
        enterprise = host != "github.com" and not host.endswith(".ghe.com")
        scheme = settings.github_url.split("://")[0].lower() if enterprise else "https"
        when = now or datetime.now(UTC)
        return cls(settings.output_tokens * CHARS_PER_TOKEN, host, scheme, when)

    def pr_url(self, repo: str, number: int) -> str:
        return f"{self.scheme}://{self.host}/{repo}/pull/{number}"


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
    rules = Rules.of(settings)
    # A digest's own file before a report's copy of it: among equals, the first one is kept.
    read = _read(folder, done, rules)
    for item in sorted(read, key=lambda x: isinstance(x, WeeklyReport)):
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


def _read(folder: Path, done: Restored, rules: Rules) -> Iterator[PRDigest | WeeklyReport]:
    """Each weekly report and digest under `folder`, checked and cleaned of secrets; a file
    that claims to be prhub's and fails is counted and named in `done.problems`, other JSON
    files are counted as ignored."""
    for path in sorted(p for p in folder.rglob("*.json") if p.is_file()):
        try:
            if (size := path.stat().st_size) > MAX_FILE:
                raise Invalid(f"{size:,} bytes, more than any file prhub writes ({MAX_FILE:,})")
            data = _json(path)
            kind = _kind(data)
            if kind is None:
                log.info("%s: ignored, neither a weekly report nor a digest", path)
                done.ignored += 1
                continue
            item = _checked(kind, data, rules)
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


def _json(path: Path) -> Any:
    """A file's JSON value; Invalid when it cannot be read as JSON."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not JSON"
        raise Invalid(f"cannot be read ({why})") from None


def _kind(data: Any) -> type[PRDigest] | type[WeeklyReport] | None:
    """What a JSON document claims to be, by the keys only prhub's have."""
    if not isinstance(data, dict) or "meta" not in data:
        return None
    if {"facts", "digests"} <= data.keys():
        return WeeklyReport
    if {"content", "number", "repo"} <= data.keys():
        return PRDigest
    return None


def _checked(
    kind: type[PRDigest] | type[WeeklyReport], data: Any, rules: Rules
) -> PRDigest | WeeklyReport:
    """`data` as `kind`, with what a rerun finds it by; Invalid says what is wrong."""
    name = "weekly report" if kind is WeeklyReport else "digest"
    try:
        where = _longest(data, rules.longest)
    except RecursionError:
        raise Invalid("nested deeper than anything prhub writes") from None
    if where is not None:
        raise Invalid(
            f"a text longer than one reply can hold ({rules.longest:,} characters) at {where}"
        )
    try:
        item: PRDigest | WeeklyReport = kind.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise Invalid(
            f"not a valid {name}: {where}: {first['msg']} ({plural(exc.error_count(), 'problem')})"
        ) from None
    for d in item.digests if isinstance(item, WeeklyReport) else [item]:
        _digest(d, rules)
    if isinstance(item, WeeklyReport):
        _week(item, rules)
    return item


def _digest(d: PRDigest, rules: Rules) -> None:
    """Refuses a digest the online path would not have made."""
    what = f"the digest of #{d.number}"
    if not d.meta.cache_key:
        raise Invalid(f"{what} has no meta.cache_key to be found by")
    _repo(d.repo, f"{what}: repo")
    if not 1 <= d.number < 2**31:
        raise Invalid(f"{what}: no PR number")
    if d.url and d.url.lower() != rules.pr_url(d.repo, d.number).lower():
        raise Invalid(
            f"{what} links to {d.url[:100]!r}, not to {rules.pr_url(d.repo, d.number)} on the "
            "GitHub configured (--github-url)"
        )
    if len(d.content.model_dump_json()) > rules.longest:
        raise Invalid(f"{what}: content longer than one reply can hold")
    _past(d.meta.created_at, f"{what}: meta.created_at", rules)
    if d.merged_at is not None:
        _past(d.merged_at, f"{what}: merged_at", rules)


def _week(report: WeeklyReport, rules: Rules) -> None:
    """Refuses a week the online path would not have made, or a site could not show."""
    f, m = report.facts, report.meta
    _repo(f.repo, "facts.repo")
    try:
        named_zone(f.tz)
    except ConfigError:
        raise Invalid(f"facts.tz: unknown time zone {f.tz[:60]!r}") from None
    if f.week is not None and not 1 <= f.week <= 53 or not 2008 <= f.year <= 9999:
        raise Invalid(f"facts: no ISO week {f.year}-W{f.week}")
    _past(f.start, "facts.start", rules)
    if f.start >= f.end:
        raise Invalid(f"facts: the window starts ({f.start}) after it ends ({f.end})")
    others = sorted({d.repo for d in report.digests if d.repo.lower() != f.repo.lower()})
    if others:
        raise Invalid(f"the week of {f.repo} holds digests of {', '.join(others[:3])}")
    if strays := sorted({d.number for d in report.digests} - set(f.prs)):
        raise Invalid(f"the week holds a digest of #{strays[0]}, which facts.prs does not list")
    if report.narrative is not None and m.generated_at is None:
        raise Invalid("a narrative without meta.generated_at")
    if report.narrative is not None and len(report.narrative.model_dump_json()) > rules.longest:
        raise Invalid("narrative: longer than one reply can hold")
    if m.generated_at is not None:
        _past(m.generated_at, "meta.generated_at", rules)
    if min(_spent(report).model_dump().values()) < 0:
        raise Invalid("meta.usage is less than its digests' usage")
    page = rf"https://{re.escape(rules.host)}/[^/?#]+/[^/?#]+/(discussions|issues)/\d+"
    if m.discussion_url and not re.fullmatch(page, m.discussion_url, re.IGNORECASE):
        raise Invalid(f"meta.discussion_url is no discussion on https://{rules.host}")


def _repo(name: str, where: str) -> None:
    if not REPO_SHAPE.fullmatch(name) or name.split("/")[1] in (".", ".."):
        raise Invalid(f"{where}: {name[:100]!r} is no repository's owner/name")


def _past(when: datetime, where: str, rules: Rules) -> None:
    """Refuses a time without a timezone, or one in the future."""
    if when.utcoffset() is None:
        raise Invalid(f"{where} has no timezone")
    if when > rules.now + SKEW:
        raise Invalid(f"{where} is in the future ({when.isoformat()})")


def _longest(data: Any, limit: int, where: str = "") -> str | None:
    """Where in a JSON value a text is longer than `limit` characters; None when none is."""
    if isinstance(data, str):
        return where or "(top)" if len(data) > limit else None
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        if (found := _longest(value, limit, f"{where}.{key}" if where else str(key))) is not None:
            return found
    return None


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
