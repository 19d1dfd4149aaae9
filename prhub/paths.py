"""What a path is (test, code, config, docs, generated, vendored, lock...): one answer for all."""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal[
    "lock", "vendored", "generated", "test", "docs", "config", "binary", "data", "code", "other"
]

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
# Lock files named after their tool: deno.lock.json, bower-lock.json.
_LOCK_JSON = re.compile(r"(?:^|[._-])lock\.json$")
VENDOR_DIRS = frozenset(
    {"vendor", "vendors", "third_party", "thirdparty", "third-party", "node_modules"}
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
MINIFIED_ENDINGS = (".min.js", ".min.mjs", ".min.css", "-min.js", ".bundle.js")
TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "e2e"})
TEST_STEM_ENDINGS = ("_test", ".test", "_spec", ".spec")
DOC_EXTS = frozenset("md rst txt adoc org ipynb".split())
DOC_DIRS = frozenset({"docs", "doc"})  # at the top of the repository
CONFIG_EXTS = frozenset("yml yaml toml ini cfg conf json jsonc env lock xml properties".split())
CONFIG_NAMES = frozenset(
    """makefile cmakelists.txt codeowners license setup.cfg .gitignore .gitattributes
    .dockerignore""".split()
)
CONFIG_PREFIXES = ("dockerfile", "requirements", ".env", ".pre-commit")
CI_DIRS = frozenset({".github", ".gitlab", ".circleci", ".buildkite", ".ci", "ci"})  # at the top
BINARY_EXTS = frozenset(
    """png jpg jpeg gif bmp ico webp tif tiff psd svgz pdf zip gz tgz bz2 xz 7z rar tar jar war
    whl egg so dylib dll exe bin o a lib pyc pyo class wasm pt pth ckpt safetensors onnx pb h5 hdf5
    npy npz pkl pickle parquet arrow feather db sqlite sqlite3 mp3 mp4 wav ogg flac mov avi webm
    mkv ttf otf woff woff2 eot""".split()
)
DATA_EXTS = frozenset({"snap", "csv", "tsv", "parquet", "arrow", "jsonl", "ndjson"})
DATA_DIRS = frozenset({"data", "fixtures", "testdata", "test_data", "__snapshots__", "snapshots"})
CODE_EXTS = frozenset(
    """py pyx pyi c h cc cpp cxx hh hpp hxx cu cuh rs go js jsx mjs cjs ts tsx java kt kts scala rb
    sh bash zsh swift m mm cs php lua jl dart vue svelte""".split()
)


def _split(path: str) -> tuple[list[str], str, str]:
    """Lower-cased folders, file name and extension (without the dot) of a path."""
    *dirs, name = path.lower().split("/")
    return dirs, name, name.rpartition(".")[2] if "." in name else ""


def kind(path: str) -> Kind:
    """What a path is: lock, vendored, generated before test, test before docs and config."""
    dirs, name, ext = _split(path)
    top = dirs[0] if dirs else ""
    if name in LOCK_FILES or _LOCK_JSON.search(name):
        return "lock"
    if VENDOR_DIRS.intersection(dirs):
        return "vendored"
    if (
        GENERATED_DIRS.intersection(dirs)
        or _GENERATED_NAME.search(name)
        or name.endswith(GENERATED_ENDINGS + MINIFIED_ENDINGS)
    ):
        return "generated"
    # A fixture, snapshot or readme under a test directory is part of the tests.
    stem = name.rpartition(".")[0] if "." in name else name
    if (
        TEST_DIRS.intersection(dirs)
        or name.startswith("test_")
        or stem.endswith(TEST_STEM_ENDINGS)
        or name == "conftest.py"
    ):
        return "test"
    if name in CONFIG_NAMES or name.startswith(CONFIG_PREFIXES):
        return "config"
    if ext in DOC_EXTS:
        return "docs"
    if ext in CONFIG_EXTS:
        return "config"
    if top in DOC_DIRS:
        return "docs"
    if top in CI_DIRS:
        return "config"
    if ext in BINARY_EXTS:
        return "binary"
    if ext in DATA_EXTS:
        return "data"
    if ext in CODE_EXTS:
        return "code"
    return "other"


def is_test(path: str) -> bool:
    """True when the path is a test, its fixtures or its helpers."""
    return kind(path) == "test"


def is_code(path: str) -> bool:
    """True when the path is source code: not a test, not generated or vendored."""
    return kind(path) == "code"


def is_tooling(path: str) -> bool:
    """True for the project's own tooling, not settings users write: CI, dotfiles, locks, tests."""
    parts = path.split("/")
    return any(part.startswith(".") for part in parts) or kind(path) in ("lock", "vendored", "test")


def is_minified(path: str) -> bool:
    """True for minified or bundled scripts and styles, a kind of generated file."""
    return path.lower().endswith(MINIFIED_ENDINGS)


def is_binary_format(path: str) -> bool:
    """True when the extension names a binary format (image, archive, model), whatever the kind."""
    return _split(path)[2] in BINARY_EXTS


def is_data_format(path: str) -> bool:
    """True when the extension names a data format (csv, jsonl, snapshot), whatever the kind."""
    return _split(path)[2] in DATA_EXTS


def in_data_dir(path: str) -> bool:
    """True when a folder of the path holds data or fixtures."""
    return bool(DATA_DIRS.intersection(_split(path)[0]))
