"""The store's SQLite connection: opened in WAL mode and migrated, rows read back as models,
and who holds a lease."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from prhub.errors import StoreError
from prhub.store.migrations import MIGRATIONS

B = TypeVar("B", bound=BaseModel)
log = logging.getLogger("prhub")
OPEN_ATTEMPTS = 5


def open_db(path: Path) -> sqlite3.Connection:
    """The store's connection, in WAL mode and migrated."""
    for attempt in range(1, OPEN_ATTEMPTS + 1):
        db = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA busy_timeout=10000")  # first: the steps below may wait on a lock
            db.execute("PRAGMA journal_mode=WAL")
            migrate(db)
            return db
        except (OSError, sqlite3.Error) as exc:
            if db is not None:
                db.close()
            # Switching a new file to WAL while another run does the same can answer "locked"
            # at once, without waiting: two cron jobs starting together.
            if "locked" not in str(exc) or attempt == OPEN_ATTEMPTS:
                raise StoreError(f"cannot open the store {path} ({exc}): {advice(exc)}") from None
            time.sleep(0.2 * attempt)
    raise StoreError(f"cannot open the store {path}: it stayed locked")


def migrate(db: sqlite3.Connection) -> None:
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


def alive(holder: str) -> bool:
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


def advice(exc: Exception) -> str:
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text:
        return "it is not a prhub store or is damaged; move it aside, or pass --store PATH"
    if "readonly" in text or "read-only" in text:
        return "it is read-only; fix its permissions, or pass --store PATH"
    return "fix its permissions, or pass --store PATH"


def load(model: type[B], data: str) -> B | None:
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


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
