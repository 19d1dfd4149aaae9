"""SQLite in the user's data directory: fetched PRs, digests and reports, reused across runs."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from prhub.config import default_store
from prhub.errors import StoreError
from prhub.logmask import hidden
from prhub.model import ChunkNotes, PRDigest, PullRequest, Usage
from prhub.store.migrations import MIGRATIONS
from prhub.weekly.report import WeeklyNarrative, WeeklyReport

B = TypeVar("B", bound=BaseModel)
log = logging.getLogger("prhub")

OPEN_ATTEMPTS = 5
LEASE_SECONDS = 1800.0  # a holder that neither finishes nor dies in this time is taken over


class StoredNarrative(NamedTuple):
    """A week's narrative as stored: what it dropped, what it cost and when it was first made."""

    narrative: WeeklyNarrative
    dropped: int
    usage: Usage
    created_at: datetime


class StoredPull(NamedTuple):
    """A fetched PR as stored: with the updated_at, ETag and Last-Modified GitHub gave with it."""

    pr: PullRequest
    updated_at: str
    etag: str = ""
    last_modified: str = ""


class Post(NamedTuple):
    """What was posted of a week to one target: a discussion, an issue or a chat message."""

    kind: str  # "discussion", "issue", or "webhook:" and its format
    target: str  # the repository posted to (lower case), or "webhook:" and its URL's fingerprint
    url: str  # the discussion's or issue's page; "" for a chat message
    node: str  # what an update addresses: a discussion's node id, an issue's number
    hash: str  # of what was posted


def post_hash(*parts: str) -> str:
    """A short hash of what a post says: the same words give the same hash."""
    data = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


