"""`prhub restore URL`: a store rebuilt from a published site by its manifest.json; a site of
default, other-timezone and window reports comes back whole, or nothing is kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.factories import REPO, assert_ok, cli_env, closed_port_url, prhub, site_manifest
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.pages import PagesStandIn

WEEKS = [
    ("--week", "31", "--year", "2026"),
    ("--week", "31", "--year", "2026", "--tz", "UTC"),  # 2026-W31.UTC
    ("--since", "2026-07-27", "--until", "2026-07-29"),  # a window of dates
]


def tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


@pytest.fixture
def published(env: dict[str, str | None], tmp_path: Path) -> Path:
    """A site of three reports of acme/rocket, the way `prhub site` builds it, its manifest."""
    for week in WEEKS:
        assert_ok(prhub(env, "weekly", *week))
    site = tmp_path / "published"
    assert_ok(prhub(env, "site", str(site), "--no-pdf"))
    site_manifest(site)
    return site


def held(site: Path, manifest: dict[str, Any]) -> int:
    """The digests the site's JSON holds, each once: in its weeks' files and in PRs' own."""
    keys = set()
    for f in manifest["files"]:
        data = json.loads((site / f["path"]).read_bytes())
        digests = data["digests"] if f["kind"] == "report" else [data]
        keys |= {d["meta"]["cache_key"] for d in digests}
    return len(keys)


def restore_into(store: Path, url: str, github: GitHubStandIn, llm: LLMStandIn) -> Any:
    return prhub(cli_env(github, llm, store), "restore", url)


def test_a_site_of_three_kinds_of_report_comes_back_whole(
    published: Path, tmp_path: Path, github: GitHubStandIn, llm: LLMStandIn
) -> None:
    manifest = site_manifest(published)
    assert manifest["reports"] == 3
    names = {f["path"] for f in manifest["files"] if f["kind"] == "report"}
    assert names == {
        f"{REPO}/2026-W31.json",
        f"{REPO}/2026-W31.UTC.json",
        f"{REPO}/2026-07-27_2026-07-29.json",
    }
    store = tmp_path / "again" / "store.db"
    with PagesStandIn(published) as pages:
        pages.script(r"/manifest\.json$", [(503, {}, b"busy")])  # tried again
        done = restore_into(store, pages.url, github, llm)
    assert_ok(done)
    assert manifest["held"] == held(published, manifest)  # every digest, not its files alone
    assert done.stderr.splitlines()[-1] == (
        f"prhub: restored {pages.url}: 3 reports and {manifest['held']} digests held, all "
        f"fetched and checked; imported {held(published, manifest)} digests and 3 weeks"
    )
    fetched = [r["path"].removeprefix("/rocket/") for r in pages.requests]
    assert set(fetched) == {"manifest.json", *(f["path"] for f in manifest["files"])}
    rebuilt = tmp_path / "rebuilt"
    again = cli_env(github, llm, store)
    assert_ok(prhub(again, "site", str(rebuilt), "--no-pdf"))
    site_manifest(rebuilt)
    before, after = tree(published), tree(rebuilt)
    assert after.keys() == before.keys()
    assert [p for p in before if before[p] != after[p]] == []  # byte for byte
    calls = len(llm.requests)
    assert_ok(prhub({**again, "PRHUB_REPO": REPO}, "weekly", *WEEKS[1]))
    assert len(llm.requests) == calls  # the restored week costs no LLM call


def test_nothing_published_yet_leaves_no_store(
    tmp_path: Path, github: GitHubStandIn, llm: LLMStandIn
) -> None:
    (tmp_path / "empty").mkdir()
    store = tmp_path / "store.db"
    with PagesStandIn(tmp_path / "empty") as pages:
        done = restore_into(store, pages.url + "/", github, llm)
    assert_ok(done)
    assert (
        done.stderr == f"prhub: nothing is published at {pages.url} yet: the store starts empty\n"
    )
    assert not store.exists()


def fails(done: Any, says: str, store: Path) -> None:
    assert done.exit_code == 22, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("prhub: error: ") and says in line, line
    assert not store.exists() and list(store.parent.glob(".store.db*")) == []


def rewrite(site: Path, change: Any) -> None:
    path = site / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("no manifest", "has a site but no manifest.json"),
        ("a listed file is gone", "answered HTTP 404, though manifest.json lists it"),
        ("a file changed", "its SHA-256 differs"),
        ("a count the list lacks", "says 4 reports but lists 3"),
        ("a path outside the site", "not a file of the site"),
        ("a report listed twice", "would hold 1 of the 3 reports"),
        ("not JSON", "is no manifest prhub can read"),
    ],
)
def test_a_restore_short_of_the_manifest_keeps_nothing(
    published: Path,
    tmp_path: Path,
    github: GitHubStandIn,
    llm: LLMStandIn,
    fault: str,
    says: str,
) -> None:
    reports = sorted(published.glob(f"{REPO}/*.json"))
    if fault == "no manifest":
        (published / "manifest.json").unlink()
    elif fault == "a listed file is gone":
        reports[0].unlink()
    elif fault == "a file changed":
        reports[0].write_bytes(reports[0].read_bytes().replace(b"}", b"} ", 1))
    elif fault == "a count the list lacks":
        rewrite(published, lambda m: m.update(reports=4))
    elif fault == "a path outside the site":
        rewrite(published, lambda m: m["files"][0].update(path="../../etc/passwd.json"))
    elif fault == "a report listed twice":

        def twice(m: dict[str, Any]) -> None:
            first = next(f for f in m["files"] if f["kind"] == "report")
            m["files"] = [f for f in m["files"] if f["kind"] != "report" or f is first]
            m["files"] += [first, first]  # three listed, one of them for the third

        rewrite(published, twice)
    else:
        (published / "manifest.json").write_text("<!doctype html>")
    store = tmp_path / "again" / "store.db"
    with PagesStandIn(published) as pages:
        done = restore_into(store, pages.url, github, llm)
    fails(done, says, store)


@pytest.mark.parametrize("fault", ["403", "refused", "always busy"])
def test_a_site_that_cannot_be_read_keeps_nothing(
    published: Path, tmp_path: Path, github: GitHubStandIn, llm: LLMStandIn, fault: str
) -> None:
    """Building on an empty store would publish a site without the weeks it could not read."""
    store = tmp_path / "again" / "store.db"
    with PagesStandIn(published) as pages:
        if fault == "403":
            pages.script(r"/manifest\.json$", [(403, {}, b"no access")])
        if fault == "always busy":
            pages.script(r"/manifest\.json$", [(503, {}, b"busy")] * 9)
        url = closed_port_url() + "/rocket" if fault == "refused" else pages.url
        done = restore_into(store, url, github, llm)
    says = {
        "403": f"{url}/manifest.json answered HTTP 403: rerun when it is read",
        "refused": f"cannot read {url}/manifest.json (ConnectError)",
        "always busy": f"{url}/manifest.json answered HTTP 503",
    }[fault]
    fails(done, says, store)
