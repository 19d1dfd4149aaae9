"""What a user takes out of the store: a window's report, a PR's digests, a whole repository,
and the fetched pull data that published digests no longer need. Each can be asked `dry`:
counted, nothing removed."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from prhub.errors import StoreError
from prhub.model import PullRequest, WeeklyReport
from prhub.store.db import load
from prhub.store.store import Store

GITHUB_PAGE = 100  # items on one page of GitHub's lists, as prhub asks for them


@dataclass
class Forgotten:
    """What was (or, dry, would be) removed."""

    reports: list[WeeklyReport] = field(default_factory=list)
    narratives: int = 0
    digests: int = 0
    pulls: int = 0  # fetched PRs
    posts: int = 0  # records of what was posted (the posts themselves stay where they are)
    batches: int = 0  # batch mode's requests, answered or not
    attributes: int = 0  # the repository's stored .gitattributes
    bytes: int = 0  # of the fetched PRs' data
    requests: int = 0  # GitHub requests fetching those PRs again would take

    @property
    def nothing(self) -> bool:
        counts = (self.narratives, self.digests, self.pulls, self.posts, self.batches)
        return not self.reports and not any(counts) and not self.attributes


def window(store: Store, repo: str, start: datetime, end: datetime, dry: bool) -> Forgotten:
    """The report of one window (a week in its timezone, or dates) and its narrative."""
    done = Forgotten()
    with store.transaction() as db:
        where = (repo, start.isoformat(), end.isoformat())
        row = db.execute(
            'SELECT data FROM reports WHERE repo = ? AND start = ? AND "end" = ?', where
        ).fetchone()
        report = load(WeeklyReport, row[0]) if row else None
        if row is None:
            return done
        done.reports = [report] if report else []
        keys = [report.meta.narrative_key] if report and report.meta.narrative_key else []
        done.narratives = _count(db, "narratives", "key", keys)
        if not dry:
            db.execute('DELETE FROM reports WHERE repo = ? AND start = ? AND "end" = ?', where)
            _delete(db, "narratives", "key", keys)
    return done


def holding(store: Store, repo: str, number: int) -> list[WeeklyReport]:
    """The stored reports that hold a digest of the PR, the latest window first."""
    return [r for r in store.reports(repo) if any(d.number == number for d in r.digests)]


def digest(store: Store, repo: str, number: int, dry: bool) -> Forgotten:
    """Every digest of one PR and its fetched data."""
    done = Forgotten()
    with store.transaction() as db:
        pr = (repo, number)
        done.digests = _scalar(db, "SELECT count(*) FROM digests WHERE repo = ? AND number = ?", pr)
        done.pulls, done.bytes, done.requests = _pulls(db, "repo = ? AND number = ?", pr)
        if not dry:
            db.execute("DELETE FROM digests WHERE repo = ? AND number = ?", pr)
            db.execute("DELETE FROM pulls WHERE repo = ? AND number = ?", pr)
    return done


def repository(store: Store, repo: str, dry: bool) -> Forgotten:
    """Everything the store keeps of a repository but the records of past runs."""
    reports = store.reports(repo)
    done = Forgotten(reports=reports)
    keys = [r.meta.narrative_key for r in reports if r.meta.narrative_key]
    with store.transaction() as db:
        done.narratives = _count(db, "narratives", "key", keys)
        done.pulls, done.bytes, done.requests = _pulls(db, "repo = ?", (repo,))
        tables = {"digests": "digests", "posts": "posts", "batch_requests": "batches"}
        for table, name in tables.items():
            setattr(done, name, _count(db, table, "repo", [repo]))
        done.attributes = _count(db, "attributes", "repo", [repo])
        if not dry:
            for table in ("reports", "digests", "pulls", "posts", "batch_requests", "attributes"):
                _delete(db, table, "repo", [repo])
            _delete(db, "narratives", "key", keys)
    return done


def pull_data(store: Store, repos: Iterable[str], dry: bool) -> Forgotten:
    """The fetched data of every PR whose digest a stored report publishes: its digest and
    the report stay, and a rerun of its week fetches it again (no LLM call)."""
    done = Forgotten()
    published = {(r, d.number) for r in repos for w in store.reports(r) for d in w.digests}
    with store.transaction() as db:
        for repo, number in sorted(published):
            pulls, size, requests = _pulls(db, "repo = ? AND number = ?", (repo, number))
            done.pulls, done.bytes, done.requests = (
                done.pulls + pulls,
                done.bytes + size,
                done.requests + requests,
            )
            if pulls and not dry:
                db.execute("DELETE FROM pulls WHERE repo = ? AND number = ?", (repo, number))
    return done


def compact(store: Store) -> None:
    """Gives the space of removed rows back to the file system: SQLite keeps it otherwise."""
    db = sqlite3.connect(store.path, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("VACUUM")  # outside any transaction, on a connection of its own
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise StoreError(f"the store {store.path} could not be compacted ({exc})") from None
    finally:
        db.close()


def pull_repos(store: Store) -> list[str]:
    """Every repository with fetched PRs or published weeks, by name."""
    with store.transaction() as db:
        rows = db.execute("SELECT repo FROM pulls UNION SELECT repo FROM reports").fetchall()
    return sorted(row[0] for row in rows)


def fetch_requests(pr: PullRequest) -> int:
    """The GitHub requests that fetching a PR again takes: the pull, each page of its files,
    its reviews, and its inline and conversation comments when it has some."""
    pages = max(1, math.ceil(len(pr.files) / GITHUB_PAGE))
    kinds = {c.kind for c in pr.discussion} & {"inline", "conversation"}
    return 1 + pages + 1 + len(kinds)


def _pulls(db: sqlite3.Connection, where: str, args: tuple[object, ...]) -> tuple[int, int, int]:
    """How many fetched PRs match, their bytes, and the requests fetching them again takes."""
    rows = db.execute(f"SELECT data FROM pulls WHERE {where}", args).fetchall()
    prs = [load(PullRequest, row[0]) for row in rows]
    requests = sum(fetch_requests(pr) if pr else 3 for pr in prs)
    return len(rows), sum(len(row[0].encode()) for row in rows), requests


def _count(db: sqlite3.Connection, table: str, column: str, values: list[str]) -> int:
    marks = ", ".join("?" * len(values))
    if not values:
        return 0
    return _scalar(db, f"SELECT count(*) FROM {table} WHERE {column} IN ({marks})", values)


def _delete(db: sqlite3.Connection, table: str, column: str, values: list[str]) -> None:
    if values:
        marks = ", ".join("?" * len(values))
        db.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", values)


def _scalar(db: sqlite3.Connection, sql: str, args: Iterable[object]) -> int:
    return int(db.execute(sql, tuple(args)).fetchone()[0])