class Store:
    """One SQLite file; safe to share between the threads of one run."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_store()
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise StoreError(f"the store {self.path} is a directory: pass --store FILE")
        self._db = _open(self.path)

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
        pr = _load(PullRequest, row[0]) if row else None
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
                    _now(),
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
            db.execute("INSERT OR REPLACE INTO attributes VALUES (?, ?, ?)", (repo, text, _now()))

    def digest(self, key: str) -> PRDigest | None:
        with self._tx() as db:
            row = db.execute("SELECT data FROM digests WHERE key = ?", (key,)).fetchone()
        return _load(PRDigest, row[0]) if row else None

    def save_digest(self, digest: PRDigest) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?)",
                (
                    digest.meta.cache_key,
                    digest.repo,
                    digest.number,
                    digest.model_dump_json(),
                    _now(),
                ),
            )

    def chunk_notes(self, key: str) -> tuple[ChunkNotes, Usage] | None:
        """A chunk's notes made before from the same request, with what they cost."""
        with self._tx() as db:
            row = db.execute("SELECT data, usage FROM chunk_notes WHERE key = ?", (key,)).fetchone()
        notes = _load(ChunkNotes, row[0]) if row else None
        return (notes, _load(Usage, row[1]) or Usage()) if notes is not None and row else None

    def save_chunk_notes(self, key: str, notes: ChunkNotes, usage: Usage) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO chunk_notes VALUES (?, ?, ?, ?)",
                (key, notes.model_dump_json(), usage.model_dump_json(), _now()),
            )

    def narrative(self, key: str) -> StoredNarrative | None:
        """A week's narrative made before from the same inputs, with what it cost and when."""
        with self._tx() as db:
            row = db.execute(
                "SELECT data, dropped, usage, created_at FROM narratives WHERE key = ?", (key,)
            ).fetchone()
        narrative = _load(WeeklyNarrative, row[0]) if row else None
        if narrative is None or row is None:
            return None
        usage = _load(Usage, row[2]) or Usage()
        return StoredNarrative(narrative, row[1], usage, datetime.fromisoformat(row[3]))

    def save_narrative(
        self, key: str, narrative: WeeklyNarrative, dropped: int, usage: Usage | None = None
    ) -> StoredNarrative:
        """Stores a narrative and returns it as stored.

        The same text made again keeps its first record, time and cost included, so a report
        made from it stays the same.
        """
        with self._tx() as db:
            db.execute(
                "INSERT INTO narratives (key, data, dropped, created_at, usage) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET data = excluded.data, "
                "dropped = excluded.dropped, created_at = excluded.created_at, "
                "usage = excluded.usage WHERE narratives.data != excluded.data",
                (
                    key,
                    narrative.model_dump_json(),
                    dropped,
                    _now(),
                    (usage or Usage()).model_dump_json(),
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
                (f.repo, f.start.isoformat(), f.end.isoformat(), report.model_dump_json(), _now()),
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
        return _load(WeeklyReport, row[0]) if row else None

    def repos(self) -> list[str]:
        """Every repository with a stored report or digest, in order of name."""
        with self._tx() as db:
            rows = db.execute("SELECT repo FROM reports UNION SELECT repo FROM digests").fetchall()
        return sorted(row[0] for row in rows)

    def reports(self, repo: str) -> list[WeeklyReport]:
        """The repository's stored reports, the latest window first."""
        with self._tx() as db:
            rows = db.execute("SELECT data FROM reports WHERE repo = ?", (repo,)).fetchall()
        found = [r for r in (_load(WeeklyReport, row[0]) for row in rows) if r is not None]
        # As times, not as the text stored: windows of two timezones have other offsets.
        return sorted(found, key=lambda r: (r.facts.start, r.facts.end, r.facts.tz), reverse=True)

    def digests(self, repo: str) -> list[PRDigest]:
        """The repository's latest digest of each PR (the one made last), by PR number."""
        with self._tx() as db:
            rows = db.execute(
                "SELECT data FROM digests WHERE repo = ? ORDER BY key", (repo,)
            ).fetchall()
        latest: dict[int, PRDigest] = {}
        for d in (_load(PRDigest, row[0]) for row in rows):
            old = latest.get(d.number) if d else None
            if d is not None and (old is None or old.meta.created_at < d.meta.created_at):
                latest[d.number] = d
        return [latest[n] for n in sorted(latest)]

    def post(self, repo: str, start: datetime, end: datetime, target: str) -> Post | None:
        """What was posted of the week `repo`, `start`, `end` to `target`, if anything."""
        with self._tx() as db:
            row = db.execute(
                "SELECT kind, target, url, node, hash FROM posts WHERE repo = ? AND start = ? "
                'AND "end" = ? AND target = ?',
                (repo, start.isoformat(), end.isoformat(), target),
            ).fetchone()
        return Post(*row) if row else None

    def save_post(self, repo: str, start: datetime, end: datetime, post: Post) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO posts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (repo, start.isoformat(), end.isoformat(), *post, _now()),
            )

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

    def endpoint_mode(self, base_url: str, model: str) -> str | None:
        """The response mode an endpoint was found to accept for `model`, if one was learned."""
        learned = self.endpoint_learned(base_url, model)
        return learned[0] if learned else None

    def endpoint_learned(self, base_url: str, model: str) -> tuple[str, str] | None:
        """The learned response mode and when it was learned, if one was."""
        with self._tx() as db:
            row = db.execute(
                "SELECT mode, learned_at FROM endpoints WHERE base_url = ? AND model = ?",
                (base_url, model),
            ).fetchone()
        return (row[0], row[1]) if row else None

    def forget_endpoint_mode(self, base_url: str, model: str) -> bool:
        """Forgets the learned response mode; False when there was none."""
        with self._tx() as db:
            cursor = db.execute(
                "DELETE FROM endpoints WHERE base_url = ? AND model = ?", (base_url, model)
            )
        return cursor.rowcount > 0

    def save_endpoint_mode(self, base_url: str, model: str, mode: str) -> None:
        """Remembers the response mode the endpoint accepts (its URL without credentials)."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO endpoints VALUES (?, ?, ?, ?)",
                (base_url, model, mode, _now()),
            )

    def lease(self, key: str, holder: str, seconds: float = LEASE_SECONDS) -> bool:
        """Takes the right to make what `key` names, unless another live holder has it.

        Two runs on one store that need the same digest then pay for it once: the second
        waits for the first's result. A holder on this machine whose process is gone, or whose
        lease ran out, loses it.
        """
        now = time.time()
        with self._tx() as db:
            row = db.execute(
                "SELECT holder, expires_at FROM leases WHERE key = ?", (key,)
            ).fetchone()
            if row and row[0] != holder and row[1] > now and _alive(row[0]):
                return False
            db.execute(
                "INSERT OR REPLACE INTO leases VALUES (?, ?, ?)", (key, holder, now + seconds)
            )
        return True

    def release(self, key: str, holder: str) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM leases WHERE key = ? AND holder = ?", (key, holder))

    def start_run(self, command: str) -> int:
        """Records that a command started; returns the run's id for finish_run."""
        with self._tx() as db:
            cursor = db.execute(
                "INSERT INTO runs (command, started_at) VALUES (?, ?)", (command, _now())
            )
        return int(cursor.lastrowid or 0)

    def finish_run(
        self,
        run_id: int,
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        calls: int = 0,
        errors: Sequence[Any] = (),
        **counts: int | str,
    ) -> None:
        """Records how a run ended: its counts (prs=, cached=, failed=, retries=...; also the
        repo= and model= it ran for, as text), usage, errors.

        A run without an end was killed or crashed.
        """
        listed = [e.model_dump(mode="json") if isinstance(e, BaseModel) else e for e in errors]
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET finished_at = ?, counts = ?, tokens_in = ?, tokens_out = ?, "
                "calls = ?, errors = ? WHERE id = ?",
                (
                    _now(),
                    json.dumps(counts, sort_keys=True),
                    tokens_in,
                    tokens_out,
                    calls,
                    # A server's words are in errors: what they echoed of a secret is not kept.
                    hidden(json.dumps(listed, ensure_ascii=False, default=str)),
                    run_id,
                ),
            )

    def run_failed(self, run_id: int, errors: Sequence[str], stage: str) -> None:
        """Adds errors met after a run ended (posting its week, `stage`) to its record."""
        with self._tx() as db:
            row = db.execute("SELECT errors FROM runs WHERE id = ?", (run_id,)).fetchone()
            listed = [*json.loads(row[0] if row and row[0] else "[]")]
            listed += [{"error": error, "stage": stage} for error in errors]
            text = hidden(json.dumps(listed, ensure_ascii=False))
            db.execute("UPDATE runs SET errors = ? WHERE id = ?", (text, run_id))

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest runs, newest first, with counts and errors decoded."""
        with self._tx() as db:
            cursor = db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
            names = [column[0] for column in cursor.description]
            found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        for run in found:
            run["counts"], run["errors"] = json.loads(run["counts"]), json.loads(run["errors"])
        return found

    def close(self) -> None:
        # Under the lock: a worker still in a transaction finishes it first, and a later one
        # gets a StoreError ("closed database"), never a connection freed under it.
        with self._lock:
            self._db.close()


def _open(path: Path) -> sqlite3.Connection:
    """The store's connection, in WAL mode and migrated."""
    for attempt in range(1, OPEN_ATTEMPTS + 1):
        db = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA busy_timeout=10000")  # first: the steps below may wait on a lock
            db.execute("PRAGMA journal_mode=WAL")
            _migrate(db)
            return db
        except (OSError, sqlite3.Error) as exc:
            if db is not None:
                db.close()
            # Switching a new file to WAL while another run does the same can answer "locked"
            # at once, without waiting: two cron jobs starting together.
            if "locked" not in str(exc) or attempt == OPEN_ATTEMPTS:
                raise StoreError(f"cannot open the store {path} ({exc}): {_advice(exc)}") from None
            time.sleep(0.2 * attempt)
    raise StoreError(f"cannot open the store {path}: it stayed locked")


