"""The GitHub Actions workflows prhub ships, and writing one into a repository checkout: the
default commits each weekly report; `pages` publishes the site on GitHub Pages instead."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

from prhub import __version__
from prhub.errors import ConfigError, OutputError

WORKFLOW = Path(".github") / "workflows" / "prhub-weekly.yml"
PAGES_WORKFLOW = Path(".github") / "workflows" / "prhub-pages.yml"
# Each mode's file as shipped in examples/github-actions/, and where init_ci writes it.
_SHIPPED = {False: ("weekly-digest.yml", WORKFLOW), True: ("weekly-pages.yml", PAGES_WORKFLOW)}
# The workflow's pip requirement for prhub, as it appears there: a JSON string is valid YAML.
# On the package index `prhub` is another project: `init_ci` writes where this one came from.
INSTALL_PLACEHOLDER = f"prhub=={__version__}"
_ARCHIVES = (".whl", ".tar.gz", ".zip")


def example_dir() -> Path:
    """The workflow shipped in the wheel, else the source tree's examples/github-actions/."""
    packaged = Path(__file__).parents[1] / "examples"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "examples" / "github-actions"


def workflow_text(pages: bool = False) -> str:
    """The weekly-digest workflow, or with `pages` the weekly-site one, as shipped."""
    return (example_dir() / _SHIPPED[pages][0]).read_text(encoding="utf-8")


def installed() -> dict[str, Any] | None:
    """PEP 610's record (direct_url.json) of where the running prhub was installed from:
    none for an install from a package index."""
    try:
        text = metadata.distribution("prhub").read_text("direct_url.json")
        record = json.loads(text) if text else None
    except (metadata.PackageNotFoundError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("url"), str) else None


def from_record(record: dict[str, Any] | None) -> str | None:
    """The pip requirement that installs prhub again from where `record` says it came from."""
    if record is None:
        return None
    url, vcs = record["url"], record.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs") == "git":
        revision = vcs.get("commit_id") or vcs.get("requested_revision")
        url = f"git+{url}@{revision}" if revision else f"git+{url}"
    elif not ("archive_info" in record or "dir_info" in record):
        return None
    if record.get("subdirectory"):
        url += f"#subdirectory={record['subdirectory']}"
    return f"prhub @ {url}"


def requirement(install: str | None = None, record: dict[str, Any] | None = None) -> str:
    """The pip requirement for prhub: `install`, else where the running one came from.

    A bare URL becomes a direct reference: a git repository (`https://host/org/prhub@v0.2`, with
    or without `git+`) or an archive (`https://host/prhub-0.2-py3-none-any.whl`).
    """
    if not install:
        found = from_record(record or installed())
        if found is None:
            raise ConfigError(
                "cannot tell where this prhub was installed from (no direct_url.json: a package "
                "index, where the name prhub is another project): pass --install with a git URL, "
                "a wheel URL or a pip requirement"
            )
        return found
    if "://" not in install or " @ " in install:
        return install  # already a requirement: prhub==0.2, prhub @ git+https://...
    if install.startswith("git+") or install.endswith(_ARCHIVES):
        return f"prhub @ {install}"
    return f"prhub @ git+{install}"


def init_ci(
    target: Path,
    *,
    install: str | None = None,
    force: bool = False,
    record: dict[str, Any] | None = None,
    pages: bool = False,
) -> Path:
    """Writes the workflow to `target`/.github/workflows/prhub-weekly.yml (with `pages`:
    prhub-pages.yml) and returns that path; it installs `install`, else prhub from where
    `record` (default: this one's) came from."""
    if not target.is_dir():
        what = "is not a directory" if target.exists() else "does not exist"
        raise ConfigError(f"{target} {what}: give the checkout of the repository to add it to")
    path = target / _SHIPPED[pages][1]
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists: pass --force to overwrite it")
    placeholder = json.dumps(INSTALL_PLACEHOLDER)
    chosen = json.dumps(requirement(install, record), ensure_ascii=False)
    text = workflow_text(pages).replace(placeholder, chosen, 1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def next_steps(
    path: Path,
    install: str | None = None,
    record: dict[str, Any] | None = None,
    pages: bool = False,
) -> str:
    """What to do after `init_ci`: where prhub comes from, what to set, then commit."""
    chosen = requirement(install, record)
    source = "as given" if install else "where this prhub was installed from"
    local = (
        ""
        if "file:" not in chosen
        else ("That is a path on this machine: a GitHub-hosted runner cannot install it.\n")
    )
    rerun = "--pages --force" if pages else "--force"
    # Two workflows would each pay for every week, each in its own cache.
    other = path.parent / _SHIPPED[not pages][1].name
    both = f"{other} also runs prhub weekly: delete it unless you want both.\n"
    site = (
        '\nSettings > Pages > Build and deployment > Source: "GitHub Actions" (else the run stops\n'
        "at Configure Pages; the site is then at https://OWNER.github.io/REPO/), and\n"
    )
    return (
        f"wrote {path}\n"
        f"It installs {chosen} ({source}); to install from elsewhere, edit PRHUB_INSTALL in it\n"
        f"or rerun with {rerun} --install GIT_URL.\n{local}"
        f"{both if other.exists() else ''}"
        f"Next, in the repository on GitHub:{site if pages else ' '}"
        "Settings > Secrets and variables > Actions:\n"
        "  secret    OPENAI_API_KEY    the key of your OpenAI-compatible endpoint (required)\n"
        "  variable  OPENAI_BASE_URL   e.g. https://api.deepseek.com/v1 (unset: OpenAI)\n"
        "  variable  PRHUB_MODEL       e.g. deepseek-chat (unset: gpt-4o-mini)\n"
        "Then commit and push the file. It runs every Monday at 09:00 Beijing time, or by hand\n"
        'from the Actions tab ("Run workflow").\n'
    )
