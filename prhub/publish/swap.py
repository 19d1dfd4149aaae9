"""A site's files written into its folder, whole or not at all. A build holds a lock beside the
folder, writes what changed into a copy of it made of hard links (a sibling folder), and swaps
that copy in: a build stopped at any point leaves the last site as it was. A rebuild replaces
only files prhub wrote, removes the ones it no longer makes, leaves every other file alone, and
writes nothing through a link."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import shutil
from pathlib import Path
from types import TracebackType

from prhub.errors import OutputError
from prhub.publish.manifest import RECORD, Record, digest
from prhub.publish.sitefiles import copy, differs, folder, plain_file, size

__all__ = ["Site"]

log = logging.getLogger("prhub")


class Site:
    """One build of the site in `out`: `kept` and `put` each file, then `finish`."""

    def __init__(self, out: Path) -> None:
        self.shown = out
        self.root = folder(out)
        self.wrote = self.unchanged = self.removed = 0
        self.removed_paths: list[str] = []
        self.size = 0  # the bytes of the files this build made, once finished
        self._stage: Path | None = None
        self._checked: set[str] = set()
        self._lock = -1
        self.record: Record | None = None

    def __enter__(self) -> Site:
        lock = self.root.parent / f".{self.root.name}.prhub-lock"
        try:
            self.root.parent.mkdir(parents=True, exist_ok=True)
            self._lock = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(
                f"cannot write the site in {self.shown}: {exc.strerror or exc}"
            ) from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise OutputError(
                f"cannot build the site in {self.shown}: another prhub site is building it now; "
                "run again when it has finished"
            ) from None
        try:
            self._recover()
            self.record = Record(self.root, self._beside("record"))
        except BaseException:
            os.close(self._lock)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self.record is not None:  # a failed build's record
                self.record.close(keep=False)
            if self._stage is not None and self._stage != self.root:
                shutil.rmtree(self._stage, ignore_errors=True)  # a failed build's copy
        finally:
            os.close(self._lock)

    @property
    def books(self) -> Record:
        """This build's record, open while the site is built."""
        if self.record is None:
            raise RuntimeError("the site's record is closed")
        return self.record

    def _recover(self) -> None:
        """What a killed build left beside the site: its copy goes; a site it had moved aside
        (only where folders cannot be swapped in one step) comes back."""
        aside = self._beside("old")
        if not os.path.lexists(self.root) and aside.is_dir():
            os.rename(aside, self.root)
        for left in (self._beside("build"), aside):
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left)
        self._beside("record").unlink(missing_ok=True)

    def _beside(self, what: str) -> Path:
        return self.root.parent / f".{self.root.name}.prhub-{what}"

    def kept(self, path: str, key: str, kind: str = "", repo: str = "") -> str | None:
        """The file's fingerprint, and the file kept, when the last build made `path` from the
        same inputs and it is still there as written; else None."""
        old = self.books.old(path)
        if old is None or old.inputs != key:
            return None
        if size(self.root / path) != old.size or not self._through_folders(path):
            return None
        self.books.add(path, old.sha, key, old.size, kind, repo)
        self.unchanged += 1
        return old.sha

    def kept_all(self, paths: list[str], key: str) -> bool:
        """`kept` for files made together: all of them, or none."""
        olds = [self.books.old(p) for p in paths]
        if not all(
            o and o.inputs == key and size(self.root / p) == o.size
            for p, o in zip(paths, olds, strict=True)
        ):
            return False
        return all([self.kept(p, key) is not None for p in paths])

    def put(self, path: str, key: str, data: bytes | str, kind: str = "", repo: str = "") -> str:
        """Writes `data` at `path` (unless it is there already) and returns its fingerprint."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        made = digest(raw)
        self.books.add(path, made, key, len(raw), kind, repo)
        self._folders(path)
        here = self.root / path
        old = self.books.old(path)
        if old is not None and old.sha == made and size(here) == len(raw):
            self.unchanged += 1
            return made
        if old is None and os.path.lexists(here) and differs(here, raw):
            raise OutputError(
                f"cannot build the site in {self.shown}: {self.shown / path} exists and prhub did "
                "not write it; build into an empty folder or move it away"
            )
        if old is None and plain_file(here):  # the same bytes, not yet recorded
            self.unchanged += 1
            return made
        stage = self._staged()
        if stage == self.root:  # in place: each file replaced at once, never half-written
            _replace(stage / path, raw, sync=False)
        else:
            _write(stage / path, raw)
        self.wrote += 1
        return made

    def finish(self) -> None:
        """Removes what the last build wrote and this one did not, records the build, and
        swaps the new site in: one durable sync for the whole build."""
        books = self.books
        for path in books.gone():
            self._folders(path)
            if self._remove(path):
                self.removed_paths.append(path)
        self.size = books.size()
        changed = self._stage is not None or not books.same()
        self.record = None
        books.close(keep=changed)
        if not changed:
            return
        if self._stage is None:  # no page changed: the record alone, in place, on disk
            fd = os.open(books.fresh, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            _place(books.fresh, self.root / RECORD)
            return
        stage = self._staged()
        _place(books.fresh, stage / RECORD)
        _sync(stage)
        self._swap()

    def _remove(self, path: str) -> bool:
        """Removes a file the last build wrote, unless it changed since; then its empty folders."""
        here = self.root / path
        try:
            if not os.path.lexists(here):
                return False
            old = self.books.old(path)
            if not plain_file(here) or old is None or digest(here.read_bytes()) != old.sha:
                log.warning(
                    "kept %s: prhub no longer makes it, but it changed since prhub wrote it",
                    self.shown / path,
                )
                return False
            target = self._staged() / path
            target.unlink()
        except OSError as exc:
            raise OutputError(f"cannot remove {self.shown / path}: {exc.strerror or exc}") from None
        self.removed += 1
        folder, top = target.parent, self._staged()
        while folder != top and top in folder.parents:
            try:
                folder.rmdir()  # only an empty one
            except OSError:
                break
            folder = folder.parent
        return True

    def _folders(self, path: str) -> None:
        """Refuses a path that goes through a linked folder in the site, or a file's place."""
        parts = path.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in self._checked:
                continue
            here = self.root / folder
            if here.is_symlink():
                raise OutputError(
                    f"cannot build the site in {self.shown}: {self.shown / folder} is a link, and "
                    "prhub writes and removes nothing through a link; remove it or build elsewhere"
                )
            if os.path.lexists(here) and not here.is_dir():
                raise OutputError(
                    f"cannot build the site in {self.shown}: {self.shown / folder} is a file where "
                    "the site needs a folder; move it away"
                )
            self._checked.add(folder)

    def _through_folders(self, path: str) -> bool:
        try:
            self._folders(path)
        except OutputError:
            return False
        return True

    def _staged(self) -> Path:
        """The folder this build writes into: a copy of the site of hard links, made once;
        the site itself where it is a mount point, which cannot be swapped."""
        if self._stage is None:
            if self.root.is_dir() and os.path.ismount(self.root):
                log.warning("%s is a mount point: the site is written in place", self.shown)
                self._stage = self.root
            else:
                self._stage = self._beside("build")
                copy(self.root, self._stage)
        return self._stage

    def _swap(self) -> None:
        stage = self._staged()
        if stage == self.root:
            return
        try:
            self._swapped(stage)
        except OSError as exc:
            raise OutputError(
                f"cannot swap the new site into {self.shown}: {exc.strerror or exc}"
            ) from None
        self._stage = None
        fd = os.open(self.root.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _swapped(self, stage: Path) -> None:
        if not self.root.is_dir():
            os.rename(stage, self.root)
        elif _exchange(stage, self.root):
            shutil.rmtree(stage, ignore_errors=True)  # the last site; what stays, the next clears
        else:
            aside = self._beside("old")
            os.rename(self.root, aside)
            os.rename(stage, self.root)
            shutil.rmtree(aside, ignore_errors=True)


def _write(path: Path, data: bytes) -> None:
    """Writes a new file in the build's copy: a hard link there is replaced, never written
    through (it is the live site's file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(path):
            path.unlink()
        with open(path, "xb") as handle:
            handle.write(data)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _replace(path: Path, data: bytes, sync: bool = True) -> None:
    """Replaces one file in the live site at once: a new file beside it, renamed over it."""
    fresh = path.with_name(f".{path.name}.new")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(fresh, "wb") as handle:
            handle.write(data)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(fresh, path)
    except OSError as exc:
        fresh.unlink(missing_ok=True)
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _place(fresh: Path, target: Path) -> None:
    """Moves the build's record into the site at once; through a copy beside it where the site
    is on another file system (a mount point)."""
    try:
        try:
            os.replace(fresh, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            _replace(target, fresh.read_bytes())
            fresh.unlink()
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None


_LIBC = ctypes.CDLL(None, use_errno=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swaps two folders in one step (Linux's renameat2); False where that cannot be done."""
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is None:
        return False
    at_cwd, exchange = -100, 2
    if renameat2(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OutputError(f"cannot swap the new site into {b}: {os.strerror(code)}")


def _sync(folder: Path) -> None:
    """Every file written this build on disk, in one call: syncfs where there is one."""
    syncfs = getattr(_LIBC, "syncfs", None)
    fd = os.open(folder, os.O_RDONLY)
    try:
        if syncfs is None or syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)
