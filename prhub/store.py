"""SQLite in the user's data directory: fetched PRs, digests and reports, reused across runs."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from prhub.errors import StoreError
from prhub.model import PRDigest, PullRequest, WeeklyNarrative

# Numbered migrations: the database's user_version says how many have run. Never edit one.
MIGRATIONS = [
    """
    CREATE TABLE pulls (
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        version TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL,
        fetched_at TEXT NOT NULL,
        PRIMARY KEY (repo, number)
    );
    CREATE TABLE digests (
        key TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX digests_pr ON digests (repo, number);
    """,
    """
    CREATE TABLE narratives (
        key TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        dropped INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
]


def default_path() -> Path:
    return Path(platformdirs.user_data_dir("prhub")) / "prhub.db"


class Store:
    """One SQLite file; safe to share between the threads of one run."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the store {self.path} ({exc}): fix its permissions, "
                "or pass --store PATH"
            ) from None

    def _migrate(self) -> None:
        done = self._db.execute("PRAGMA user_version").fetchone()[0]
        for number, script in enumerate(MIGRATIONS[done:], start=done + 1):
            self._db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")

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

    def pull(self, repo: str, number: int) -> tuple[PullRequest, str] | None:
        """A fetched PR and the updated_at GitHub gave with it, if stored."""
        with self._tx() as db:
            row = db.execute(
                "SELECT data, updated_at FROM pulls WHERE repo = ? AND number = ?", (repo, number)
            ).fetchone()
        return (PullRequest.model_validate_json(row[0]), row[1]) if row else None

    def save_pull(self, pr: PullRequest, updated_at: str) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO pulls VALUES (?, ?, ?, ?, ?, ?)",
                (pr.repo, pr.number, pr.version, updated_at, pr.model_dump_json(), _now()),
            )

    def digest(self, key: str) -> PRDigest | None:
        with self._tx() as db:
            row = db.execute("SELECT data FROM digests WHERE key = ?", (key,)).fetchone()
        return PRDigest.model_validate_json(row[0]) if row else None

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

    def narrative(self, key: str) -> tuple[WeeklyNarrative, int] | None:
        """A week's narrative made before from the same inputs, with its dropped citations."""
        with self._tx() as db:
            row = db.execute(
                "SELECT data, dropped FROM narratives WHERE key = ?", (key,)
            ).fetchone()
        return (WeeklyNarrative.model_validate_json(row[0]), row[1]) if row else None

    def save_narrative(self, key: str, narrative: WeeklyNarrative, dropped: int) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO narratives VALUES (?, ?, ?, ?)",
                (key, narrative.model_dump_json(), dropped, _now()),
            )

    def close(self) -> None:
        self._db.close()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
