"""SQLite in the user's data directory: fetched PRs, digests and reports, reused across runs."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, TypeAdapter

from prhub.config import default_store
from prhub.errors import StoreError
from prhub.model import (
    ChunkNotes,
    Drop,
    PRDigest,
    PullRequest,
    Usage,
    WeeklyNarrative,
    WeeklyReport,
)
from prhub.store.db import load, now, open_db
from prhub.store.records import Records

B = TypeVar("B", bound=BaseModel)
log = logging.getLogger("prhub")

OPEN_ATTEMPTS = 5
LEASE_SECONDS = 1800.0  # a holder that neither finishes nor dies in this time is taken over
PAGE = 64  # rows read at once by those who read a repository's rows one by one


class StoredNarrative(NamedTuple):
    """A week's narrative as stored: what it dropped, what it cost and when it was first made."""

    narrative: WeeklyNarrative
    dropped: int
    usage: Usage
    created_at: datetime
    drops: tuple[Drop, ...] = ()  # what grounding dropped, when it was recorded


DROPS = TypeAdapter(list[Drop])


def _drops(text: str | None) -> tuple[Drop, ...]:
    """The drops stored with a narrative; none for one stored before they were."""
    try:
        return tuple(DROPS.validate_json(text or "[]"))
    except ValueError:
        return ()


class StoredPull(NamedTuple):
    """A fetched PR as stored: with the updated_at, ETag and Last-Modified GitHub gave with it."""

    pr: PullRequest
    updated_at: str
    etag: str = ""
    last_modified: str = ""


