"""The GitHub Actions workflow prhub ships, and writing it into a repository checkout."""

from __future__ import annotations

import json
from pathlib import Path

from prhub.errors import ConfigError, OutputError

WORKFLOW = Path(".github") / "workflows" / "prhub-weekly.yml"
# The workflow's pip requirement for prhub, as it appears there: a JSON string is valid YAML.
INSTALL_PLACEHOLDER = "prhub @ git+https://github.com/your-org/prhub@v0.1.0"


def example_dir() -> Path:
    """The workflow shipped in the wheel, else the source tree's examples/github-actions/."""
    packaged = Path(__file__).parent / "examples"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[1] / "examples" / "github-actions"


def workflow_text() -> str:
    """The weekly-digest workflow, as shipped."""
    return (example_dir() / "weekly-digest.yml").read_text(encoding="utf-8")


def init_ci(target: Path, *, repo_install: str | None = None, force: bool = False) -> Path:
    """Writes the workflow to `target`/.github/workflows/prhub-weekly.yml and returns that path."""
    path = target / WORKFLOW
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists: pass --force to overwrite it")
    text = workflow_text()
    if repo_install is not None:
        placeholder = json.dumps(INSTALL_PLACEHOLDER)
        text = text.replace(placeholder, json.dumps(repo_install, ensure_ascii=False), 1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
