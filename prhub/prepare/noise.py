"""Noise filter: files whose diff tells a reader nothing (lock, generated, binary, data...)."""

from __future__ import annotations

import re
from fnmatch import fnmatch

from prhub.model import FileChange
from prhub.paths import in_data_dir, is_binary_format, is_data_format, is_minified, of

_REASONS = {"lock": "lock file", "vendored": "vendored", "generated": "generated file"}
# A .json under a data directory counts as data past this many changed lines.
DATA_JSON_LINES = 200
# Notebook patch lines longer than this are embedded outputs (images, logs), not code.
NOTEBOOK_LINE_CHARS = 400
_LONG_LINE = re.compile(rf"^[-+ ].{{{NOTEBOOK_LINE_CHARS},}}$\n?", re.M)


def noise_reason(file: FileChange, globs: tuple[str, ...] = ()) -> str | None:
    """Why `file` is noise to leave out, or None when the model should see it."""
    path = file.path
    changes = file.additions + file.deletions
    for glob in globs:
        if fnmatch(path, glob) or fnmatch(path.rsplit("/", 1)[-1], glob):
            return f"matches noise glob {glob!r}"
    what = of(file)
    if what == "generated" and is_minified(path):
        return "minified"
    if what in _REASONS:
        return _REASONS[what]
    if not file.patch and is_pure_rename(file):
        return None
    if not file.patch and file.status in ("changed", "unchanged") and not changes:
        return "no content change"
    # GitHub sends no patch for binaries and reports them with no changed lines.
    if not file.patch and (is_binary_format(path) or not changes):
        return "binary, no patch"
    if is_data_format(path):
        return "data file"
    if path.lower().endswith(".json") and in_data_dir(path) and changes > DATA_JSON_LINES:
        return "data file"
    return None


def is_pure_rename(file: FileChange) -> bool:
    """A rename (or copy) that changed no line."""
    return file.status in ("renamed", "copied") and file.additions + file.deletions == 0


def reduce_notebook(patch: str) -> tuple[str, int]:
    """A notebook patch without its long output lines, and how many changed lines were dropped."""
    dropped = 0

    def drop(m: re.Match[str]) -> str:
        nonlocal dropped
        dropped += m.group()[0] in "+-"
        return ""

    return _LONG_LINE.sub(drop, patch), dropped
