"""A site is never half-written: a build killed at any write (in process, and once by a real
SIGKILL) leaves the last site whole; one build at a time per folder; nothing written or removed
through a link; a build that removes published weeks says so; a dangling link is named."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from prhub.config import Settings
from prhub.errors import OutputError
from prhub.publish import site, swap
from prhub.publish.manifest import RECORD, digest
from prhub.publish.swap import Site
from prhub.store.store import Store
from tests.factories import ROOT, assert_fails, cli_env, crawl, prhub, site_store
from tests.factories import digest as fixture_digest


class Killed(BaseException):
    """The build's process dying at a write: nothing after it runs."""


def build(store: Path, out: Path) -> site.SiteResult:
    with closing(Store(store)) as s:
        return site.build(Settings(), s, out, None, False)


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def broken(out: Path) -> dict[Path, list[str]]:
    return {p: bad for p, bad in crawl(out).items() if bad}


def grow(store: Path) -> None:
    """A new digest and a week gone: the next build writes, rewrites and removes pages."""
    with closing(Store(store)) as s:
        d = fixture_digest(title="新的采样改动，修复温度为零")
        s.save_digest(
            d.model_copy(
                update={
                    "number": 130,
                    "url": "https://github.com/acme/rocket/pull/130",
                    "meta": d.meta.model_copy(update={"cache_key": "new-130"}),
                }
            )
        )
    with closing(sqlite3.connect(store)) as db, db:
        db.execute('DELETE FROM reports WHERE data LIKE \'%"tz":"UTC"%\'')


@pytest.fixture
def two(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes], dict[str, bytes]]:
    """A store, the site of its first state and the files of its second state's site."""
    store = site_store(tmp_path / "store.db")
    first = tmp_path / "first"
    build(store, first)
    grow(store)
    second = tmp_path / "second"
    shutil.copytree(first, second)
    build(store, second)
    return store, first, files_of(first), files_of(second)


def test_a_build_killed_at_every_tenth_write_leaves_a_whole_site(two, tmp_path, monkeypatch):
    store, first, before, after = two
    real = swap._write
    writes = 0

    def counted(path: Path, data: bytes) -> None:
        nonlocal writes
        writes += 1
        real(path, data)

    monkeypatch.setattr(swap, "_write", counted)
    probe = tmp_path / "probe"
    shutil.copytree(first, probe)
    build(store, probe)
    total = writes
    assert total >= 15
    for at in range(1, total + 1, 10):
        out = tmp_path / f"killed-{at}"
        shutil.copytree(first, out)
        seen = 0

        def dying(path: Path, data: bytes, at: int = at) -> None:
            nonlocal seen
            seen += 1
            if seen == at:
                raise Killed
            real(path, data)

        monkeypatch.setattr(swap, "_write", dying)
        with pytest.raises(Killed):
            build(store, out)
        assert broken(out) == {}, at
        assert files_of(out) == before, at  # the last site, untouched
        monkeypatch.setattr(swap, "_write", real)
        build(store, out)
        assert files_of(out) == after, at


KILLER = """
import os, signal, sys
from contextlib import closing
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from prhub.config import Settings
from prhub.publish import site, swap
from prhub.store.store import Store
real, seen = swap._write, [0]
def dying(path, data):
    seen[0] += 1
    if seen[0] == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data)
swap._write = dying
with closing(Store(Path(sys.argv[2]))) as s:
    site.build(Settings(), s, Path(sys.argv[3]), None, False)
"""


def test_a_sigkilled_build_leaves_the_last_site_and_the_next_build_clears_its_copy(two, tmp_path):
    store, first, before, after = two
    out = tmp_path / "site"
    shutil.copytree(first, out)
    env = {**os.environ, **{k: v for k, v in cli_env("", "", store).items() if v is not None}}
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(ROOT), str(store), str(out), "15"],
        env=env,
        capture_output=True,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    copy = tmp_path / ".site.prhub-build"
    assert copy.is_dir()  # what the killed build left
    assert files_of(out) == before and broken(out) == {}
    build(store, out)
    assert files_of(out) == after and not copy.exists()


def test_a_second_build_of_a_folder_being_built_stops_with_one_line(two, tmp_path):
    store, first, before, _ = two
    with Site(first):
        result = prhub(cli_env("", "", store), "site", str(first), "--no-pdf")
    assert_fails(result, 14, "another prhub site is building it now")
    assert files_of(first) == before


def test_nothing_is_written_or_removed_through_a_linked_folder(tmp_path):
    store = site_store(tmp_path / "store.db")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "rocket").mkdir(parents=True)
    precious = elsewhere / "rocket" / "index.html"
    precious.write_text("不是站点的文件\n")
    out = tmp_path / "site"
    out.mkdir()
    (out / "acme").symlink_to(elsewhere)
    with pytest.raises(OutputError, match=r"acme is a link, and prhub writes and removes nothing"):
        build(store, out)
    assert [p.name for p in elsewhere.rglob("*")] == ["rocket", "index.html"]
    # A record naming a file behind the link, as if prhub had written it: never removed.
    (out / RECORD).write_text(
        json.dumps({"files": {"acme/rocket/index.html": digest(precious.read_bytes())}})
    )
    with pytest.raises(OutputError, match="is a link"):
        build(store, out)
    assert precious.read_text() == "不是站点的文件\n"
    assert sorted(p.name for p in out.iterdir()) == [RECORD, "acme"]


def test_a_build_that_removes_published_weeks_names_them(two, tmp_path, caplog):
    store, first, _, _ = two
    out = tmp_path / "third"
    shutil.copytree(first, out)
    result = build(store, out)
    assert result.removed_weeks == ("acme/rocket/2026-W31.UTC",)
    assert "removed 1 published week the store no longer holds: acme/rocket/2026-W31.UTC" in (
        caplog.text
    )
    assert not (out / "acme" / "rocket" / "2026-W31.UTC.html").exists()
    assert "2026-W31.UTC" not in (out / "acme" / "rocket" / "index.html").read_text()


def test_a_dangling_link_as_the_folder_is_named_as_such(tmp_path):
    store = site_store(tmp_path / "store.db")
    out = tmp_path / "site"
    out.symlink_to(tmp_path / "gone")
    result = prhub(cli_env("", "", store), "site", str(out), "--no-pdf")
    assert_fails(result, 14, f"it is a link to {tmp_path / 'gone'}, which does not exist")
    assert "File exists" not in result.stderr


def test_one_durable_sync_per_build_not_one_per_file(two, tmp_path, monkeypatch):
    store, first, _, _ = two
    synced, fsynced = [], []
    real_sync, real_fsync = swap._sync, os.fsync
    monkeypatch.setattr(swap, "_sync", lambda f: (synced.append(f), real_sync(f)))
    monkeypatch.setattr(os, "fsync", lambda fd: (fsynced.append(fd), real_fsync(fd)))
    result = build(store, tmp_path / "fresh")
    assert result.wrote > 40 and len(synced) == 1 and len(fsynced) <= 1


def test_a_mount_point_is_written_in_place_and_says_so(two, tmp_path, monkeypatch, caplog):
    store, first, _, after = two
    out = tmp_path / "mounted"
    shutil.copytree(first, out)
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out)
    build(store, out)
    assert "is a mount point: the site is written in place" in caplog.text
    assert files_of(out) == after and not (tmp_path / ".mounted.prhub-build").exists()
