"""`prhub import` checks an imported file as the online path checks what it keeps: a file that
fails is refused and named, the command exits 20, and no week it refuses can break a site."""

from __future__ import annotations

import json
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from prhub.config import Settings
from prhub.model import PRDigest, WeeklyReport
from prhub.run import restore
from prhub.run.restore import import_dir
from prhub.store.store import Store
from prhub.text import plural
from tests.factories import digest, prhub, report

FUTURE = datetime(2099, 1, 1, tzinfo=UTC)


def changed(d: PRDigest, meta: dict[str, Any] | None = None, **fields: Any) -> PRDigest:
    return d.model_copy(update={**fields, "meta": d.meta.model_copy(update=meta or {})})


def week(**facts: Any) -> WeeklyReport:
    r = report()
    return r.model_copy(update={"facts": r.facts.model_copy(update=facts)})


def later(d: PRDigest) -> dict[str, Any]:
    """A digest's meta made a minute after it: it would replace the stored one."""
    return {"created_at": d.meta.created_at + timedelta(minutes=1)}


REAL = digest()
BAD_DIGESTS: dict[str, tuple[PRDigest, str]] = {
    "dated 2099, linking to another host": (
        changed(REAL, {"created_at": FUTURE}, url="https://evil.example/acme/rocket/pull/101"),
        "links to 'https://evil.example/acme/rocket/pull/101', not to "
        "https://github.com/acme/rocket/pull/101 on the GitHub configured (--github-url)",
    ),
    "dated 2099": (
        changed(REAL, {"created_at": FUTURE}),
        "the digest of #101: meta.created_at is in the future (2099-01-01T00:00:00+00:00)",
    ),
    "merged in 2099": (
        changed(REAL, later(REAL), merged_at=FUTURE),
        "the digest of #101: merged_at is in the future",
    ),
    "linking to another PR": (
        changed(REAL, later(REAL), url="https://github.com/acme/rocket/pull/7"),
        "links to 'https://github.com/acme/rocket/pull/7'",
    ),
    "a javascript: link": (
        changed(REAL, later(REAL), url="javascript:alert(1)"),
        "links to 'javascript:alert(1)'",
    ),
    "of a repository named ../": (
        changed(REAL, later(REAL), repo="../evil"),
        "the digest of #101: repo: '../evil' is no repository's owner/name",
    ),
    "a text longer than a reply": (
        changed(REAL, later(REAL), original_title="长" * 70_000),
        "a text longer than one reply can hold (64,000 characters) at original_title",
    ),
}
BAD_WEEKS: dict[str, tuple[WeeklyReport, str]] = {
    "a time zone Mars/Olympus": (week(tz="Mars/Olympus"), "facts.tz: unknown time zone"),
    "a time zone ../x": (week(tz="../../etc"), "facts.tz: unknown time zone '../../etc'"),
    "of a repository named ../": (
        week(repo="acme/.."),
        "facts.repo: 'acme/..' is no repository's owner/name",
    ),
    "starting after it ends": (
        week(end=datetime(2026, 7, 20, tzinfo=UTC)),
        "facts: the window starts (2026-07-27 00:00:00+08:00) after it ends",
    ),
    "starting in 2099": (
        week(start=FUTURE, end=FUTURE + timedelta(days=7)),
        "facts.start is in the future",
    ),
    "holding another repository's digests": (
        week(repo="other/rocket"),
        "the week of other/rocket holds digests of acme/rocket",
    ),
    "holding a digest of no PR of its window": (
        week(prs=[101, 102, 103]),
        "the week holds a digest of #104, which facts.prs does not list",
    ),
    "a week 60": (week(week=60), "facts: no ISO week 2026-W60"),
    "a discussion on another host": (
        report().model_copy(
            update={
                "meta": report().meta.model_copy(
                    update={"discussion_url": "https://evil.example/acme/rocket/discussions/1"}
                )
            }
        ),
        "meta.discussion_url is no discussion on https://github.com",
    ),
}


def written(folder: Path, name: str, item: PRDigest | WeeklyReport) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(item.model_dump_json(indent=2))
    return path


