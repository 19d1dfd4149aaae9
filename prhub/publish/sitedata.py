"""What a site is made of, read from the store one entry at a time. Each report and digest is
read once into a note (what the site's lists, feeds and search need of it), kept in the site's
record under the fingerprint of the entry's stored text: an entry that did not change is not
parsed again. A repository's digests are listed on disk (each PR's latest, by month and by tag),
and an entry itself is read again only when a page must be made of it: memory stays flat
however long a repository's history."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from prhub.config import Settings
from prhub.digest.digest import retag
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import feed, search
from prhub.publish.formats import Format
from prhub.publish.manifest import CACHE
from prhub.publish.output import report_path
from prhub.publish.pages import WeekRow, week_row
from prhub.publish.parts import Flag
from prhub.store.store import Store

__all__ = ["DigestNote", "Lists", "Memo", "Sources", "WeekNote", "fingerprint", "survey"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
M = TypeVar("M", PRDigest, WeeklyReport)


def fingerprint(text: str) -> str:
    """The fingerprint of a report's or a digest's JSON: what stands for all a page makes of it."""
    return hashlib.sha256(text.encode()).hexdigest()


def _fp(d: PRDigest) -> str:
    return fingerprint(d.model_dump_json())


def _micros(moment: datetime) -> int:
    """A time as a number that sorts as the time does, whatever its offset."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


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
    doc: dict[str, Any]  # its search entry
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


def _digest_note(d: PRDigest, name: str, settings: Settings) -> DigestNote:
    """The note of a digest as the store holds it (its tags in the site's spellings)."""
    shown = retag(d, settings)
    kinds = {m: "module" for m in shown.modules}
    kinds.setdefault(shown.kind or "", "type")
    when = d.merged_at or d.meta.created_at
    e = feed.digest_entry(shown, "")
    return DigestNote(
        number=d.number,
        made=_micros(d.meta.created_at),
        merged=_micros(when),
        month=when.astimezone(ZoneInfo(settings.tz)).strftime("%Y-%m"),
        tags=[(t, kinds.get(t, "label")) for t in shown.tags],
        fp=_fp(d),
        url=d.url,
        doc=search.digest_entry(shown, f"{name}/pr/{d.number}.html", settings.tz),
        entry=Entry(title=e.title, summary=e.summary, updated=e.updated, published=e.published),
    )


def _week_note(r: WeeklyReport, start: str, end: str, name: str, settings: Settings) -> WeekNote:
    stem = report_path(r, Format.html, Path()).stem
    row = week_row(r, f"{stem}.html")
    f = r.facts
    e = feed.week_entry(r, "", stem, "")
    return WeekNote(
        start=start,
        end=end,
        stem=stem,
        fp=fingerprint(r.model_dump_json()),
        tz=f.tz,
        year=f.year,
        week=f.week,
        first=f.start,
        last=f.end,
        prs=f.pr_count,
        title=row.title,
        period=row.period,
        key_prs=row.key_prs,
        lead=row.lead,
        flag=(row.flag.text, row.flag.why) if row.flag else None,
        doc=search.week_entry(r, f"{name}/{stem}.html"),
        entry=Entry(title=e.title, summary=e.summary, updated=e.updated, published=e.published),
        digests=[(d.number, _micros(d.meta.created_at), _fp(d)) for d in r.digests],
    )


class Sources:
    """A repository's entries read again from the store, for the pages made of them."""

    def __init__(self, store: Store, name: str, settings: Settings) -> None:
        self.store, self.name, self.settings = store, name, settings
        self._report: tuple[str, WeeklyReport | None] = ("", None)

    def report(self, note: WeekNote) -> WeeklyReport:
        """The report a note was made of."""
        return self._window(note.start, note.end)

    def _window(self, start: str, end: str) -> WeeklyReport:
        key = f"{start}\t{end}"
        if self._report[0] != key:
            found = self.store.report(
                self.name, datetime.fromisoformat(start), datetime.fromisoformat(end)
            )
            self._report = (key, found)
        if (r := self._report[1]) is None:
            raise LookupError(f"the store no longer holds the week {start} of {self.name}")
        return r

    def digest(self, source: str, retagged: bool = True) -> PRDigest:
        """A digest by where the lists found it: its key in the store, or a report's copy; its
        tags in the site's spellings unless not `retagged`."""
        kind, _, where = source.partition("\t")
        if kind == "d":
            found = self.store.digest(where)
        else:
            start, end, at = where.split("\t")
            found = self._window(start, end).digests[int(at)]
        if found is None:
            raise LookupError(f"the store no longer holds a digest of {self.name} ({where})")
        return retag(found, self.settings) if retagged else found


