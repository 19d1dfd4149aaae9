"""Deterministic weekly facts: week windows, counts, tags, hot paths, reverts, test gaps, breaks."""

from __future__ import annotations

import posixpath
from collections import Counter, defaultdict
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from typing import NamedTuple
from zoneinfo import ZoneInfo

from prhub import paths
from prhub.config import named_zone
from prhub.errors import ConfigError
from prhub.model import (
    AuthorCount,
    BreakingChange,
    HotPath,
    PRDigest,
    PullRequest,
    Revert,
    WeeklyFacts,
)
from prhub.prepare.facts import REVERT_COMMIT, revert_target
from prhub.tags import KIND_TAGS, parse_title, tag_name
from prhub.weekly.breaking import breaking_reasons

__all__ = ["last_complete_week", "week_window", "weekly_facts", "window"]

HOT_LIMIT = 10
FIRST_TIMERS = frozenset({"FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER"})
KINDS = frozenset(KIND_TAGS.values())
KEY_IMPORTANCE = 5.0  # a PR at or above this is a key PR of its week


def week_window(year: int, week: int, tz: str) -> tuple[datetime, datetime]:
    """Monday 00:00 of ISO week `week` of `year` and the next Monday 00:00, both in `tz`."""
    zone = named_zone(tz)
    if not 1 <= year <= 9998:
        raise ConfigError(f"year {year} is out of range: give a year from 1 to 9998")
    # 28 December always falls in the last ISO week of its year.
    weeks = date(year, 12, 28).isocalendar().week
    if not 1 <= week <= weeks:
        raise ConfigError(f"week {week} does not exist in {year}: its ISO weeks run 1 to {weeks}")
    monday = date.fromisocalendar(year, week, 1)
    # Built from dates, not start + 7 days, so a DST change in the week keeps both ends at 00:00.
    start = datetime.combine(monday, time(), tzinfo=zone)
    end = datetime.combine(monday + timedelta(days=7), time(), tzinfo=zone)
    return start, end


def last_complete_week(now: datetime, tz: str) -> tuple[int, int]:
    """(ISO year, week) of the last week in `tz` that ended at or before `now`."""
    if now.tzinfo is None:
        raise ValueError("now must be a timezone-aware datetime")
    today = now.astimezone(named_zone(tz)).date()
    iso = (today - timedelta(days=today.weekday() + 7)).isocalendar()
    return iso.year, iso.week


class Window(NamedTuple):
    """The time a weekly run covers: [start, end), its ISO year and week (None for dates)."""

    start: datetime
    end: datetime
    year: int
    week: int | None


def window(
    tz: str,
    *,
    year: int | None = None,
    week: int | None = None,
    since: str | None = None,
    until: str | None = None,
    now: datetime | None = None,
) -> Window:
    """The [start, end) window a weekly run covers, with its year and ISO week (None for dates)."""
    zone = named_zone(tz)
    now = now or datetime.now(UTC)
    if since or until:
        if week is not None:
            raise ConfigError("give either --week or --since/--until, not both")
        start = _moment(since, zone, "--since") if since else None
        end = _moment(until, zone, "--until", end_of_day=True) if until else now
        if start is None:
            raise ConfigError("--until needs --since too")
        if end <= start:
            raise ConfigError(f"--until ({until}) must come after --since ({since})")
        return Window(start, end, start.astimezone(zone).year, None)
    if week is None:
        if year is not None:
            raise ConfigError("--year needs --week (without both: the last complete week)")
        year, week = last_complete_week(now, tz)
    if year is None:
        year = now.astimezone(zone).isocalendar().year  # the ISO year: 2027-01-02 is in 2026-W53
    start, end = week_window(year, week, tz)
    if start > now:
        raise ConfigError(f"week {week} of {year} has not started yet ({tz})")
    return Window(start, end, year, week)


def _moment(text: str, zone: ZoneInfo, flag: str, end_of_day: bool = False) -> datetime:
    """A date (whole day, local) or an ISO datetime (naive means local) from a flag."""
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text).replace(tzinfo=zone)
            return day + timedelta(days=1) if end_of_day else day
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{flag} {text!r} is not a date: use YYYY-MM-DD or an ISO time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=zone)