def stored(settings: Settings) -> tuple[list[PRDigest], list[WeeklyReport]]:
    with closing(Store(settings.store)) as store:
        names = store.repos()
        return (
            [d for n in names for d in store.digests(n)],
            [r for n in names for r in store.reports(n)],
        )


@pytest.fixture
def on_store(tmp_path: Path) -> Settings:
    return Settings(store=tmp_path / "store.db", github_url="https://api.github.com")


@pytest.mark.parametrize("case", BAD_DIGESTS)
def test_a_digest_the_online_path_would_not_make_is_refused_and_the_real_one_kept(
    tmp_path, on_store, case
):
    folder = tmp_path / "in"
    written(folder, "a/101.json", REAL)
    import_dir(folder, on_store)
    bad, says = BAD_DIGESTS[case]
    path = written(folder, "b/101.json", bad)
    done = import_dir(folder, on_store)
    assert done.skipped == 1 and len(done.problems) == 1
    assert done.problems[0].startswith(f"{path}: ") and says in done.problems[0]
    assert done.refused() is not None and done.refused().exit_code == 20
    [kept], _ = stored(on_store)
    assert kept == REAL


@pytest.mark.parametrize("case", BAD_WEEKS)
def test_a_week_the_online_path_would_not_make_is_refused(tmp_path, on_store, case):
    bad, says = BAD_WEEKS[case]
    path = written(tmp_path / "in", "w.json", bad)
    done = import_dir(tmp_path / "in", on_store)
    assert done.problems == [f"{path}: {says}"] or (
        len(done.problems) == 1 and says in done.problems[0]
    )
    assert stored(on_store) == ([], [])


def test_a_file_bigger_than_prhub_writes_is_refused_unread(tmp_path, on_store, monkeypatch):
    path = written(tmp_path / "in", "w.json", report())
    monkeypatch.setattr(restore, "MAX_FILE", path.stat().st_size - 1)
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} was read"))
    done = import_dir(tmp_path / "in", on_store)
    assert done.problems == [
        f"{path}: {path.stat().st_size:,} bytes, more than any file prhub writes "
        f"({path.stat().st_size - 1:,})"
    ]


def test_a_pr_link_of_github_enterprise_is_on_its_own_host(tmp_path):
    enterprise = Settings(store=tmp_path / "s.db", github_url="https://ghe.example.com/api/v3")
    theirs = changed(REAL, url="https://ghe.example.com/acme/rocket/pull/101")
    written(tmp_path / "in", "101.json", theirs)
    written(tmp_path / "in", "x/101.json", changed(REAL, later(REAL)))  # github.com's
    done = import_dir(tmp_path / "in", enterprise)
    assert done.digests == 1 and len(done.problems) == 1
    assert "not to https://ghe.example.com/acme/rocket/pull/101" in done.problems[0]


def test_import_exits_20_naming_each_refused_file_and_a_site_builds_from_the_rest(
    github, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "in"
    written(folder, "good/w31.json", report())
    refused = [
        written(folder, f"bad/{i}.json", item)
        for i, (item, _) in enumerate([*BAD_DIGESTS.values(), *BAD_WEEKS.values()])
    ]
    env = {"PRHUB_STORE": str(tmp_path / "s.db"), "GITHUB_API_URL": github.url}
    result = prhub(env, "import", str(folder))
    assert result.exit_code == 20, result.stderr
    lines = result.stderr.splitlines()
    assert [": ".join(line.split(": ")[:2]) for line in lines[: len(refused)]] == [
        f"prhub: refused {p}" for p in sorted(refused)
    ]
    keys = len({d.meta.cache_key for d in report().digests})  # the fixture's digests share keys
    assert lines[-2] == (
        f"prhub: imported {plural(keys, 'digest')} and 1 week from {folder} "
        f"({len(refused)} files refused)"
    )
    assert lines[-1].startswith(f"prhub: error: {len(refused)} files of {folder} refused ")
    site = prhub(env, "site", str(tmp_path / "site"), "--no-pdf")
    assert site.exit_code == 0, site.stderr
    page = json.loads((tmp_path / "site" / "acme" / "rocket" / "2026-W31.json").read_text())
    assert page["facts"]["tz"] == "Asia/Shanghai"
    assert "evil.example" not in "".join(p.read_text() for p in (tmp_path / "site").rglob("*.html"))
