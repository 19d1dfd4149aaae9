"""A site built from the store an entry at a time: an unchanged store is not parsed again, a
long history is not held in memory, one copy of each digest's JSON is published, and what a
build keeps beside the site (the memo) or in it (the record) survives damage and old formats."""

from __future__ import annotations

import gc
import json
import sqlite3
import weakref
from collections.abc import Callable
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest

from prhub.config import Settings
from prhub.publish import pages, site, sitedata, sitelists
from prhub.publish.manifest import RECORD
from prhub.store.store import Store
from tests.factories import crawl, numbered, report, site_store

ROCKET = Path("acme") / "rocket"


def build(store: Path, out: Path) -> site.SiteResult:
    with closing(Store(store)) as s:
        return site.build(Settings(), s, out, None, False)


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stored entries a build parses, by kind."""
    seen: list[str] = []
    real = sitedata._load

    def load(model: type, text: str) -> object:
        seen.append(model.__name__)
        return real(model, text)

    monkeypatch.setattr(sitedata, "_load", load)
    return seen


def test_an_unchanged_store_is_not_parsed_again_and_a_new_digest_alone_is(tmp_path, parsed):
    store = site_store(tmp_path / "store.db")
    out = tmp_path / "site"
    build(store, out)
    assert sorted(set(parsed)) == ["PRDigest", "WeeklyReport"]
    parsed.clear()
    again = build(store, out)
    assert parsed == [] and again.wrote == 0
    with closing(Store(store)) as s:
        s.save_digest(numbered(150, title="新合入的改动，修复采样"))
    grown = build(store, out)
    assert parsed == ["PRDigest"] and 0 < grown.wrote < 20
    assert (out / ROCKET / "pr" / "150.html").is_file()


def deep_store(path: Path, weeks: int) -> Path:
    """acme/rocket with `weeks` weekly reports of ten digests each, one after another."""
    r = report()
    with closing(Store(path)) as s:
        for w in range(weeks):
            shift = timedelta(weeks=w)
            digests = [
                numbered(
                    1000 + 10 * w + i, r.digests[0].merged_at + shift, title=f"第 {w} 周的改动"
                )
                for i in range(10)
            ]
            for d in digests:
                s.save_digest(d)
            f = r.facts
            facts = f.model_copy(
                update={
                    "week": (f.start + shift).isocalendar()[1],
                    "year": (f.start + shift).isocalendar()[0],
                    "start": f.start + shift,
                    "end": f.end + shift,
                    "prs": [d.number for d in digests],
                    "pr_count": 10,
                    "key_prs": [],
                }
            )
            s.save_report(r.model_copy(update={"facts": facts, "digests": digests}))
    return path


def most_held(store: Path, out: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The most reports and digests a build holds at once, read from the store, as a page is
    made (where it holds the most)."""
    held: list[weakref.ref[object]] = []
    most = 0

    def tracked(real: Callable[..., object]) -> Callable[..., object]:
        def read(*args: object, **kwargs: object) -> object:
            found = real(*args, **kwargs)
            if found is not None:
                held.append(weakref.ref(found))
            return found

        return read

    def page(self: pages.Pages, *args: object, **kwargs: object) -> str:
        nonlocal most
        held[:] = [r for r in held if r() is not None]
        if len(held) > most:
            gc.collect(1)  # what the last pages left in cycles (jinja contexts) is nobody's
            held[:] = [r for r in held if r() is not None]
            most = max(most, len(held))
        return real_page(self, *args, **kwargs)

    real_page = pages.Pages._page
    with monkeypatch.context() as patched:
        patched.setattr(sitedata, "_load", tracked(sitedata._load))
        patched.setattr(sitedata.Sources, "digest", tracked(sitedata.Sources.digest))
        patched.setattr(sitedata.Sources, "_window", tracked(sitedata.Sources._window))
        patched.setattr(pages.Pages, "_page", page)
        build(store, out)
    return most