def weekly_facts(
    prs: list[PullRequest],
    digests: dict[int, PRDigest],
    *,
    repo: str,
    start: datetime,
    end: datetime,
    tz: str,
    year: int,
    week: int | None,
    key_count: int = 10,
    aliases: Mapping[str, str] | None = None,
    reverted: Mapping[int, PullRequest] | None = None,
) -> WeeklyFacts:
    """Figures of the given PRs, which the caller picked for the window; same input, same facts.

    `reverted` gives, for a revert whose title and body name no PR of the window, the PR its
    caller found it undoes (by the commit it names, or the one PR its body cites)."""
    prs = sorted(prs, key=lambda pr: pr.number)
    by_number = {pr.number: pr for pr in prs}
    tags: Counter[str] = Counter()
    modules: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    files: defaultdict[str, set[int]] = defaultdict(set)
    dirs: defaultdict[str, set[int]] = defaultdict(set)
    authors: defaultdict[str, list[int]] = defaultdict(list)
    for pr in prs:
        mods, kind, *_ = parse_title(pr.title)
        mods = list(dict.fromkeys(tag_name(m, aliases) for m in mods))
        # An unknown word before the colon ("vLLM: bump") is not a type.
        kind = kind if kind in KINDS else None
        modules.update(set(mods))
        kinds.update([kind] if kind else [])
        labels = {tag_name(label, aliases) for label in pr.labels if label.strip()}
        tags.update(set(mods) | labels | ({kind} if kind else set()))
        for change in pr.files:
            if paths.is_machine_made(change):  # tells a reader nothing: never hot
                continue
            files[change.path].add(pr.number)
            parent = posixpath.dirname(change.path)
            if parent:  # files at the root have no directory worth naming
                dirs[parent].add(pr.number)
        authors[pr.author].append(pr.number)

    author_counts = _ranked(authors)
    first_timers = {pr.author for pr in prs if pr.author_association in FIRST_TIMERS}
    scored = [
        (digests[pr.number].content.importance, pr.number) for pr in prs if pr.number in digests
    ]
    return WeeklyFacts(
        repo=repo,
        year=year,
        week=week,
        start=start,
        end=end,
        tz=tz,
        prs=[pr.number for pr in prs],
        pr_count=len(prs),
        additions=sum(pr.additions for pr in prs),
        deletions=sum(pr.deletions for pr in prs),
        tags=_by_count(tags),
        modules=_by_count(modules),
        kinds=_by_count(kinds),
        hot_files=_hot(files),
        hot_dirs=_hot(dirs),
        authors=author_counts,
        top_author_share=len(author_counts[0].prs) / len(prs) if prs else 0.0,
        reverts=[
            r for pr in prs if (r := _revert(pr, by_number, repo, reverted or {})) is not None
        ],
        untested=[pr.number for pr in prs if _untested(pr)],
        breaking=[
            BreakingChange(number=pr.number, reasons=reasons)
            for pr in prs
            if (reasons := breaking_reasons(pr))
        ],
        first_time=[a for a in author_counts if a.author in first_timers],
        mean_importance=round(sum(s for s, _ in scored) / len(scored), 2) if scored else None,
        key_prs=_key_prs(scored, key_count),
    )


def _key_prs(scored: list[tuple[float, int]], most: int) -> list[int]:
    """PRs at KEY_IMPORTANCE or above, most important first; the top 3 when fewer reach it."""
    ranked = sorted(scored, key=lambda s: (-s[0], s[1]))
    key = [n for score, n in ranked if score >= KEY_IMPORTANCE]
    return (key if len(key) >= 3 else [n for _, n in ranked[:3]])[:most]


def _by_count(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _hot(paths: dict[str, set[int]]) -> list[HotPath]:
    hot = sorted((p for p in paths.items() if len(p[1]) >= 2), key=lambda p: (-len(p[1]), p[0]))
    return [HotPath(path=path, prs=sorted(numbers)) for path, numbers in hot[:HOT_LIMIT]]


def _ranked(authors: dict[str, list[int]]) -> list[AuthorCount]:
    ranked = sorted(authors.items(), key=lambda item: (-len(item[1]), item[0]))
    return [AuthorCount(author=author, prs=sorted(numbers)) for author, numbers in ranked]


def _untested(pr: PullRequest) -> bool:
    if any(paths.of(f) == "test" for f in pr.files):
        return False
    # A deleted source file leaves nothing to test.
    return any(f.status != "removed" and paths.of(f) == "code" for f in pr.files)


def _revert(
    pr: PullRequest,
    by_number: dict[int, PullRequest],
    repo: str,
    found: Mapping[int, PullRequest],
) -> Revert | None:
    is_revert, reverted = revert_target(pr, repo)
    if not is_revert:
        return None
    commits = REVERT_COMMIT.findall(pr.body)
    if reverted is None:
        for sha in filter(None, commits):
            owners = [
                n
                for n, p in by_number.items()
                if (p.merge_commit_sha or "").lower().startswith(sha.lower())
            ]
            if len(owners) == 1:
                reverted = owners[0]
                break
    if reverted is None and pr.number in found:
        reverted = found[pr.number].number
    if reverted == pr.number:
        reverted = None
    delay = None
    target = by_number.get(reverted) if reverted is not None else None
    if target is None and reverted is not None and pr.number in found:
        target = found[pr.number] if found[pr.number].number == reverted else None
    if target and target.merged_at and pr.merged_at:
        # Timestamps, not datetime subtraction, which is wall-clock time within one zone.
        delay = round((pr.merged_at.timestamp() - target.merged_at.timestamp()) / 3600, 1)
    return Revert(number=pr.number, reverted=reverted, delay_hours=delay)
