"""The site's working index on disk: what builds learned of the store's entries (the memo,
kept beside the site), and one repository's digests as its lists need them (the lists, for
one build). Memory stays flat however large the store."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel

from prhub.publish.manifest import CACHE
from prhub.publish.pages import WeekRow
from prhub.publish.parts import Flag

__all__ = ["DigestNote", "Entry", "Lists", "Memo", "Row", "WeekNote"]


class Entry(BaseModel):
    """A feed's entry as a note keeps it (links made when the feed is)."""

    title: str
    summary: str
    updated: datetime
    published: datetime | None


class DigestNote(BaseModel):
    """A digest as the site's lists, feed and search need it."""

    number: int
    made: int  # when it was made (meta.created_at): the latest of a PR's digests is shown
    merged: int  # when its PR was merged, else made: the order of every list
    month: str  # of its stream, in the site's time zone
    tags: list[tuple[str, str]]  # each tag and what it names: module, type or label
    fp: str  # its JSON's fingerprint, as the store holds it
    url: str
    doc: dict[str, Any] = {}  # its search entry (the lists keep it apart)
    entry: Entry


class WeekNote(BaseModel):
    """A weekly report as the site's lists, feed and search need it."""

    start: str  # the store's key of it, as stored
    end: str
    stem: str  # its pages' name: 2026-W31, as the reports folder names it
    fp: str  # its JSON's fingerprint
    tz: str
    year: int
    week: int | None
    first: datetime  # its window
    last: datetime
    prs: int
    title: str
    period: str
    key_prs: int
    lead: str
    flag: tuple[str, str] | None
    doc: dict[str, Any]
    entry: Entry
    digests: list[tuple[int, int, str]]  # each digest it holds: number, when made, fingerprint

    def row(self, href: str) -> WeekRow:
        flag = Flag(*self.flag) if self.flag else None
        return WeekRow(href, self.title, self.period, self.prs, self.key_prs, self.lead, flag)


