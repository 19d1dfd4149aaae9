"""The package's folders show its layers, `cli → run → stages → core`, from one list: each
module imports only its own floor, the core and what the list puts below it; nothing imports
what imports it; the core stays small; no module grows past 400 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "prhub"
# From the bottom up, as data flows (DESIGN's stage order): a floor may import the core and the
# floors before it. `store` imports no stage: what it keeps are the core's types.
FLOORS = ["core", "store", "github", "prepare", "llm", "digest", "weekly", "publish", "run", "cli"]
CORE_PACKAGES = {"model"}  # the types that cross stage lines, one module a kind
MAX_TOP_LEVEL = 15
MAX_LINES = 400
# The CLI reaches no stage: the formats' names come through `run`, which re-exports them.
CLI_MAY_IMPORT = {"core", "run", "cli"}


def floor(module: str) -> str:
    """`prhub.digest.ground` -> "digest"; a top-level module or the model -> "core"."""
    parts = module.split(".")[1:]
    if parts == ["__main__"]:  # `python -m prhub`: the command line's entry
        return "cli"
    if not parts or (len(parts) == 1 and parts[0] not in FLOORS) or parts[0] in CORE_PACKAGES:
        return "core"
    return parts[0]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every prhub module `path` imports, at its top, inside a function or for type checking."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("prhub")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prhub"):
            base = node.module or ""
            for alias in node.names:  # `from prhub.digest import ground` names a module
                full = f"{base}.{alias.name}"
                names.add(full if full in known else base)
    return names & set(known)


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) - {name} for name, path in known.items()}


def test_the_top_level_holds_the_core_alone():
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert len(top) <= MAX_TOP_LEVEL, sorted(top)
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert folders == set(FLOORS[1:]) | CORE_PACKAGES


@pytest.mark.parametrize("folder", FLOORS[1:])
def test_each_floor_says_what_it_owns(folder):
    doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text()))
    assert doc and re.match(rf"(Stage|Floor) {folder}:", doc), doc


def test_no_module_imports_a_floor_above_its_own():
    wrong = []
    for name, targets in graph().items():
        if name == "prhub":  # the package root: its version, and its public API loaded lazily
            continue
        own = floor(name)
        for target in targets - {"prhub"}:
            theirs = floor(target)
            if FLOORS.index(theirs) > FLOORS.index(own):
                wrong.append(f"{name} ({own}) imports {target} ({theirs})")
    assert not wrong, "\n".join(wrong)


def test_the_cli_reaches_no_stage_and_no_stage_the_terminal():
    """The CLI parses and prints through `run`; Typer and rich stay in the CLI."""
    wrong = []
    for name, targets in graph().items():
        if floor(name) == "cli":
            wrong += [f"{name} imports {t}" for t in targets if floor(t) not in CLI_MAY_IMPORT]
        else:
            text = modules()[name].read_text(encoding="utf-8")
            if re.search(r"^\s*(from|import) (typer|rich)\b", text, re.M):
                wrong.append(f"{name} imports typer or rich")
    assert not wrong, "\n".join(wrong)


def test_the_cli_constructs_no_run():
    for path in (PACKAGE / "cli").glob("*.py"):
        assert not re.search(r"\bRun\(", path.read_text(encoding="utf-8")), path.name


def test_no_import_circles():
    """No module imports one that imports it, directly or around a circle."""
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            found = []
            while (w := stack.pop()) != v:
                found.append(w)
            if found:
                circles.append(sorted([v, *found]))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, long


def test_one_pattern_says_what_a_pr_reference_is():
    """Only prhub.text spells `#` followed by a number in a pattern: every other module asks
    its PR_REF (or `refs`, `cited`), so no two of them disagree about what a citation is."""
    spelled = re.compile(r"(?<!&\(\?=)#\(?\\d|/\(\?:pull\|issues\)|pull/\(")  # not `&#12;`
    others = [
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        if p != PACKAGE / "text.py" and spelled.search(p.read_text(encoding="utf-8"))
    ]
    assert not others, others


def test_the_readme_shows_the_tree_as_it_is():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Architecture", 1)[1].split("```", 2)[1]
    shown = {}
    for line in block.splitlines():
        m = re.match(r"\s*(\w+)[/:]\s+([\w ]+)", line)
        if m:
            shown[m.group(1)] = set(m.group(2).split())
    folders = [*FLOORS[1:], *CORE_PACKAGES]
    actual = {f: {p.stem for p in (PACKAGE / f).glob("*.py")} - {"__init__"} for f in folders}
    assert {k: v for k, v in shown.items() if k in folders} == actual
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert shown["core"] == top


def test_tests_mirror_the_package():
    """A test file sits in the folder of what it tests, named after it or a behaviour of it,
    never after an issue; and no test module imports another's helpers."""
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir()} - {
        "standins", "replies", "__pycache__",
    }  # fmt: skip
    assert folders <= {*FLOORS[1:], *CORE_PACKAGES, "core"}, folders
    wrong = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if re.search(r"issue|_\d+\.py$", path.name):
            wrong.append(f"{path.name}: named after an issue")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):  # `from tests import test_x` too
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            wrong += [f"{path.name}: {n}" for n in names if re.search(r"\btest_\w+$", n)]
    assert not wrong, "\n".join(wrong)


def test_no_log_line_names_prhub_itself():
    """The handler prefixes every line with "prhub: " (cli/options.py); a message that says it
    again reads "prhub: prhub: ..." on the operator's terminal."""
    levels = {"debug", "info", "warning", "error", "exception", "critical"}
    twice = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in levels
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in {"log", "logger", "logging"}
                and node.args
            ):
                continue
            first = node.args[0]
            text = first.value if isinstance(first, ast.Constant) else ""
            if isinstance(first, ast.JoinedStr) and isinstance(first.values[0], ast.Constant):
                text = first.values[0].value
            if isinstance(text, str) and text.startswith("prhub:"):
                twice.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not twice, twice
