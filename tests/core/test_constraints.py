"""The library versions the suite passed on: `constraints.txt` pins each dependency exactly,
within `pyproject.toml`'s ranges, and every install prhub documents or runs uses it."""

from __future__ import annotations

import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.conftest import ROOT


def pins() -> dict[str, Version]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not pinned exactly: {line}"
            found[canonicalize_name(name)] = Version(version)
    return found


def test_every_dependency_is_pinned_within_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pinned = pins()
    for text in wanted:
        need = Requirement(text)
        name = canonicalize_name(need.name)
        assert name in pinned, f"{need.name} is not in constraints.txt"
        assert need.specifier.contains(pinned[name], prereleases=True), (need, pinned[name])


def test_each_install_prhub_runs_or_documents_uses_the_pins() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install -c constraints.txt .\n" in readme  # install and run
    assert "pip install -c constraints.txt -e '.[dev]' && bash scripts/check" in readme
    assert (
        "pip install --quiet -c constraints.txt -e '.[dev]'" in (ROOT / ".ci" / "run").read_text()
    )
    assert '--constraint "$GITHUB_ACTION_PATH/constraints.txt"' in (ROOT / "action.yml").read_text()