class Memo:
    """What builds learned of the store's entries, by the fingerprint of each one's stored text
    and the settings that shape it: a cache beside the site, kept across builds and changed in
    place (losing it costs only time); what a build did not use is dropped when it ends."""

    VERSION = 1  # of its tables: a memo of another is made anew

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.db = self._open()
        except sqlite3.DatabaseError:  # not a database: made anew
            path.unlink(missing_ok=True)
            self.db = self._open()
        self._seen: list[tuple[str]] = []

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None)
        # A larger cache than the other databases': each note is looked up by its key.
        db.executescript("PRAGMA cache_size = -2048; PRAGMA temp_store = FILE;")
        if db.execute("PRAGMA user_version").fetchone()[0] != self.VERSION:
            db.executescript(
                f"""
                DROP TABLE IF EXISTS memo;
                CREATE TABLE memo (key TEXT PRIMARY KEY, data TEXT NOT NULL);
                PRAGMA user_version = {self.VERSION};
                """
            )
        db.executescript("CREATE TEMP TABLE used (key TEXT PRIMARY KEY); BEGIN;")
        return db

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT data FROM memo WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self._use(key)
        return str(row[0]) if row else None

    def put(self, key: str, data: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO memo VALUES (?, ?)", (key, data))
        self._use(key)

    def _use(self, key: str) -> None:
        self._seen.append((key,))
        if len(self._seen) >= 512:
            self._flush()

    def _flush(self) -> None:
        self.db.executemany("INSERT OR IGNORE INTO used VALUES (?)", self._seen)
        self._seen.clear()

    def close(self, done: bool) -> None:
        """Keeps what a whole build learned; then what it did not use goes, once that is a
        fifth of the memo."""
        if done:
            self._flush()
            used = self.db.execute("SELECT count(*) FROM used").fetchone()[0]
            kept = self.db.execute("SELECT count(*) FROM memo").fetchone()[0]
            if kept > used * 1.25 + 100:
                self.db.execute("DELETE FROM memo WHERE key NOT IN (SELECT key FROM used)")
            self.db.execute("COMMIT")
        self.db.close()


class Row(NamedTuple):
    """A digest in a list: its PR, its fingerprint, where it is, when its PR was merged."""

    number: int
    fp: str
    source: str
    merged: int


class Lists:
    """A repository's digests on disk: each PR's latest (the one made last; of two made at once,
    the first found), by month and by tag, the latest merged first, and the weeks each is in;
    and the search entries of every repository, in the order the build met them."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("", isolation_level=None)  # a private database on disk
        self.db.executescript(
            CACHE
            + """
            PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
            CREATE TABLE docs (seq INTEGER PRIMARY KEY, doc TEXT NOT NULL);
            """
        )
        self._seq = 0
        self._found: list[tuple[object, ...]] = []
        self._tags: list[tuple[int, str, str]] = []

    def clear(self) -> None:
        self.db.executescript(
            """
            DROP TABLE IF EXISTS found; DROP TABLE IF EXISTS found_tags;
            DROP TABLE IF EXISTS latest; DROP TABLE IF EXISTS tagged; DROP TABLE IF EXISTS appears;
            DROP TABLE IF EXISTS weeks;
            CREATE TABLE found (seq INTEGER PRIMARY KEY, number INT, made INT, merged INT,
                month TEXT, fp TEXT, note TEXT, doc TEXT, source TEXT);
            CREATE TABLE found_tags (seq INT, tag TEXT, kind TEXT);
            CREATE TABLE appears (number INT, stem TEXT, fp TEXT);
            CREATE INDEX appears_pr ON appears (number);
            CREATE TABLE weeks (stem TEXT PRIMARY KEY, rank INT, doc TEXT);
            """
        )
        self.db.execute("BEGIN")

    def add(self, note: DigestNote, source: str) -> None:
        """A digest the store holds, with its note (written a few hundred at a time)."""
        self._seq += 1
        self._found.append(
            (self._seq, note.number, note.made, *self._noted(self._seq, note), source)
        )
        if len(self._found) >= 256:
            self._write()

    def _write(self) -> None:
        self.db.executemany("INSERT INTO found VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self._found)
        self.db.executemany("INSERT INTO found_tags VALUES (?, ?, ?)", self._tags)
        self._found.clear()
        self._tags.clear()

    def _noted(self, seq: int, n: DigestNote) -> tuple[int, str, str, str, str]:
        self._tags += [(seq, t, k) for t, k in n.tags]
        doc = json.dumps(n.doc, ensure_ascii=False)
        return n.merged, n.month, n.fp, n.model_dump_json(exclude={"doc"}), doc

    def held(self, number: int, made: int, fp: str, source: str) -> None:
        """A digest a report holds, by number, when it was made and its fingerprint."""
        self._seq += 1
        self._found.append((self._seq, number, made, None, None, fp, None, None, source))
        if len(self._found) >= 256:
            self._write()

    def settle(self, noted: Callable[[str], DigestNote]) -> None:
        """Each PR's latest digest (`noted` gives the note of one only a report holds), its
        months and tags."""
        self._write()
        self.db.executescript(
            """
            CREATE TABLE latest AS SELECT seq, number, merged, month, fp, source, note, doc
            FROM (SELECT *, row_number() OVER (PARTITION BY number ORDER BY made DESC, seq) AS n
                FROM found) WHERE n = 1;
            """
        )
        bare = self.db.execute("SELECT seq, source FROM latest WHERE note IS NULL").fetchall()
        self.db.execute("BEGIN")
        for seq, source in bare:
            merged, month, _, note, doc = self._noted(seq, noted(source))
            self.db.execute(
                "UPDATE latest SET merged = ?, month = ?, note = ?, doc = ? WHERE seq = ?",
                (merged, month, note, doc, seq),
            )
        self.db.executemany("INSERT INTO found_tags VALUES (?, ?, ?)", self._tags)
        self._tags.clear()
        self.db.executescript(
            """
            CREATE INDEX latest_order ON latest (merged DESC, number DESC);
            CREATE INDEX latest_month ON latest (month, merged DESC, number DESC);
            CREATE INDEX latest_number ON latest (number);
            CREATE TABLE tagged AS SELECT l.number, l.merged, t.tag, t.kind
                FROM latest AS l JOIN found_tags AS t ON t.seq = l.seq;
            CREATE INDEX tagged_tag ON tagged (tag, merged DESC, number DESC);
            DROP TABLE found; DROP TABLE found_tags;
            """
        )

    def count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM latest").fetchone()[0])

    def latest(self) -> Iterator[Row]:
        """Each PR's latest digest, the latest merged first."""
        rows = self.db.execute(
            "SELECT number, fp, source, merged FROM latest ORDER BY merged DESC, number DESC"
        )
        return (Row(*row) for row in rows)

    def newest(self, count: int) -> list[tuple[DigestNote, str]]:
        """The notes of the `count` latest merged, and where each digest is."""
        rows = self.db.execute(
            "SELECT note, source FROM latest ORDER BY merged DESC, number DESC LIMIT ?", (count,)
        )
        return [(DigestNote.model_validate_json(note), source) for note, source in rows]

    def months(self) -> list[tuple[str, int]]:
        """Each month with its digests, the latest first."""
        rows = self.db.execute(
            "SELECT month, count(*) FROM latest GROUP BY month ORDER BY month DESC"
        )
        return [(m, int(n)) for m, n in rows]

    def tags(self) -> list[tuple[str, str, int]]:
        """Each tag, what it names (a module where any PR has it as one) and its digests."""
        rows = self.db.execute(
            """SELECT tag, CASE min(CASE kind WHEN 'module' THEN 0 WHEN 'type' THEN 1 ELSE 2
            END) WHEN 0 THEN 'module' WHEN 1 THEN 'type' ELSE 'label' END, count(*)
            FROM tagged GROUP BY tag ORDER BY tag"""
        )
        return [(t, k, int(n)) for t, k, n in rows]

    def page(self, month: str | None, tag: str | None, at: int, count: int) -> list[Row]:
        """`count` digests of a month or a tag, from the `at`-th, the latest merged first."""
        if month is not None:
            rows = self.db.execute(
                "SELECT number, fp, source, merged FROM latest WHERE month = ? "
                "ORDER BY merged DESC, number DESC LIMIT ? OFFSET ?",
                (month, count, at),
            )
        else:
            rows = self.db.execute(
                "SELECT l.number, l.fp, l.source, l.merged FROM tagged AS t JOIN latest AS l "
                "ON l.number = t.number WHERE t.tag = ? ORDER BY t.merged DESC, t.number DESC "
                "LIMIT ? OFFSET ?",
                (tag, count, at),
            )
        return [Row(*row) for row in rows]

    def week(self, week: WeekNote) -> None:
        """A week: the digests it holds, its search entry."""
        self.db.execute(
            "INSERT OR REPLACE INTO weeks VALUES (?, 0, ?)",
            (week.stem, json.dumps(week.doc, ensure_ascii=False)),
        )
        self.db.executemany(
            "INSERT INTO appears VALUES (?, ?, ?)",
            [(number, week.stem, fp) for number, _, fp in week.digests],
        )

    def rank(self, stems: list[str]) -> None:
        """The weeks in the order their repository's page lists them."""
        self.db.executemany("UPDATE weeks SET rank = ? WHERE stem = ?", enumerate(stems))

    def weeks(self, row: Row) -> tuple[list[str], str | None]:
        """The weeks a PR is in, in the order its repository's page lists them, and the first
        whose report holds this very digest (its JSON has it), if one does."""
        found = self.db.execute(
            "SELECT a.stem, a.fp FROM appears AS a JOIN weeks AS w ON w.stem = a.stem "
            "WHERE a.number = ? ORDER BY w.rank",
            (row.number,),
        ).fetchall()
        return [s for s, _ in found], next((s for s, fp in found if fp == row.fp), None)

    def note_week(self, stem: str) -> None:
        """A week's search entry, in the order the build met it."""
        self.db.execute("INSERT INTO docs (doc) SELECT doc FROM weeks WHERE stem = ?", (stem,))

    def note_digests(self) -> None:
        """The search entries of the repository's digests, the latest merged first."""
        self.db.execute(
            "INSERT INTO docs (doc) SELECT doc FROM latest ORDER BY merged DESC, number DESC"
        )

    def docs(self) -> Iterator[dict[str, Any]]:
        rows = self.db.execute("SELECT doc FROM docs ORDER BY seq")
        return (json.loads(doc) for (doc,) in rows)

    def close(self) -> None:
        self.db.close()
