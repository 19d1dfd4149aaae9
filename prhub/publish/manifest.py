"""A site's files written into its folder, and the record of them (`.prhub-site` in it): a
rebuild replaces only files prhub wrote, removes the ones it no longer makes, leaves every
other file alone, and reuses a PDF whose page did not change."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from prhub.errors import OutputError
from prhub.publish.output import write
from prhub.text import plural

__all__ = ["RECORD", "Record", "Written", "digest", "read", "reused", "write_site"]

RECORD = ".prhub-site"  # a dotfile: hosts such as GitHub Pages do not publish it
log = logging.getLogger("prhub")


def digest(data: bytes | str) -> str:
    """A file's fingerprint: the SHA-256 of its bytes."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


@dataclass(frozen=True)
class Record:
    """What a build wrote: each file's fingerprint, and each PDF's page's."""

    files: Mapping[str, str] = field(default_factory=dict)  # path in the site -> fingerprint
    printed: Mapping[str, str] = field(default_factory=dict)  # a PDF's path -> its page's

    def text(self) -> str:
        data = {
            "files": dict(sorted(self.files.items())),
            "printed": dict(sorted(self.printed.items())),
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"


@dataclass
class Written:
    wrote: int = 0
    unchanged: int = 0
    removed: int = 0


def read(out: Path) -> Record:
    """The record of the last build in `out`; an empty one when there is none or it is not
    prhub's (then every file there counts as someone else's)."""
    try:
        data = json.loads((out / RECORD).read_bytes())
        files, printed = data["files"], data["printed"]
        if not all(isinstance(v, str) for v in [*files.values(), *printed.values()]):
            raise ValueError("not a record")
        # Only paths inside the site: a record edited by hand can send no removal outside it.
        return Record(
            {k: v for k, v in files.items() if _inside(k)},
            {k: v for k, v in printed.items() if _inside(k)},
        )
    except FileNotFoundError:
        return Record()
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning(
            "%s is no record prhub can read (%s): its files count as another's", out / RECORD, exc
        )
        return Record()


def _inside(path: object) -> bool:
    """Whether a recorded path names a file inside the site."""
    if not isinstance(path, str):
        return False
    named = PurePosixPath(path)
    return bool(named.parts) and not named.is_absolute() and ".." not in named.parts


def reused(out: Path, record: Record, path: str, page: str) -> bytes | None:
    """The PDF at `path` as the last build wrote it, when it was printed from this `page`."""
    if record.printed.get(path) != digest(page):
        return None
    try:
        data = (out / path).read_bytes()
    except OSError:
        return None
    return data if digest(data) == record.files.get(path) else None


def write_site(
    out: Path, files: Mapping[str, bytes], printed: Mapping[str, str], old: Record
) -> Written:
    """Writes `files` (paths in the site) into `out`, then removes what the last build wrote
    and this one does not make; a file prhub did not write is never replaced or removed."""
    if out.exists() and not out.is_dir():
        raise OutputError(f"cannot build the site in {out}: it is a file, not a folder")
    theirs = [p for p in sorted(files) if p not in old.files and _differs(out / p, files[p])]
    if theirs:
        more = f" (and {plural(len(theirs) - 1, 'other')})" if len(theirs) > 1 else ""
        raise OutputError(
            f"cannot build the site in {out}: {out / theirs[0]}{more} exists and prhub did not "
            "write it; build into an empty folder or move it away"
        )
    new = Record({p: digest(data) for p, data in files.items()}, dict(printed))
    # Claimed before they are written: a build stopped half-way still knows its files.
    _record(out, Record({**old.files, **new.files}, {**old.printed, **new.printed}))
    done = Written()
    for path, data in sorted(files.items()):
        if write(data, out / path):
            done.wrote += 1
        else:
            done.unchanged += 1
    for path in sorted(set(old.files) - set(files)):
        done.removed += _remove(out, path, old.files[path])
    _record(out, new)
    return done


def _differs(path: Path, data: bytes) -> bool:
    """True when `path` holds something other than `data` (or is no regular file)."""
    if not os.path.lexists(path):
        return False
    try:
        return path.is_symlink() or not path.is_file() or path.read_bytes() != data
    except OSError:
        return True


def _record(out: Path, record: Record) -> None:
    write(record.text(), out / RECORD)


def _remove(out: Path, path: str, fingerprint: str) -> int:
    """Removes a file the last build wrote, unless it changed since; then its empty folders."""
    target = out / path
    try:
        if (
            target.is_symlink()
            or not target.is_file()
            or digest(target.read_bytes()) != fingerprint
        ):
            log.warning(
                "kept %s: prhub no longer makes it, but it changed since prhub wrote it", target
            )
            return 0
        target.unlink()
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise OutputError(f"cannot remove {target}: {exc.strerror or exc}") from None
    folder = target.parent
    while folder != out and out in folder.parents:
        try:
            folder.rmdir()  # only an empty one
        except OSError:
            break
        folder = folder.parent
    return 1
