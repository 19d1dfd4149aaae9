"""`prhub forget`: a week, a window, a PR's digest or a whole repository taken out of the store,
or the fetched data of published PRs pruned; each said in one line, dry or done."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from prhub.config import Settings, default_store
from prhub.errors import ConfigError
from prhub.model import Usage, WeeklyFacts, WeeklyMeta, WeeklyReport
from prhub.publish.formats import Format
from prhub.publish.output import report_path
from prhub.run.run import window
from prhub.store import forget as store_forget
from prhub.store.forget import Forgotten
from prhub.store.store import Store
from prhub.text import plural

SITE = "the next `prhub site` removes its pages"


def forget(
    settings: Settings,
    *,
    when: Mapping[str, Any] | None = None,
    pr: int | None = None,
    whole: bool = False,
    pull_data: bool = False,
    repos: list[str] | None = None,
    dry: bool = False,
) -> str:
    """Takes what is named out of the store (with `dry`, only says what it would take): the
    report of a window (`when`), a PR's digests (`pr`), a repository (`whole`), or the
    fetched data of published PRs (`pull_data`, of `repos` or all). Returns its line."""
    path = settings.store or default_store()
    if not path.exists():  # no store is made only to find it empty
        return f"nothing to forget: there is no store at {path}"
    with closing(Store(path)) as store:
        if pull_data:
            return _prune(store, repos, dry)
        repo = _stored_name(store, settings.require_repo())
        if pr is not None:
            return _digest(store, repo, pr, dry)
        if whole:
            done = store_forget.repository(store, repo, dry)
            if done.nothing:
                return f"nothing to forget: the store holds nothing of {repo}"
            return f"{_verb(dry)} {repo}: {_counts(done)}; {SITE}"
        return _window(store, settings, repo, when or {}, dry)


def _window(store: Store, settings: Settings, repo: str, when: Mapping[str, Any], dry: bool) -> str:
    w = window(settings, **when)
    name = _stem(repo, w.start, w.end, w.year, w.week, settings.tz)
    done = store_forget.window(store, repo, w.start, w.end, dry)
    if done.reports:
        with_narrative = " and its narrative" if done.narratives else ""
        return f"{_verb(dry)} the report {repo} {name}{with_narrative}; {SITE}"
    # The same week or dates in another timezone: the report a reader may have meant.
    others = [
        _stem(repo, f.start, f.end, f.year, f.week, f.tz)
        for f in (r.facts for r in store.reports(repo))
        if f.tz != settings.tz
        and (f.year, f.week) == (w.year, w.week)
        and (f.week is not None or f.start.date() == w.start.date())
    ]
    hint = f"; it holds {', '.join(others)}: pass --tz to name its timezone" if others else ""
    return f"nothing to forget: the store holds no report of {repo} {name}{hint}"


def _digest(store: Store, repo: str, number: int, dry: bool) -> str:
    held = store_forget.holding(store, repo, number)
    if held:
        names = ", ".join(report_path(r, Format.markdown, Path()).stem for r in held)
        raise ConfigError(
            f"{repo}#{number} is in the stored report {names}: forget that week first, "
            "or keep its digest"
        )
    done = store_forget.digest(store, repo, number, dry)
    if done.nothing:
        return f"nothing to forget: the store holds no digest of {repo}#{number}"
    return f"{_verb(dry)} {repo}#{number}: {_counts(done)}; {SITE}"


def _prune(store: Store, repos: list[str] | None, dry: bool) -> str:
    names = [_stored_name(store, r) for r in repos] if repos else store_forget.pull_repos(store)
    before = _size(store.path)
    done = store_forget.pull_data(store, names, dry)
    if not done.pulls:
        return "nothing to prune: the store holds no fetched data of a published PR"
    if not dry:
        store_forget.compact(store)
    among = len({r for r in names})
    file = "" if dry else f"; the store went from {_bytes(before)} to {_bytes(_size(store.path))}"
    return (
        f"{'would prune' if dry else 'pruned'} the fetched data of {plural(done.pulls, 'PR')} "
        f"of {plural(among, 'repository', 'repositories')} ({_bytes(done.bytes)}){file}. "
        "Their digests and reports stay: a rerun of their weeks fetches them from GitHub "
        f"again, about {plural(done.requests, 'request')}, and makes no LLM call"
    )


def _stored_name(store: Store, repo: str) -> str:
    """The repository as the store spells it (GitHub's spelling), whichever case was typed."""
    known = {r.lower(): r for r in [*store.repos(), *store_forget.pull_repos(store)]}
    return known.get(repo.lower(), repo)


def _stem(repo: str, start: Any, end: Any, year: int, week: int | None, tz: str) -> str:
    """The report's name (2026-W31, 2026-W31.UTC, 2026-07-27_2026-08-02), as its file has it."""
    facts = WeeklyFacts(
        repo=repo, year=year, week=week, start=start, end=end, tz=tz, prs=[], pr_count=0
    )
    meta = WeeklyMeta(prompt="", model="", usage=Usage())
    empty = WeeklyReport(facts=facts, narrative=None, digests=[], meta=meta)
    return report_path(empty, Format.markdown, Path()).stem


def _counts(done: Forgotten) -> str:
    parts = [
        plural(len(done.reports), "report"),
        plural(done.narratives, "narrative"),
        plural(done.digests, "digest"),
        plural(done.pulls, "fetched PR") + (f" ({_bytes(done.bytes)})" if done.pulls else ""),
    ]
    if done.posts:
        parts.append(plural(done.posts, "post record") + " (the posts stay where they are)")
    if done.batches:
        parts.append(plural(done.batches, "batch request"))
    return ", ".join(parts)


def _verb(dry: bool) -> str:
    return "would forget" if dry else "forgot"


def _size(path: Path) -> int:
    """The store's bytes on disk, its write-ahead log included."""
    wal = path.with_name(path.name + "-wal")
    return sum(p.stat().st_size for p in (path, wal) if p.exists())


def _bytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} KB"