def _migrate(db: sqlite3.Connection) -> None:
    """Applies the migrations not yet run, each atomically; also proves the file is writable."""
    while True:
        db.execute("BEGIN IMMEDIATE")  # re-read the version under the write lock: two may race
        try:
            done = db.execute("PRAGMA user_version").fetchone()[0]
            if done >= len(MIGRATIONS):
                db.execute(f"PRAGMA user_version = {done}")  # a write, so a read-only file fails
                db.execute("ROLLBACK")
                return
            for statement in MIGRATIONS[done].split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {done + 1}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


def holder_id() -> str:
    """Who holds a lease: this machine, this process, and a nonce for this run."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _alive(holder: str) -> bool:
    """False when the holder ran on this machine and its process is gone."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's process cannot be checked; its lease runs out
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, owned by someone else
    return True


def _advice(exc: Exception) -> str:
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text:
        return "it is not a prhub store or is damaged; move it aside, or pass --store PATH"
    if "readonly" in text or "read-only" in text:
        return "it is read-only; fix its permissions, or pass --store PATH"
    return "fix its permissions, or pass --store PATH"


def _load(model: type[B], data: str) -> B | None:
    """A stored row as `model`; None when it no longer validates (made by another version)."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        # Made again at a cost: say so, so a store that never hits can be noticed.
        log.warning(
            "a stored %s no longer fits this version of prhub (%d problems); it is made again",
            model.__name__,
            exc.error_count(),
        )
        return None


def _restore_digest(db: sqlite3.Connection, d: PRDigest) -> bool:
    """Writes `d` unless a digest made at its time or later is stored under its key."""
    key = d.meta.cache_key
    row = db.execute("SELECT data FROM digests WHERE key = ?", (key,)).fetchone()
    old = _load(PRDigest, row[0]) if row else None
    if old is not None and old.meta.created_at >= d.meta.created_at:
        return False
    db.execute(
        "INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?)",
        (key, d.repo, d.number, d.model_dump_json(), _now()),
    )
    return True


def _restore_narrative(db: sqlite3.Connection, key: str, n: StoredNarrative) -> bool:
    """Writes `n` unless a narrative made at its time or later is stored under `key`."""
    row = db.execute("SELECT data, created_at FROM narratives WHERE key = ?", (key,)).fetchone()
    if row and _load(WeeklyNarrative, row[0]) and datetime.fromisoformat(row[1]) >= n.created_at:
        return False
    db.execute(
        "INSERT OR REPLACE INTO narratives (key, data, dropped, created_at, usage) "
        "VALUES (?, ?, ?, ?, ?)",
        (
            key,
            n.narrative.model_dump_json(),
            n.dropped,
            n.created_at.astimezone(UTC).isoformat(),
            n.usage.model_dump_json(),
        ),
    )
    return True


def _restore_report(db: sqlite3.Connection, report: WeeklyReport) -> bool:
    """Writes `report` unless one of its window made at its time or later is stored."""
    f = report.facts
    window = (f.repo, f.start.isoformat(), f.end.isoformat())
    row = db.execute(
        'SELECT data FROM reports WHERE repo = ? AND start = ? AND "end" = ?', window
    ).fetchone()
    old = _load(WeeklyReport, row[0]) if row else None
    if old is not None and made_at(old) >= made_at(report):
        return False
    db.execute(
        "INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?)",
        (*window, report.model_dump_json(), _now()),
    )
    return True


def made_at(report: WeeklyReport) -> datetime:
    """When a report's content was made; a week with neither narrative nor digest, never."""
    return report.meta.generated_at or datetime.min.replace(tzinfo=UTC)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
