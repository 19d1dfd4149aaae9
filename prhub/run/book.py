"""The batches a store remembers: each one sent to the provider, the requests in it by their
custom_id and repository, and their answers once collected."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from prhub import logmask, retry
from prhub.config import Settings
from prhub.llm.batch import Batched
from prhub.llm.batch_api import Answer, Sending, identity
from prhub.store.store import Store


def client(settings: Settings, store: Store, stop: retry.StopToken, mode: str | None) -> Batched:
    """The run's LLM client in batch mode, its batches kept in `store`; with --refresh, no
    answer collected before this run is reused."""
    since = datetime.now(UTC) if settings.refresh else None
    book = BatchBook(store, settings.endpoint, settings.model, since)
    return Batched(settings, book, stop=stop, mode=mode)


class BatchBook:
    """The batch state of one store for one endpoint and model (llm.batch.Book)."""

    def __init__(
        self, store: Store, endpoint: str, model: str, since: datetime | None = None
    ) -> None:
        self.store = store
        self.endpoint = endpoint
        self.model = model
        # Answers collected before this are not reused (--refresh asks for new ones).
        self.since = _moment(since or datetime.min.replace(tzinfo=UTC))

    def answer(self, key: str) -> Answer | None:
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT status, answer FROM batch_requests "
                "WHERE key = ? AND status IS NOT NULL AND answered_at >= ?",
                (key, self.since),
            ).fetchone()
        return Answer(row[0], json.loads(row[1])) if row else None

    def first_read(self, key: str) -> bool:
        with self.store.transaction() as db:
            cursor = db.execute(
                "UPDATE batch_requests SET read_at = ? WHERE key = ? AND read_at IS NULL",
                (_now(), key),
            )
        return cursor.rowcount > 0

    def in_flight(self, key: str) -> str | None:
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT b.id FROM batch_requests r JOIN batches b ON b.id = r.batch_id "
                "WHERE r.key = ? AND r.status IS NULL AND b.collected_at IS NULL "
                "AND b.endpoint = ? AND b.model = ?",
                (key, self.endpoint, self.model),
            ).fetchone()
        return row[0] if row else None

    def open_batches(self, repo: str) -> list[str]:
        with self.store.transaction() as db:
            rows = db.execute(
                "SELECT DISTINCT b.id, b.submitted_at FROM batches b "
                "JOIN batch_requests r ON r.batch_id = b.id "
                "WHERE r.repo = ? AND b.collected_at IS NULL AND b.endpoint = ? AND b.model = ? "
                "ORDER BY b.submitted_at, b.id",
                (repo, self.endpoint, self.model),
            ).fetchall()
        return [row[0] for row in rows]

    def sending(self, ident: str, run: str, requests: dict[str, str]) -> tuple[Sending, bool]:
        with self.store.transaction() as db:
            row = db.execute(
                "SELECT run, started_at, file_id FROM batch_sends WHERE ident = ?", (ident,)
            ).fetchone()
            if row:
                return Sending(ident, row[0], row[1], row[2]), True
            db.execute(
                "INSERT INTO batch_sends VALUES (?, ?, ?, ?, ?, NULL, ?)",
                (ident, self.endpoint, self.model, run, json.dumps(requests), time.time()),
            )
        return Sending(ident, run, time.time()), False

    def uploaded(self, ident: str, file_id: str) -> None:
        with self.store.transaction() as db:
            db.execute("UPDATE batch_sends SET file_id = ? WHERE ident = ?", (file_id, ident))

    def unsent(self) -> list[tuple[Sending, dict[str, str]]]:
        with self.store.transaction() as db:
            rows = db.execute(
                "SELECT ident, run, started_at, file_id, requests FROM batch_sends "
                "WHERE endpoint = ? AND model = ? ORDER BY started_at",
                (self.endpoint, self.model),
            ).fetchall()
        return [(Sending(*row[:4]), json.loads(row[4])) for row in rows]

    def unsend(self, ident: str) -> None:
        with self.store.transaction() as db:
            db.execute("DELETE FROM batch_sends WHERE ident = ?", (ident,))

    def discard(self, key: str) -> None:
        with self.store.transaction() as db:
            db.execute(
                "UPDATE batch_requests SET batch_id = NULL, status = NULL, answer = NULL, "
                "answered_at = NULL, read_at = NULL WHERE key = ?",
                (key,),
            )

    def submitted(self, batch_id: str, requests: dict[str, str]) -> None:
        now = _now()
        with self.store.transaction() as db:
            # The send is over: what the provider holds is known by its id from now on.
            db.execute(
                "DELETE FROM batch_sends WHERE endpoint = ? AND model = ? AND ident = ?",
                (self.endpoint, self.model, identity(requests)),
            )
            db.execute(
                "INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?, ?, NULL)",
                (batch_id, self.endpoint, self.model, "validating", now),
            )
            db.executemany(
                "INSERT INTO batch_requests (key, repo, batch_id) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET batch_id = excluded.batch_id, "
                "repo = excluded.repo, status = NULL, answer = NULL, answered_at = NULL, "
                "read_at = NULL",
                [(key, repo, batch_id) for key, repo in requests.items()],
            )

    def collected(self, batch_id: str, status: str, answers: dict[str, Answer]) -> int:
        now = _now()
        with self.store.transaction() as db:
            db.executemany(
                "UPDATE batch_requests SET status = ?, answer = ?, answered_at = ? "
                "WHERE key = ? AND batch_id = ?",
                [
                    # What a server echoed of prhub's secrets is never kept.
                    (a.status, logmask.hidden(json.dumps(a.body, ensure_ascii=False)), now)
                    + (key, batch_id)
                    for key, a in answers.items()
                ],
            )
            # What came back without an answer is free to go into the next batch.
            left = db.execute(
                "UPDATE batch_requests SET batch_id = NULL WHERE batch_id = ? AND status IS NULL",
                (batch_id,),
            ).rowcount
            db.execute(
                "UPDATE batches SET status = ?, collected_at = ? WHERE id = ?",
                (status, now, batch_id),
            )
        return left


def _now() -> str:
    return _moment(datetime.now(UTC))


def _moment(when: datetime) -> str:
    """A time as the table keeps it: to the microsecond, so that texts sort as times do."""
    return when.astimezone(UTC).isoformat(timespec="microseconds")
