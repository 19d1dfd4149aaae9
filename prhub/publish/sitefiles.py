"""A site folder's files as a build finds and copies them: what is a plain file and how big,
whether one holds other bytes, and a copy of the folder made of hard links."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

from prhub.errors import OutputError

__all__ = ["copy", "differs", "folder", "plain_file", "size"]


def folder(out: Path) -> Path:
    """The site's folder: through a link to one; a dangling link or a file is an error."""
    if out.is_symlink() and not out.exists():
        raise OutputError(
            f"cannot build the site in {out}: it is a link to {os.readlink(out)}, which does not "
            "exist; make that folder or remove the link"
        )
    if out.exists() and not out.is_dir():
        raise OutputError(f"cannot build the site in {out}: it is a file, not a folder")
    return Path(os.path.realpath(out))


def plain_file(path: Path | str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def size(path: Path) -> int:
    """A regular file's size; -1 for anything else."""
    try:
        found = path.lstat()
    except OSError:
        return -1
    return found.st_size if stat.S_ISREG(found.st_mode) else -1


def differs(path: Path, data: bytes) -> bool:
    """True when `path` holds something other than `data` (or is no regular file)."""
    try:
        return not plain_file(path) or path.read_bytes() != data
    except OSError:
        return True


def copy(root: Path, stage: Path) -> None:
    """`stage` as a copy of `root`: folders made, files hard-linked, links copied as links."""
    if os.path.lexists(stage):
        shutil.rmtree(stage)
    try:
        stage.mkdir()
        if not root.is_dir():
            return
        shutil.copymode(root, stage)
        for folder, dirs, names in os.walk(root):
            at = stage / os.path.relpath(folder, root)
            for name in [*dirs, *names]:
                source, target = Path(folder) / name, at / name
                mode = source.lstat().st_mode
                if stat.S_ISLNK(mode):
                    os.symlink(os.readlink(source), target)
                elif stat.S_ISDIR(mode):
                    target.mkdir()
                    shutil.copymode(source, target)
                elif stat.S_ISREG(mode):
                    _link(source, target)
                else:
                    raise OutputError(
                        f"cannot build the site in {root}: {source} is neither a file nor a "
                        "folder; move it away"
                    )
    except OSError as exc:
        raise OutputError(f"cannot copy {root} to build the site: {exc.strerror or exc}") from None


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(source, target)
