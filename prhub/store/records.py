"""What the store records besides what runs make: posts, learned endpoint modes, leases held
on what a run is making, and the runs themselves."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, NamedTuple

from pydantic import BaseModel

from prhub.logmask import hidden
from prhub.store.db import alive, now

LEASE_SECONDS = 1800.0  # a holder that neither finishes nor dies in this time is taken over


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


class Records:
    """The store's records, on the connection the store shares (`_tx`)."""

    _tx: Callable[[], AbstractContextManager[sqlite3.Connection]]

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
                (repo, start.isoformat(), end.isoformat(), *post, now()),
            )

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
                (base_url, model, mode, now()),
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
            if row and row[0] != holder and row[1] > now and alive(row[0]):
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
                "INSERT INTO runs (command, started_at) VALUES (?, ?)", (command, now())
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
                    now(),
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
