"""What a site is made of, read from the store one entry at a time. Each report and digest is
read once into a note (what the site's lists, feeds and search need of it), kept in the site's
record under the fingerprint of the entry's stored text: an entry that did not change is not
parsed again. A repository's digests are listed on disk (each PR's latest, by month and by tag),
and an entry itself is read again only when a page must be made of it: memory stays flat
however long a repository's history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar
from zoneinfo import ZoneInfo

from prhub.config import Settings
from prhub.digest.digest import retag
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import feed, search
from prhub.publish.formats import Format
from prhub.publish.manifest import digest as fingerprint
from prhub.publish.output import report_path
from prhub.publish.pages import week_row
from prhub.publish.siteindex import DigestNote, Entry, Lists, Memo, WeekNote
from prhub.store.store import Store

__all__ = ["Sources", "survey"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
M = TypeVar("M", PRDigest, WeeklyReport)


def _fp(d: PRDigest) -> str:
    return fingerprint(d.model_dump_json())


def _micros(moment: datetime) -> int:
    """A time as a number that sorts as the time does, whatever its offset."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


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
    lists.clear()
    for start, end, text in store.report_rows(name):
        key = fingerprint(f"week\n{salt}{text}")
        if (noted := memo.get(key)) is not None:
            note = WeekNote.model_validate_json(noted)
        elif (r := _load(WeeklyReport, text)) is not None:
            note = _week_note(r, start, end, name, settings)
            memo.put(key, note.model_dump_json())
        else:
            continue
        # Its digests and search entry wait on disk: what stays in memory is a line of a list.
        lists.week(note)
        weeks.append(note.model_copy(update={"doc": {}}))
    weeks.sort(key=lambda w: (w.first, w.last, w.tz), reverse=True)
    for key, text in store.digest_rows(name):
        memo_key = fingerprint(f"digest\n{salt}{text}")
        if (noted := memo.get(memo_key)) is not None:
            lists.add(DigestNote.model_validate_json(noted), f"d\t{key}")
        elif (d := _load(PRDigest, text)) is not None:
            made = _digest_note(d, name, settings)
            memo.put(memo_key, made.model_dump_json())
            lists.add(made, f"d\t{key}")
    for i, w in enumerate(weeks):
        for at, (number, made_at, fp) in enumerate(w.digests):
            lists.held(number, made_at, fp, f"r\t{w.start}\t{w.end}\t{at}")
        weeks[i] = w.model_copy(update={"digests": []})
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