def test_a_long_history_is_read_an_entry_at_a_time_not_held(tmp_path, monkeypatch):
    monkeypatch.setattr(sitelists, "PAGE", 5)  # the lists' pages as small as the stores
    short = most_held(deep_store(tmp_path / "short.db", 3), tmp_path / "short", monkeypatch)
    long = most_held(deep_store(tmp_path / "long.db", 24), tmp_path / "long", monkeypatch)
    # Eight times the history, and no more held at once: the newest ten digests the
    # repository's page shows (a list's page holds fewer), a report or two.
    assert long <= short <= 15, (short, long)
    assert {p: bad for p, bad in crawl(tmp_path / "long").items() if bad} == {}


def test_a_digest_made_again_after_its_week_has_a_json_of_its_own(tmp_path):
    store = site_store(tmp_path / "store.db")
    newer = numbered(101, title="重新生成的导读，修复采样")
    newer = newer.model_copy(
        update={
            "meta": newer.meta.model_copy(
                update={"created_at": newer.meta.created_at + timedelta(days=30)}
            )
        }
    )
    with closing(Store(store)) as s:
        s.save_digest(newer)
    out = tmp_path / "site"
    build(store, out)
    own = out / ROCKET / "pr" / "101.json"
    assert json.loads(own.read_text())["content"]["title"] == "重新生成的导读，修复采样"
    page = (out / ROCKET / "pr" / "101.html").read_text()
    assert '<a href="101.json">JSON</a>' in page and "重新生成的导读" in page
    # #102 is held as it is by its week's JSON: no file of its own, its page links the week's.
    assert not (out / ROCKET / "pr" / "102.json").exists()
    assert (
        '<a href="../2026-W31.json">JSON（周报中）</a>'
        in (out / ROCKET / "pr" / "102.html").read_text()
    )
    listed = json.loads((out / "manifest.json").read_text())["files"]
    assert {f["path"] for f in listed if f["kind"] == "digest"} == {
        "acme/rocket/pr/101.json",
        "acme/rocket/pr/120.json",
    }


def test_a_record_an_earlier_prhub_wrote_in_json_is_read_and_written_anew(tmp_path):
    store = site_store(tmp_path / "store.db")
    out = tmp_path / "site"
    build(store, out)
    before = files_of(out)
    with closing(sqlite3.connect(out / RECORD)) as db:
        rows = db.execute("SELECT path, sha, inputs FROM files").fetchall()
    legacy = {"files": {p: sha for p, sha, _ in rows}, "inputs": {p: i for p, _, i in rows}}
    (out / RECORD).write_text(json.dumps(legacy))
    again = build(store, out)
    assert again.wrote == 0 and again.removed == 0
    assert (out / RECORD).read_bytes().startswith(b"SQLite format 3\x00")
    del before[RECORD]
    after = files_of(out)
    del after[RECORD]
    assert after == before


def test_a_damaged_memo_costs_only_time(tmp_path, parsed):
    store = site_store(tmp_path / "store.db")
    out = tmp_path / "site"
    build(store, out)
    memo = tmp_path / ".site.prhub-memo"
    assert memo.is_file()
    memo.write_bytes(b"not a database" * 100)
    before = files_of(out)
    parsed.clear()
    assert build(store, out).wrote == 0
    assert parsed and files_of(out) == before


def test_a_repositorys_page_lists_a_year_of_weeks_and_the_older_by_year(tmp_path, monkeypatch):
    from prhub.publish import siteparts

    monkeypatch.setattr(siteparts, "RECENT", 2)
    store = deep_store(tmp_path / "store.db", 5)
    out = tmp_path / "site"
    build(store, out)
    page = (out / ROCKET / "index.html").read_text()
    whole = page.split('<ol class="weeks">')[1].split("</ol>")[0]
    assert whole.count("<li>") == 2
    archive = page.split('<ul class="archive">')[1].split("</ul>")[0]
    assert '<span class="meta">2026</span> <a href="2026-W33.html">W33</a>' in archive
    assert archive.count("<a ") == 3
    assert {p: bad for p, bad in crawl(out).items() if bad} == {}
    assert pages.digest_page(1000) == "pr/1000.html"
