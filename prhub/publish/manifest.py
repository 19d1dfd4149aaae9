"""What a site holds: the record of what a build wrote (`.prhub-site`, a dotfile no host
publishes: each file's fingerprint and its inputs'), and the published manifest.json, the list
of every report and digest JSON file a restore from the site reads."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MANIFEST", "RECORD", "Published", "Record", "digest", "manifest_json", "read"]

RECORD = ".prhub-site"  # a dotfile: hosts such as GitHub Pages do not publish it
MANIFEST = "manifest.json"  # published: what a restore from the site reads
log = logging.getLogger("prhub")


def digest(data: bytes | str) -> str:
    """A file's fingerprint: the SHA-256 of its bytes."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


@dataclass(frozen=True)
class Record:
    """What a build wrote: each file's fingerprint, and the fingerprint of what it was made from."""

    files: dict[str, str] = field(default_factory=dict)  # path in the site -> fingerprint
    inputs: dict[str, str] = field(default_factory=dict)  # path -> its inputs' fingerprint

    def text(self) -> str:
        data = {
            "files": dict(sorted(self.files.items())),
            "inputs": dict(sorted(self.inputs.items())),
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"


def read(out: Path) -> Record:
    """The record of the last build in `out`; an empty one when there is none or it is not
    prhub's (then every file there counts as someone else's)."""
    try:
        data = json.loads((out / RECORD).read_bytes())
        files, inputs = data["files"], data.get("inputs", {})
        if not all(isinstance(v, str) for v in [*files.values(), *inputs.values()]):
            raise ValueError("not a record")
        # Only paths inside the site: a record edited by hand can send no removal outside it.
        return Record(
            {k: v for k, v in files.items() if _inside(k)},
            {k: v for k, v in inputs.items() if _inside(k) and k in files},
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
    if not isinstance(path, str) or not path or path.startswith("/"):
        return False
    return ".." not in path.split("/")


@dataclass(frozen=True, order=True)
class Published:
    """A report's or a digest's JSON file as the published manifest lists it."""

    path: str  # relative to the site's root
    kind: str  # "report" or "digest"
    repo: str
    sha256: str


def manifest_json(files: list[Published]) -> str:
    """The site's manifest: every report and digest JSON file it holds, sorted by path."""
    from prhub import __version__

    listed = sorted(files)
    data = {
        "format": 1,
        "generator": f"prhub {__version__}",
        "reports": sum(f.kind == "report" for f in listed),
        "digests": sum(f.kind == "digest" for f in listed),
        "files": [
            {"path": f.path, "kind": f.kind, "repo": f.repo, "sha256": f.sha256} for f in listed
        ],
    }
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"
