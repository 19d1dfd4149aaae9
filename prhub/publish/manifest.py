"""What a site holds: the record of what a build wrote (`.prhub-site`, a dotfile no host
publishes: a SQLite file of each file's fingerprint, size and its inputs'), and the published
manifest.json, the list of every report and digest JSON file a restore from the site reads.

A build reads the last build's record from the site and writes its own beside it, on disk, so
its memory does not grow with the site: the record is swapped in with the site."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

__all__ = ["CACHE", "MANIFEST", "RECORD", "Kept", "Record", "digest"]

RECORD = ".prhub-site"  # a dotfile: hosts such as GitHub Pages do not publish it
MANIFEST = "manifest.json"  # published: what a restore from the site reads
_SQLITE = b"SQLite format 3\x00"
# Each of the site's own databases keeps a small cache: a build's memory stays the same however
# large they grow (their pages are read from disk as they are needed).
CACHE = "PRAGMA cache_size = -256; PRAGMA temp_store = FILE;"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS {at}files (
    path TEXT PRIMARY KEY, sha TEXT NOT NULL, inputs TEXT NOT NULL, size INTEGER NOT NULL,
    kind TEXT NOT NULL DEFAULT '', repo TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
"""
log = logging.getLogger("prhub")


def digest(data: bytes | str) -> str:
    """A file's fingerprint: the SHA-256 of its bytes."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


class Kept(NamedTuple):
    """A file as the last build recorded it."""

    sha: str
    inputs: str
    size: int


class Record:
    """The last build's record (read only) and this build's (written at `fresh`, then moved
    into the site by `close`)."""

    def __init__(self, site: Path, fresh: Path) -> None:
        self.fresh = fresh
        fresh.unlink(missing_ok=True)
        self.db = sqlite3.connect(fresh.resolve().as_uri(), uri=True, isolation_level=None)
        self.db.executescript(
            f"PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; {CACHE}" + _SCHEMA.format(at="")
        )
        found = _last(site / RECORD)
        if isinstance(found, str):
            self.db.execute("ATTACH DATABASE ? AS old", (found,))
            self.db.execute("PRAGMA old.cache_size = -256")
        else:  # none, or the files of a record of JSON: a private database on disk
            self.db.execute("ATTACH DATABASE '' AS old")
            self.db.executescript(_SCHEMA.format(at="old."))
            self.db.executemany("INSERT INTO old.files VALUES (?, ?, ?, ?, '', '')", found)
        self.db.execute("BEGIN")

    def old(self, path: str) -> Kept | None:
        """`path` as the last build recorded it."""
        if not _inside(path):
            return None
        row = self.db.execute(
            "SELECT sha, inputs, size FROM old.files WHERE path = ?", (path,)
        ).fetchone()
        return Kept(*row) if row else None

    def old_paths(self, prefix: str) -> list[str]:
        """The last build's files under `prefix`."""
        rows = self.db.execute(
            "SELECT path FROM old.files WHERE substr(path, 1, ?) = ?", (len(prefix), prefix)
        )
        return [row[0] for row in rows]

    def add(self, path: str, sha: str, inputs: str, size: int, kind: str, repo: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (path, sha, inputs, size, kind, repo),
        )

    def sha(self, path: str) -> str | None:
        """The fingerprint this build gave `path`."""
        row = self.db.execute("SELECT sha FROM files WHERE path = ?", (path,)).fetchone()
        return str(row[0]) if row else None

    def gone(self) -> Iterator[str]:
        """The last build's files this build did not make, by path."""
        rows = self.db.execute(
            "SELECT path FROM old.files WHERE path NOT IN (SELECT path FROM files) ORDER BY path"
        ).fetchall()
        return (row[0] for row in rows if _inside(row[0]))

    def size(self) -> int:
        return int(self.db.execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()[0])

    def same(self) -> bool:
        """Whether this build's record says what the last one's did."""
        differ = """SELECT EXISTS (SELECT * FROM files EXCEPT SELECT * FROM old.files)
            OR EXISTS (SELECT * FROM old.files EXCEPT SELECT * FROM files)"""
        return not self.db.execute(differ).fetchone()[0]

    def manifest(self, held: int) -> str:
        """The site's manifest: every report and digest JSON file it holds, sorted by path,
        and `held`, the PRs' digests it holds in all (in its weeks' JSON or on their own)."""
        from prhub import __version__

        counts = self.db.execute(
            "SELECT coalesce(sum(kind = 'report'), 0), coalesce(sum(kind = 'digest'), 0) "
            "FROM files WHERE kind != '' AND path != ?",
            (MANIFEST,),
        ).fetchone()
        rows = self.db.execute(
            "SELECT path, kind, repo, sha FROM files WHERE kind != '' ORDER BY path"
        )
        data = {
            "format": 1,
            "generator": f"prhub {__version__}",
            "reports": counts[0],
            "digests": counts[1],
            "held": held,
            "files": [{"path": p, "kind": k, "repo": r, "sha256": s} for p, k, r, s in rows],
        }
        return json.dumps(data, indent=1, ensure_ascii=False) + "\n"

    def close(self, keep: bool) -> None:
        """Ends the build's record: written, to be moved into the site, or dropped."""
        if keep:
            self.db.execute("COMMIT")
        self.db.close()
        if not keep:
            self.fresh.unlink(missing_ok=True)


def _last(path: Path) -> str | list[tuple[str, str, str, int]]:
    """The last build's record: the address of the site's own, to read only; the files of a
    record of the JSON an earlier prhub wrote; none when there is none or it is not prhub's
    (then every file in the site counts as another's)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(len(_SQLITE)) != _SQLITE:
                return _legacy(path)
        address = f"{path.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(address, uri=True)) as check:
            check.execute("SELECT path, sha, inputs, size, kind, repo FROM files LIMIT 1")
        return address
    except FileNotFoundError:
        return []
    except (OSError, sqlite3.Error, ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning("%s is no record prhub can read (%s): its files count as another's", path, exc)
        return []


def _legacy(path: Path) -> list[tuple[str, str, str, int]]:
    """The files of a record of JSON, as an earlier prhub wrote it."""
    data = json.loads(path.read_bytes())
    files, inputs = data["files"], data.get("inputs", {})
    if not all(isinstance(v, str) for v in [*files.values(), *inputs.values()]):
        raise ValueError("not a record")
    return [
        (name, sha, inputs.get(name, ""), _size(path.parent / name))
        for name, sha in files.items()
        if _inside(name)
    ]


def _inside(path: object) -> bool:
    """Whether a recorded path names a file inside the site: a record edited by hand can send
    no removal outside it."""
    if not isinstance(path, str) or not path or path.startswith("/"):
        return False
    return ".." not in path.split("/")


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0
