"""The package's folders show its stages: each imports only the core and stages before it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "prhub"
# From the bottom up: a stage may import the core and the stages listed before it.
STAGES = ["prepare", "github", "llm", "digest", "weekly", "store", "publish"]
CORE = {
    "config", "defaults", "errors", "fields", "logmask", "model", "names", "options", "paths",
    "retry", "tags", "text", "transport",
}  # fmt: skip
TOP = {
    "__init__", "__main__", "batching", "ci", "cli", "dryrun", "fanout", "many", "pipeline",
    "progress",
}  # fmt: skip


def stage(module: str) -> str:
    """`prhub.digest.digest.ground` -> "digest"; a top-level module -> "core" or "top"."""
    parts = module.split(".")[1:]
    if len(parts) > 1 or (parts and parts[0] in STAGES):
        return parts[0]
    return "core" if parts and parts[0] in CORE else "top"


def rank(name: str) -> int:
    return {"core": 0, **{s: i for i, s in enumerate(STAGES, 1)}, "top": len(STAGES) + 1}[name]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 2 else parts)] = path
    return found


def imports(path: Path) -> set[str]:
    """Every prhub module `path` imports, at its top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("prhub")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prhub"):
            base = node.module or ""
            known = modules()
            for alias in node.names:  # `from prhub.digest.digest import ground` names a module
                full = f"{base}.{alias.name}"
                names.add(full if full in known else base)
    return names


def test_every_module_outside_the_core_sits_in_its_stage_folder():
    top_level = {p.stem for p in PACKAGE.glob("*.py")}
    assert top_level <= CORE | TOP, top_level - CORE - TOP
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} == set(STAGES)


@pytest.mark.parametrize("folder", STAGES)
def test_each_stage_says_what_it_owns(folder):
    doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text()))
    assert doc and doc.startswith(f"Stage {folder}:"), doc


def test_no_module_imports_a_stage_listed_after_its_own():
    wrong = []
    for name, path in modules().items():
        if name == "prhub":  # the package root: its version, and its public API loaded lazily
            continue
        own = stage(name)
        for target in imports(path) - {"prhub"}:
            theirs = stage(target)
            if theirs != own and rank(theirs) > rank(own):
                wrong.append(f"{name} ({own}) imports {target} ({theirs})")
    assert not wrong, "\n".join(wrong)


def test_the_readme_shows_the_tree_as_it_is():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Architecture", 1)[1].split("```", 2)[1]
    shown = {}
    for line in block.splitlines():
        m = re.match(r"\s*(\w+)[/:]\s+([\w ]+)", line)
        if m:
            shown[m.group(1)] = set(m.group(2).split())
    actual = {s: {p.stem for p in (PACKAGE / s).glob("*.py")} - {"__init__"} for s in STAGES}
    assert {k: v for k, v in shown.items() if k in STAGES} == actual
    assert shown["core"] == CORE and shown["top"] == TOP - {"__init__", "__main__"}


def test_no_test_module_imports_from_another():
    """Builders and data live in tests/factories.py and fixtures in tests/conftest.py: a test
    module never depends on another's helpers."""
    wrong = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):  # `from tests import test_x` too
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            wrong += [f"{path.name}: {n}" for n in names if re.match(r"tests\.test_", n)]
    assert not wrong, "\n".join(wrong)