def survey(store: Store, name: str, settings: Settings, memo: Memo, lists: Lists) -> list[WeekNote]:
    """The repository's weeks, the latest window first, and its digests into `lists`: each
    entry's note from the memo when its stored text is the one noted, else made anew."""
    salt = f"{name}\n{settings.tz}\n{sorted(settings.tags.items())}\n"
    weeks = []
    for start, end, text in store.report_rows(name):
        key = fingerprint(f"week\n{salt}{text}")
        if (noted := memo.get(key)) is not None:
            weeks.append(WeekNote.model_validate_json(noted))
        elif (r := _load(WeeklyReport, text)) is not None:
            weeks.append(_week_note(r, start, end, name, settings))
            memo.put(key, weeks[-1].model_dump_json())
    weeks.sort(key=lambda w: (w.first, w.last, w.tz), reverse=True)
    lists.clear()
    for key, text in store.digest_rows(name):
        memo_key = fingerprint(f"digest\n{salt}{text}")
        if (noted := memo.get(memo_key)) is not None:
            lists.add(DigestNote.model_validate_json(noted), f"d\t{key}")
        elif (d := _load(PRDigest, text)) is not None:
            made = _digest_note(d, name, settings)
            memo.put(memo_key, made.model_dump_json())
            lists.add(made, f"d\t{key}")
    for w in weeks:
        for i, (number, made_at, fp) in enumerate(w.digests):
            lists.held(number, made_at, fp, f"r\t{w.start}\t{w.end}\t{i}")
    src = Sources(store, name, settings)

    def note_of(source: str) -> DigestNote:
        """The note of a digest only a report holds (rare: a store keeps each one it made)."""
        d = src.digest(source, retagged=False)
        key = fingerprint(f"digest\n{salt}{d.model_dump_json()}")
        if (found := memo.get(key)) is not None:
            return DigestNote.model_validate_json(found)
        made = _digest_note(d, name, settings)
        memo.put(key, made.model_dump_json())
        return made

    lists.settle(note_of)
    return weeks


def _load(model: type[M], text: str) -> M | None:
    from prhub.store.db import load

    return load(model, text)


