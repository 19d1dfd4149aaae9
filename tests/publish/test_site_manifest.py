"""manifest.json: every report (each time zone, each window of dates) and digest JSON file the
site holds, with its fingerprint, published at the root; a site of one repository is whole."""

from __future__ import annotations

import hashlib
import json
from contextlib import closing
from pathlib import Path

from prhub import __version__
from prhub.config import Settings
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import site
from prhub.publish.search import needed
from prhub.store.store import Store
from tests.factories import crawl, report, site_store


def build(store: Path, out: Path, names: list[str] | None = None) -> site.SiteResult:
    with closing(Store(store)) as s:
        return site.build(Settings(), s, out, names, False)


def test_the_manifest_lists_every_report_and_digest_file_with_its_fingerprint(tmp_path):
    out = tmp_path / "site"
    build(site_store(tmp_path / "store.db"), out)
    data = json.loads((out / "manifest.json").read_text())
    assert data["format"] == 1 and data["generator"] == f"prhub {__version__}"
    files = data["files"]
    assert [f["path"] for f in files] == sorted(f["path"] for f in files)
    reports = {f["path"] for f in files if f["kind"] == "report"}
    digests = {f["path"] for f in files if f["kind"] == "digest"}
    assert reports == {
        "acme/rocket/2026-W31.json",
        "acme/rocket/2026-W31.UTC.json",  # another time zone
        "acme/rocket/2026-07-29_2026-08-02.json",  # a window of dates
        "acme/rocket/2026-W32.json",  # a week without PRs
    }
    on_disk = {str(p.relative_to(out)) for p in (out / "acme" / "rocket").glob("*.json")}
    assert reports == on_disk
    assert digests == {
        str(p.relative_to(out)) for p in (out / "acme" / "rocket" / "pr").glob("*.json")
    }
    # A digest a week's JSON holds as it is has no file of its own: #120 alone is in no week.
    assert digests == {"acme/rocket/pr/120.json"}
    assert (data["reports"], data["digests"]) == (4, 1)
    held = {
        d.model_dump_json()
        for f in reports
        for d in WeeklyReport.model_validate_json((out / f).read_text()).digests
    }
    with closing(Store(tmp_path / "store.db")) as s:
        found = [
            *s.digests("acme/rocket"),
            *(d for r in s.reports("acme/rocket") for d in r.digests),
        ]
    assert {d.number for d in found} == {101, 102, 103, 104, 105, 106, 120}
    for d in found:
        own = out / "acme" / "rocket" / "pr" / f"{d.number}.json"
        assert d.model_dump_json() in held or PRDigest.model_validate_json(own.read_text()) == d
    for f in files:
        assert f["repo"] == "acme/rocket"
        assert f["sha256"] == hashlib.sha256((out / f["path"]).read_bytes()).hexdigest()
    assert set(f) == {"path", "kind", "repo", "sha256"}


def test_a_site_of_one_repository_holds_it_alone_and_whole(tmp_path):
    store = site_store(tmp_path / "store.db")
    other = report()
    other = other.model_copy(
        update={
            "facts": other.facts.model_copy(update={"repo": "other/tool"}),
            "digests": [
                d.model_copy(
                    update={"repo": "other/tool", "url": d.url.replace("acme/rocket", "other/tool")}
                )
                for d in other.digests
            ],
        }
    )
    with closing(Store(store)) as s:
        s.save_report(other)
    out = tmp_path / "site"
    result = build(store, out, ["acme/rocket"])
    assert result.repos == 1
    assert {p: bad for p, bad in crawl(out).items() if bad} == {}
    assert not (out / "other").exists()
    listed = json.loads((out / "manifest.json").read_text())["files"]
    assert {f["repo"] for f in listed} == {"acme/rocket"}
    home = (out / "index.html").read_text()
    assert "acme/rocket" in home and "other/tool" not in home
    for shard in (out / "search.index").rglob("*.js"):
        assert "other/tool" not in shard.read_text()
    # Every file a search loads is in the site.
    for query in ("采样", "rollout", "#101"):
        assert all((out / f).is_file() for f in needed(out, query))