class Store(Records):
    """One SQLite file; safe to share between the threads of one run."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_store()
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise StoreError(f"the store {self.path} is a directory: pass --store FILE")
        self._db = open_db(self.path)

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"the store {self.path} failed ({exc})") from None

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction on the store, for the modules that keep tables of their own."""
        return self._tx()

    def pull(self, repo: str, number: int) -> StoredPull | None:
        """A fetched PR and what GitHub gave with it, if stored."""
        with self._tx() as db:
            row = db.execute(
                "SELECT data, updated_at, etag, last_modified FROM pulls "
                "WHERE repo = ? AND number = ?",
                (repo, number),
            ).fetchone()
        pr = load(PullRequest, row[0]) if row else None
        return StoredPull(pr, row[1], row[2] or "", row[3] or "") if pr and row else None

    def pull_times(self, repo: str) -> dict[int, str]:
        """The updated_at of each PR of `repo` stored: what tells, before a fetch, which PRs
        a run need not ask GitHub for."""
        with self._tx() as db:
            rows = db.execute(
                "SELECT number, updated_at FROM pulls WHERE repo = ?", (repo,)
            ).fetchall()
        return {number: updated for number, updated in rows}

    def save_pull(
        self, pr: PullRequest, updated_at: str, etag: str = "", last_modified: str = ""
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO pulls (repo, number, version, updated_at, data, "
                "fetched_at, etag, last_modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    pr.repo,
                    pr.number,
                    pr.version,
                    updated_at,
                    pr.model_dump_json(),
                    now(),
                    etag,
                    last_modified,
                ),
            )

    def save_validators(self, repo: str, number: int, etag: str, last_modified: str) -> None:
        """Keeps a stored PR's latest ETag and Last-Modified (GitHub found it unchanged)."""
        with self._tx() as db:
            db.execute(
                "UPDATE pulls SET etag = ?, last_modified = ? WHERE repo = ? AND number = ?",
                (etag, last_modified, repo, number),
            )

    def attributes(self, repo: str, max_age: float | None = None) -> str | None:
        """The repository's .gitattributes as last fetched ("" for none), if ever fetched
        (and at most `max_age` seconds ago)."""
        with self._tx() as db:
            row = db.execute(
                "SELECT text, fetched_at FROM attributes WHERE repo = ?", (repo,)
            ).fetchone()
        if row is None:
            return None
        age = (datetime.now(UTC) - datetime.fromisoformat(row[1])).total_seconds()
        return row[0] if max_age is None or age <= max_age else None

    def save_attributes(self, repo: str, text: str) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO attributes VALUES (?, ?, ?)", (repo, text, now()))

    def digest(self, key: str) -> PRDigest | None:
        with self._tx() as db:
            row = db.execute("SELECT data FROM digests WHERE key = ?", (key,)).fetchone()
        return load(PRDigest, row[0]) if row else None

    def save_digest(self, digest: PRDigest) -> None:
        with self._tx() as db:
            _write_digest(db, digest)

    def chunk_notes(self, key: str) -> tuple[ChunkNotes, Usage] | None:
        """A chunk's notes made before from the same request, with what they cost."""
        with self._tx() as db:
            row = db.execute("SELECT data, usage FROM chunk_notes WHERE key = ?", (key,)).fetchone()
        notes = load(ChunkNotes, row[0]) if row else None
        return (notes, load(Usage, row[1]) or Usage()) if notes is not None and row else None

    def save_chunk_notes(self, key: str, notes: ChunkNotes, usage: Usage) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO chunk_notes VALUES (?, ?, ?, ?)",
                (key, notes.model_dump_json(), usage.model_dump_json(), now()),
            )

    def narrative(self, key: str) -> StoredNarrative | None:
        """A week's narrative made before from the same inputs, with what it cost and when."""
        with self._tx() as db:
            row = db.execute(
                "SELECT data, dropped, usage, created_at, drops FROM narratives WHERE key = ?",
                (key,),
            ).fetchone()
        narrative = load(WeeklyNarrative, row[0]) if row else None
        if narrative is None or row is None:
            return None
        usage = load(Usage, row[2]) or Usage()
        when = datetime.fromisoformat(row[3])
        return StoredNarrative(narrative, row[1], usage, when, _drops(row[4]))

    def save_narrative(
        self,
        key: str,
        narrative: WeeklyNarrative,
        dropped: int | list[Drop],
        usage: Usage | None = None,
    ) -> StoredNarrative:
        """Stores a narrative with what grounding dropped from it (the drops, or their count)
        and returns it as stored.

        The same text made again keeps its first record, time and cost included, so a report
        made from it stays the same.
        """
        drops = dropped if isinstance(dropped, list) else []
        with self._tx() as db:
            db.execute(
                "INSERT INTO narratives (key, data, dropped, created_at, usage, drops) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                "data = excluded.data, dropped = excluded.dropped, "
                "created_at = excluded.created_at, usage = excluded.usage, "
                "drops = excluded.drops WHERE narratives.data != excluded.data",
                (
                    key,
                    narrative.model_dump_json(),
                    len(drops) if isinstance(dropped, list) else dropped,
                    now(),
                    (usage or Usage()).model_dump_json(),
                    DROPS.dump_json(drops).decode(),
                ),
            )
        stored = self.narrative(key)
        if stored is None:  # only when this version cannot read what it just wrote
            raise StoreError(f"the store {self.path} lost the narrative it was given")
        return stored

    def save_report(self, report: WeeklyReport) -> None:
        """Keeps the latest report of a window, so a lost file can be rendered again."""
        f = report.facts
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?)",
                (f.repo, f.start.isoformat(), f.end.isoformat(), report.model_dump_json(), now()),
            )

    def restore(
        self,
        digests: Sequence[PRDigest],
        weeks: Sequence[tuple[WeeklyReport, str, StoredNarrative | None]],
    ) -> tuple[int, int]:
        """Keeps digests and weeks (a report, its narrative's key and the narrative) made
        elsewhere, in one transaction; how many digests and weeks it wrote.

        Each replaces a stored entry only when made later (a digest's `meta.created_at`, a
        narrative's `created_at`, a report's `meta.generated_at`): nothing newer is lost, and
        the same entry given twice changes nothing.
        """
        with self._tx() as db:
            wrote = sum(_restore_digest(db, d) for d in digests)
            weeks_wrote = 0
            for report, key, narrative in weeks:
                told = narrative is not None and _restore_narrative(db, key, narrative)
                weeks_wrote += _restore_report(db, report) or told
        return wrote, weeks_wrote

    def report(self, repo: str, start: datetime, end: datetime) -> WeeklyReport | None:
        with self._tx() as db:
            row = db.execute(
                'SELECT data FROM reports WHERE repo = ? AND start = ? AND "end" = ?',
                (repo, start.isoformat(), end.isoformat()),
            ).fetchone()
        return load(WeeklyReport, row[0]) if row else None

    def repos(self) -> list[str]:
        """Every repository with a stored report or digest, in order of name."""
        with self._tx() as db:
            rows = db.execute("SELECT repo FROM reports UNION SELECT repo FROM digests").fetchall()
        return sorted(row[0] for row in rows)

    def reports(self, repo: str) -> list[WeeklyReport]:
        """The repository's stored reports, the latest window first."""
        with self._tx() as db:
            rows = db.execute("SELECT data FROM reports WHERE repo = ?", (repo,)).fetchall()
        found = [r for r in (load(WeeklyReport, row[0]) for row in rows) if r is not None]
        # As times, not as the text stored: windows of two timezones have other offsets.
        return sorted(found, key=lambda r: (r.facts.start, r.facts.end, r.facts.tz), reverse=True)

    def digests(self, repo: str) -> list[PRDigest]:
        """The repository's latest digest of each PR (the one made last), by PR number."""
        with self._tx() as db:
            rows = db.execute(
                "SELECT data FROM digests WHERE repo = ? ORDER BY key", (repo,)
            ).fetchall()
        latest: dict[int, PRDigest] = {}
        for d in (load(PRDigest, row[0]) for row in rows):
            old = latest.get(d.number) if d else None
            if d is not None and (old is None or old.meta.created_at < d.meta.created_at):
                latest[d.number] = d
        return [latest[n] for n in sorted(latest)]

    def digest_rows(self, repo: str) -> Iterator[tuple[str, str]]:
        """The repository's stored digests as stored, (key, JSON), by PR number: read a page
        at a time along the index, so one who reads them all never holds them all."""
        sql = "SELECT number, rowid, key, data FROM digests WHERE repo = ? AND (number, rowid) "
        sql += "> (?, ?) ORDER BY number, rowid LIMIT ?"
        return ((key, data) for _, _, key, data in self._paged(sql, repo, (0, 0), PAGE))

    def report_rows(self, repo: str) -> Iterator[tuple[str, str, str]]:
        """The repository's stored reports as stored, (start, end, JSON), a few at a time (a
        week of a thousand PRs is a few MB)."""
        sql = 'SELECT start, "end", data FROM reports WHERE repo = ? AND (start, "end") > (?, ?) '
        return self._paged(sql + 'ORDER BY start, "end" LIMIT ?', repo, ("", ""), 4)

    def _paged(self, sql: str, repo: str, last: tuple[Any, Any], page: int) -> Iterator[Any]:
        """The rows `sql` selects, `page` at a time, each page after the last one's first two
        columns."""
        while True:
            with self._tx() as db:
                rows = db.execute(sql, (repo, *last, page)).fetchall()
            yield from rows
            if len(rows) < page:
                return
            last = rows[-1][:2]

    def latest_digest(self, repo: str, number: int) -> PRDigest | None:
        """The PR's digest made last, whatever made it; None when it has none."""
        with self._tx() as db:
            rows = db.execute(
                "SELECT data FROM digests WHERE repo = ? AND number = ?", (repo, number)
            ).fetchall()
        found = [d for d in (load(PRDigest, row[0]) for row in rows) if d is not None]
        return max(found, key=lambda d: d.meta.created_at, default=None)

    def discussion_url(self, repo: str, start: datetime, end: datetime) -> str | None:
        """The page of the week's discussion (or issue): as posted from this store, else as
        the stored report says (a store imported from a site)."""
        with self._tx() as db:
            row = db.execute(
                """SELECT url FROM posts WHERE repo = ? AND start = ? AND "end" = ? AND url != ''
                ORDER BY posted_at DESC""",
                (repo, start.isoformat(), end.isoformat()),
            ).fetchone()
        if row:
            return str(row[0])
        stored = self.report(repo, start, end)
        return stored.meta.discussion_url if stored else None

    def close(self) -> None:
        # Under the lock: a worker still in a transaction finishes it first, and a later one
        # gets a StoreError ("closed database"), never a connection freed under it.
        with self._lock:
            self._db.close()


