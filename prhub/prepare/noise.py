"""Noise filter: files whose diff tells a reader nothing (lock, generated, binary, data...)."""

from __future__ import annotations

import re
from fnmatch import fnmatch

from prhub.model import FileChange

LOCK_FILES = frozenset(
    {
        "uv.lock",
        "poetry.lock",
        "pipfile.lock",
        "pdm.lock",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "cargo.lock",
        "go.sum",
        "composer.lock",
        "gemfile.lock",
        "podfile.lock",
        "packages.lock.json",
        "flake.lock",
        "mix.lock",
        "pubspec.lock",
    }
)
GENERATED_ENDINGS = (
    "_pb2.py",
    "_pb2.pyi",
    "_pb2_grpc.py",
    ".pb.go",
    ".pb.cc",
    ".pb.h",
    ".pb.swift",
    ".js.map",
    ".css.map",
)
# "generated" as a word of the file name: _generated_ppo_trainer.yaml, api.generated.ts.
_GENERATED_NAME = re.compile(r"(?:^|[._-])generated(?:[._-]|$)")
GENERATED_DIRS = frozenset({"generated", "__generated__", "gen-py"})
VENDOR_DIRS = frozenset(
    {"vendor", "vendors", "third_party", "thirdparty", "third-party", "node_modules"}
)
MINIFIED_ENDINGS = (".min.js", ".min.mjs", ".min.css", "-min.js", ".bundle.js")
BINARY_EXTS = frozenset(
    """png jpg jpeg gif bmp ico webp tif tiff psd svgz pdf zip gz tgz bz2 xz 7z rar tar jar war
    whl egg so dylib dll exe bin o a lib pyc pyo class wasm pt pth ckpt safetensors onnx pb h5 hdf5
    npy npz pkl pickle parquet arrow feather db sqlite sqlite3 mp3 mp4 wav ogg flac mov avi webm
    mkv ttf otf woff woff2 eot""".split()
)
DATA_EXTS = frozenset({"snap", "csv", "tsv", "parquet", "arrow", "jsonl", "ndjson"})
DATA_DIRS = frozenset({"data", "fixtures", "testdata", "test_data", "__snapshots__", "snapshots"})
# A .json under a data directory counts as data past this many changed lines.
DATA_JSON_LINES = 200
# Notebook patch lines longer than this are embedded outputs (images, logs), not code.
NOTEBOOK_LINE_CHARS = 400
_LONG_LINE = re.compile(rf"^[-+ ].{{{NOTEBOOK_LINE_CHARS},}}$\n?", re.M)


def noise_reason(file: FileChange, globs: tuple[str, ...] = ()) -> str | None:
    """Why `file` is noise to leave out, or None when the model should see it."""
    path = file.path
    lower = path.lower()
    name = lower.rsplit("/", 1)[-1]
    dirs = set(lower.split("/")[:-1])
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    changes = file.additions + file.deletions
    for glob in globs:
        if fnmatch(path, glob) or fnmatch(path.rsplit("/", 1)[-1], glob):
            return f"matches noise glob {glob!r}"
    if name in LOCK_FILES:
        return "lock file"
    if dirs & VENDOR_DIRS:
        return "vendored"
    if name.endswith(MINIFIED_ENDINGS):
        return "minified"
    if dirs & GENERATED_DIRS or _GENERATED_NAME.search(name) or name.endswith(GENERATED_ENDINGS):
        return "generated file"
    if not file.patch and is_pure_rename(file):
        return None
    if not file.patch and file.status in ("changed", "unchanged") and not changes:
        return "no content change"
    # GitHub sends no patch for binaries and reports them with no changed lines.
    if not file.patch and (ext in BINARY_EXTS or not changes):
        return "binary, no patch"
    if ext in DATA_EXTS:
        return "data file"
    if ext == "json" and dirs & DATA_DIRS and changes > DATA_JSON_LINES:
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