class Memo:
    """What builds learned of the store's entries, by the fingerprint of each one's stored text
    and the settings that shape it: a cache beside the site, kept across builds and changed in
    place (losing it costs only time); what a build did not use is dropped when it ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.db = self._open()
        except sqlite3.DatabaseError:  # not a database: made anew
            path.unlink(missing_ok=True)
            self.db = self._open()
        self.used = 0

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None)
        db.executescript(
            CACHE
            + """
            CREATE TABLE IF NOT EXISTS memo (key TEXT PRIMARY KEY, data TEXT NOT NULL)
                WITHOUT ROWID;
            CREATE TEMP TABLE used (key TEXT PRIMARY KEY) WITHOUT ROWID;
            BEGIN;
            """
        )
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
        self.used += self.db.execute("INSERT OR IGNORE INTO used VALUES (?)", (key,)).rowcount

    def close(self, done: bool) -> None:
        """Keeps what a whole build learned; then what it did not use goes, once that is a
        fifth of the memo."""
        if done:
            kept = self.db.execute("SELECT count(*) FROM memo").fetchone()[0]
            if kept > self.used * 1.25 + 100:
                self.db.execute("DELETE FROM memo WHERE key NOT IN (SELECT key FROM used)")
            self.db.execute("COMMIT")
        self.db.close()


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

    def clear(self) -> None:
        self.db.executescript(
            """
            DROP TABLE IF EXISTS found; DROP TABLE IF EXISTS found_tags;
            DROP TABLE IF EXISTS latest; DROP TABLE IF EXISTS tagged; DROP TABLE IF EXISTS appears;
            CREATE TABLE found (seq INTEGER PRIMARY KEY, number INT, made INT, merged INT,
                month TEXT, fp TEXT, source TEXT, note TEXT);
            CREATE TABLE found_tags (seq INT, tag TEXT, kind TEXT);
            CREATE TABLE appears (seq INTEGER PRIMARY KEY, number INT, stem TEXT, fp TEXT);
            CREATE INDEX appears_pr ON appears (number, seq);
            """
        )
        self.db.execute("BEGIN")

    def add(self, note: DigestNote, source: str) -> None:
        self._seq += 1
        n = note
        self.db.execute(
            "INSERT INTO found VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (self._seq, n.number, n.made, n.merged, n.month, n.fp, source, n.model_dump_json()),
        )
        self.db.executemany(
            "INSERT INTO found_tags VALUES (?, ?, ?)", [(self._seq, t, k) for t, k in n.tags]
        )

    def held(self, number: int, made: int, fp: str, source: str) -> None:
        """A digest a report holds, by number, when it was made and its fingerprint."""
        self._seq += 1
        self.db.execute(
            "INSERT INTO found (seq, number, made, fp, source) VALUES (?, ?, ?, ?, ?)",
            (self._seq, number, made, fp, source),
        )

    def settle(self, noted: Callable[[str], DigestNote]) -> None:
        """Each PR's latest digest (`noted` gives the note of one only a report holds), its
        months and tags."""
        self.db.executescript(
            """
            CREATE TABLE latest AS SELECT seq, number, merged, month, fp, source, note
            FROM (SELECT *, row_number() OVER (PARTITION BY number ORDER BY made DESC, seq) AS n
                FROM found) WHERE n = 1;
            """
        )
        bare = self.db.execute("SELECT seq, source FROM latest WHERE note IS NULL").fetchall()
        self.db.execute("BEGIN")
        for seq, source in bare:
            n = noted(source)
            self.db.execute(
                "UPDATE latest SET merged = ?, month = ?, note = ? WHERE seq = ?",
                (n.merged, n.month, n.model_dump_json(), seq),
            )
            self.db.executemany(
                "INSERT INTO found_tags VALUES (?, ?, ?)", [(seq, t, k) for t, k in n.tags]
            )
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

    def latest(self, limit: int = -1) -> Iterator[tuple[DigestNote, str]]:
        """Each PR's latest digest and where it is, the latest merged first."""
        rows = self.db.execute(
            "SELECT note, source FROM latest ORDER BY merged DESC, number DESC LIMIT ?", (limit,)
        )
        return ((DigestNote.model_validate_json(note), source) for note, source in rows)

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

    def page(
        self, month: str | None, tag: str | None, at: int, count: int
    ) -> list[tuple[DigestNote, str]]:
        """`count` digests of a month or a tag, from the `at`-th, the latest merged first, and
        where each is."""
        if month is not None:
            rows = self.db.execute(
                "SELECT note, source FROM latest WHERE month = ? ORDER BY merged DESC, "
                "number DESC LIMIT ? OFFSET ?",
                (month, count, at),
            )
        else:
            rows = self.db.execute(
                "SELECT l.note, l.source FROM tagged AS t JOIN latest AS l ON l.number = t.number "
                "WHERE t.tag = ? ORDER BY t.merged DESC, t.number DESC LIMIT ? OFFSET ?",
                (tag, count, at),
            )
        return [(DigestNote.model_validate_json(note), source) for note, source in rows]

    def source(self, number: int) -> str:
        row = self.db.execute("SELECT source FROM latest WHERE number = ?", (number,)).fetchone()
        return str(row[0])

    def appear(self, week: WeekNote) -> None:
        """A week's digests are in it."""
        self.db.executemany(
            "INSERT INTO appears (number, stem, fp) VALUES (?, ?, ?)",
            [(number, week.stem, fp) for number, _, fp in week.digests],
        )

    def weeks_of(self, number: int) -> list[str]:
        """The weeks a PR is in, in the order its repository's page lists them."""
        rows = self.db.execute("SELECT stem FROM appears WHERE number = ? ORDER BY seq", (number,))
        return [stem for (stem,) in rows]

    def holder(self, note: DigestNote) -> str | None:
        """The first week whose report holds this very digest (its JSON has it), if one does."""
        row = self.db.execute(
            "SELECT stem FROM appears WHERE number = ? AND fp = ? ORDER BY seq LIMIT 1",
            (note.number, note.fp),
        ).fetchone()
        return str(row[0]) if row else None

    def note(self, doc: dict[str, Any]) -> None:
        """A search entry, in the order the build met it."""
        self.db.execute("INSERT INTO docs (doc) VALUES (?)", (json.dumps(doc, ensure_ascii=False),))

    def docs(self) -> Iterator[dict[str, Any]]:
        rows = self.db.execute("SELECT doc FROM docs ORDER BY seq")
        return (json.loads(doc) for (doc,) in rows)

    def close(self) -> None:
        self.db.close()