def _restore_digest(db: sqlite3.Connection, d: PRDigest) -> bool:
    """Writes `d` unless a digest made at its time or later is stored under its key."""
    key = d.meta.cache_key
    row = db.execute("SELECT data FROM digests WHERE key = ?", (key,)).fetchone()
    old = load(PRDigest, row[0]) if row else None
    if old is not None and old.meta.created_at >= d.meta.created_at:
        return False
    _write_digest(db, d)
    return True


def _write_digest(db: sqlite3.Connection, d: PRDigest) -> None:
    row = (d.meta.cache_key, d.repo, d.number, d.model_dump_json(), now())
    db.execute("INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?)", row)


def _restore_narrative(db: sqlite3.Connection, key: str, n: StoredNarrative) -> bool:
    """Writes `n` unless a narrative made at its time or later is stored under `key`."""
    row = db.execute("SELECT data, created_at FROM narratives WHERE key = ?", (key,)).fetchone()
    if row and load(WeeklyNarrative, row[0]) and datetime.fromisoformat(row[1]) >= n.created_at:
        return False
    db.execute(
        "INSERT OR REPLACE INTO narratives (key, data, dropped, created_at, usage, drops) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (key, n.narrative.model_dump_json(), n.dropped, n.created_at.astimezone(UTC).isoformat())
        + (n.usage.model_dump_json(), DROPS.dump_json(list(n.drops)).decode()),
    )
    return True


def _restore_report(db: sqlite3.Connection, report: WeeklyReport) -> bool:
    """Writes `report` unless one of its window made at its time or later is stored."""
    f = report.facts
    window = (f.repo, f.start.isoformat(), f.end.isoformat())
    row = db.execute(
        'SELECT data FROM reports WHERE repo = ? AND start = ? AND "end" = ?', window
    ).fetchone()
    old = load(WeeklyReport, row[0]) if row else None
    if old is not None and made_at(old) >= made_at(report):
        return False
    db.execute(
        "INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?)",
        (*window, report.model_dump_json(), now()),
    )
    return True


def made_at(report: WeeklyReport) -> datetime:
    """When a report's content was made; a week with neither narrative nor digest, never."""
    return report.meta.generated_at or datetime.min.replace(tzinfo=UTC)
