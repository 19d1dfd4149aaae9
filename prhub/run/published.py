"""`prhub restore URL`: a store rebuilt from a published site by its manifest.json, never by a
pattern of names: every report and digest file it lists is fetched and checked against its
SHA-256, then imported. A restore that leaves the store short of what the site lists fails,
and an empty store it would have filled stays as it was (none)."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal
from urllib.parse import quote, urljoin

import httpx2
from pydantic import BaseModel, Field, ValidationError

from prhub import retry, transport
from prhub.config import Settings, default_store
from prhub.errors import RestoreError
from prhub.logmask import shown_url
from prhub.run import restore
from prhub.store.store import Store
from prhub.text import plural

log = logging.getLogger("prhub")

MANIFEST = "manifest.json"
MAX_FILE = 64 * 2**20  # bytes of one file of the site: a report with its digests is far less


class Listed(BaseModel):
    """One file of the site, as its manifest lists it."""

    path: str
    kind: Literal["report", "digest"]
    repo: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Manifest(BaseModel):
    """What a site built by `prhub site` says it holds (manifest.json at its root)."""

    format: Literal[1]
    generator: str
    reports: int
    digests: int  # digest files listed
    held: int = 0  # the PRs' digests the site holds, in its weeks' JSON or on their own
    files: list[Listed]


@dataclass
class Restored:
    """How a restore ended: nothing published yet, or what the site listed and the store
    holds now of it."""

    url: str
    published: bool = True
    reports: int = 0  # the manifest's report files
    digests: int = 0
    imported: restore.Restored | None = None

    def summary(self) -> str:
        if not self.published:
            return f"nothing is published at {self.url} yet: the store starts empty"
        done = self.imported
        kept = f"{plural(done.digests, 'digest')} and {plural(done.weeks, 'week')}" if done else ""
        return (
            f"restored {self.url}: {plural(self.reports, 'report')} and "
            f"{plural(self.digests, 'digest')} held, all fetched and checked; imported {kept}"
        )


def restore_site(url: str, settings: Settings) -> Restored:
    """Restores the store of `settings` from the site at `url` (its root)."""
    base = url.rstrip("/") + "/"
    shown = shown_url(url.rstrip("/")) or url
    done = Restored(shown)
    with httpx2.Client(timeout=settings.timeout, follow_redirects=True) as client:
        status, data = _get(client, urljoin(base, MANIFEST), settings)
        if status == 404:
            home, _ = _get(client, base, settings)
            if home == 404:
                done.published = False
                return done
            raise RestoreError(
                f"{shown} has a site but no {MANIFEST} (built by an older prhub): cannot tell "
                "what it holds, so nothing is restored; build it once with this prhub's "
                "`prhub site` from a store that has it, then restore"
            )
        if status != 200:
            raise RestoreError(f"{shown}/{MANIFEST} answered HTTP {status}: rerun when it is read")
        manifest = _manifest(data, shown)
        done.reports, done.digests = manifest.reports, max(manifest.digests, manifest.held)
        with tempfile.TemporaryDirectory(prefix="prhub-restore-") as tmp:
            for item in manifest.files:
                _fetch(client, base, item, Path(tmp), settings, shown)
            done.imported = _import(Path(tmp), manifest, settings, shown)
    return done


def _get(client: httpx2.Client, url: str, settings: Settings) -> tuple[int, bytes]:
    """The status and body of a GET, retried while the host fails or cannot be reached."""

    def once() -> tuple[int, bytes]:
        deadline = transport.Deadline(settings.timeout)
        with client.stream("GET", url, headers={"User-Agent": "prhub"}) as answer:
            if answer.status_code >= 500 or answer.status_code == 429:
                raise _Busy(answer.status_code, answer.headers.get("retry-after"))
            chunks = transport.body(
                answer.iter_bytes(),
                deadline,
                MAX_FILE,
                answer.close,
                answer.headers.get("content-length"),
            )
            return answer.status_code, b"".join(chunks)

    try:
        return retry.call(once, settings, _hint, what=f"reading {shown_url(url)}")
    except _Busy as exc:
        return exc.status, b""
    except transport.TooBig:
        raise RestoreError(f"{shown_url(url)} is over {MAX_FILE // 2**20} MB: not read") from None
    except (transport.Late, httpx2.HTTPError) as exc:
        raise RestoreError(
            f"cannot read {shown_url(url)} ({type(exc).__name__}): check the URL, and rerun "
            "when the site is reachable"
        ) from None


class _Busy(Exception):
    """The host answered 5xx or 429: worth another attempt."""

    def __init__(self, status: int, wait: str | None) -> None:
        super().__init__(status)
        self.status, self.wait = status, retry.retry_after(wait)


def _hint(exc: BaseException) -> float | None:
    if isinstance(exc, _Busy):
        return exc.wait or 0.0
    if isinstance(exc, httpx2.TransportError | transport.Late):
        return 0.0
    return None


def _manifest(data: bytes, shown: str) -> Manifest:
    """The manifest, checked: its counts are what it lists, its paths are inside the site."""
    try:
        manifest = Manifest.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise RestoreError(
            f"{shown}/{MANIFEST} is no manifest prhub can read ({where}: {first['msg']})"
        ) from None
    for kind, said in (("report", manifest.reports), ("digest", manifest.digests)):
        listed = sum(f.kind == kind for f in manifest.files)
        if listed != said:
            raise RestoreError(
                f"{shown}/{MANIFEST} says {plural(said, kind)} but lists {listed}: "
                "a site cut short; rebuild it before restoring from it"
            )
    for item in manifest.files:
        named = PurePosixPath(item.path)
        if named.is_absolute() or ".." in named.parts or named.suffix != ".json":
            raise RestoreError(f"{shown}/{MANIFEST} lists {item.path!r}: not a file of the site")
    return manifest


def _fetch(
    client: httpx2.Client, base: str, item: Listed, into: Path, settings: Settings, shown: str
) -> None:
    """One listed file into `into`, at its path, once its bytes are what the manifest says."""
    status, data = _get(client, urljoin(base, quote(item.path)), settings)
    if status != 200:
        raise RestoreError(
            f"{shown}/{item.path} answered HTTP {status}, though {MANIFEST} lists it: nothing "
            "is restored; rerun when the site is whole"
        )
    if hashlib.sha256(data).hexdigest() != item.sha256:
        raise RestoreError(
            f"{shown}/{item.path} is not the file {MANIFEST} lists (its SHA-256 differs; the "
            "site may have changed while it was read): nothing is restored; rerun"
        )
    target = into / item.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _import(folder: Path, manifest: Manifest, settings: Settings, shown: str) -> restore.Restored:
    """Imports the fetched files and checks the store holds every listed report and digest.
    A store that did not exist is filled beside its place and moved there only when whole."""
    path = settings.store or default_store()
    fresh = not path.exists()
    target = path.with_name(f".{path.name}.restoring-{os.getpid()}") if fresh else path
    try:
        done = restore.import_dir(folder, settings.model_copy(update={"store": target}))
        if done.problems or done.skipped:
            first = done.problems[0] if done.problems else "a file that is not prhub's"
            raise RestoreError(
                f"{plural(done.skipped, 'file')} of {shown} could not be imported ({first}): "
                "nothing is restored"
            )
        _check_whole(target, manifest, shown)
        if fresh:
            os.replace(target, path)
    finally:
        if fresh:  # what a failed restore left beside the store's place
            for suffix in ("", "-wal", "-shm"):
                target.with_name(target.name + suffix).unlink(missing_ok=True)
    return done


def _check_whole(store_path: Path, manifest: Manifest, shown: str) -> None:
    """Fails unless the store holds as many reports and digests of the site's repositories as
    the manifest lists: a smaller site must never be built and published from it."""
    repos = sorted({f.repo for f in manifest.files})
    with closing(Store(store_path)) as store:
        reports = sum(len(store.reports(r)) for r in repos)
        digests = sum(len(store.digests(r)) for r in repos)
    held = max(manifest.digests, manifest.held)
    if reports < manifest.reports or digests < held:
        raise RestoreError(
            f"the store would hold {reports} of the {manifest.reports} reports and {digests} of "
            f"the {held} digests that {shown} holds: nothing is restored, so no smaller site "
            "is built from it"
        )
