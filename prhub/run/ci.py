"""The GitHub Actions workflows prhub ships, and writing one into a repository checkout: the
default commits each weekly report; `pages` publishes the site on GitHub Pages instead. Both
run prhub's own Action (action.yml at the root of prhub's repository) at this prhub's version
tag: the workflow installs nothing itself, and depends on no path of the machine it was
written on."""

from __future__ import annotations

import json
import re
import tomllib
from email.message import Message
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

from prhub import __version__
from prhub.errors import ConfigError, OutputError

DIST = "prhub-digest"  # the distribution's name; on the package index `prhub` is another project
WORKFLOW = Path(".github") / "workflows" / "prhub-weekly.yml"
PAGES_WORKFLOW = Path(".github") / "workflows" / "prhub-pages.yml"
# Each mode's file as shipped in examples/github-actions/, and where init_ci writes it.
_SHIPPED = {False: ("weekly-digest.yml", WORKFLOW), True: ("weekly-pages.yml", PAGES_WORKFLOW)}
# What the shipped workflows say until init_ci names the Action and chooses its inputs.
PLACEHOLDER_OWNER = "your-org"  # no one's: a workflow that ran it would run a stranger's code
ACTION_PLACEHOLDER = f"{PLACEHOLDER_OWNER}/prhub@v{__version__}"
ALL_LINE, INSTALL_LINE = "all: false", 'install: ""'
_ACTION = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+(/[\w./-]+)?@[\w./-]+")
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")  # a requirement's project (PEP 508)


def example_dir() -> Path:
    """The workflows shipped in the wheel, else the source tree's examples/github-actions/."""
    packaged = Path(__file__).parents[1] / "examples"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "examples" / "github-actions"


def workflow_text(pages: bool = False) -> str:
    """The weekly-digest workflow, or with `pages` the weekly-site one, as shipped."""
    return (example_dir() / _SHIPPED[pages][0]).read_text(encoding="utf-8")


def home(meta: Message | None = None) -> str | None:
    """OWNER/REPO of prhub's repository, as this prhub's metadata names it (Project-URL
    Repository, which the release workflow sets); None when it names none of its own."""
    try:
        meta = meta or metadata.metadata(DIST)  # type: ignore[assignment]
    except metadata.PackageNotFoundError:
        return None
    for entry in (meta.get_all("Project-URL") if meta else None) or []:
        label, _, url = entry.partition(",")
        if label.strip().lower() not in ("repository", "source"):
            continue
        parts = [p for p in urlsplit(url.strip()).path.split("/") if p]
        if len(parts) == 2 and parts[0] != PLACEHOLDER_OWNER:
            return f"{parts[0]}/{parts[1].removesuffix('.git')}"
    return None


def action_ref(action: str | None = None, meta: Message | None = None) -> str:
    """The `uses:` of prhub's Action: `action` as given (OWNER/REPO@REF), else the repository
    this prhub's metadata names, at this prhub's version tag."""
    if action:
        if not _ACTION.fullmatch(action) or "://" in action:
            raise ConfigError(
                f"--action {action!r} is no Action: give OWNER/REPO@REF, e.g. "
                f"acme/prhub@v{__version__}"
            )
        return action
    found = home(meta)
    if found is None:
        raise ConfigError(
            "this prhub does not say which repository its Action lives in (its metadata's "
            "Project-URL Repository is none of its own: a prhub installed from a clone): pass "
            f"--action OWNER/REPO@v{__version__}, the repository you cloned and this release's tag"
        )
    return f"{found}@v{__version__}"


def install_spec(install: str) -> str:
    """The pip requirement the Action installs instead of its own checkout: a requirement or a
    URL, never the index's other prhub, never a path only this machine has."""
    install = install.strip()
    named = _NAME.match(install)
    if named and re.sub(r"[-_.]+", "-", named[1]).lower() == "prhub":
        raise ConfigError(
            f"--install {install!r} names the package index's prhub, another project: this one "
            f"is {DIST} ({DIST}=={__version__}), or leave --install out to install the Action's "
            "own checkout"
        )
    if install.startswith(("file:", "/", "./", "../", "~")) or "@ file:" in install:
        raise ConfigError(
            f"--install {install!r} is a path on this machine, which a GitHub-hosted runner "
            "cannot reach: leave --install out, or give a git URL, a wheel URL or a requirement"
        )
    if "://" not in install or " @ " in install:
        return install  # a requirement: prhub-digest==0.2, prhub-digest @ git+https://...
    if install.startswith("git+") or install.endswith((".whl", ".tar.gz", ".zip")):
        return f"{DIST} @ {install}"
    return f"{DIST} @ git+{install}"


def init_ci(
    target: Path,
    *,
    action: str | None = None,
    install: str | None = None,
    force: bool = False,
    pages: bool = False,
    all_repos: bool = False,
    meta: Message | None = None,
) -> Path:
    """Writes the workflow to `target`/.github/workflows/prhub-weekly.yml (with `pages`:
    prhub-pages.yml) and returns that path: it runs prhub's Action (`action`, else the one this
    prhub's metadata names) for the repositories of prhub.toml with `all_repos`."""
    if not target.is_dir():
        what = "is not a directory" if target.exists() else "does not exist"
        raise ConfigError(f"{target} {what}: give the checkout of the repository to add it to")
    path = target / _SHIPPED[pages][1]
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists: pass --force to overwrite it")
    text = _filled(workflow_text(pages), ACTION_PLACEHOLDER, action_ref(action, meta))
    if all_repos:
        text = _filled(text, ALL_LINE, "all: true")
    if install:
        text = _filled(text, INSTALL_LINE, f"install: {json.dumps(install_spec(install))}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _filled(text: str, placeholder: str, value: str) -> str:
    if text.count(placeholder) != 1:  # a shipped workflow edited out of shape
        raise ConfigError(f"the shipped workflow does not hold {placeholder!r} once")
    return text.replace(placeholder, value)


def listed_repos(target: Path) -> list[str]:
    """The repositories the checkout's prhub.toml lists for --all, if any."""
    try:
        data = tomllib.loads((target / "prhub.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    repos = data.get("repos")
    return [str(r) for r in (repos if isinstance(repos, list) else repos or {})]


def next_steps(
    path: Path,
    *,
    action: str | None = None,
    install: str | None = None,
    pages: bool = False,
    all_repos: bool = False,
    meta: Message | None = None,
) -> str:
    """What to do after `init_ci`: which Action runs, what to set, then commit."""
    uses = action_ref(action, meta)
    source = "as given" if action else "the repository and version of this prhub"
    installs = (
        f"installs {install_spec(install)} (as given)"
        if install
        else "installs prhub from its own checkout"
    )
    rerun = "--pages --force" if pages else "--force"
    listed = listed_repos(path.parents[2])
    many = (
        f"prhub.toml lists {len(listed)} repositories: rerun with {rerun} --all to digest them "
        f"all in one run{' (one site)' if pages else ''}.\n"
        if listed and not all_repos
        else ""
    )
    # Two workflows would each pay for every week, each in its own cache.
    other = path.parent / _SHIPPED[not pages][1].name
    both = f"{other} also runs prhub weekly: delete it unless you want both.\n"
    site = (
        '\nSettings > Pages > Build and deployment > Source: "GitHub Actions" (else the run stops\n'
        "at Configure Pages; the site is then at https://OWNER.github.io/REPO/), and\n"
    )
    return (
        f"wrote {path}\n"
        f"It runs prhub's Action {uses} ({source}),\n"
        f"which {installs}; the tag must exist in that repository.\n"
        f"To run another, rerun with {rerun} --action OWNER/REPO@TAG.\n"
        f"{many}{both if other.exists() else ''}"
        f"Next, in the repository on GitHub:{site if pages else ' '}"
        "Settings > Secrets and variables > Actions:\n"
        "  secret    OPENAI_API_KEY    the key of your OpenAI-compatible endpoint (required)\n"
        "  variable  OPENAI_BASE_URL   e.g. https://api.deepseek.com/v1 (unset: OpenAI)\n"
        "  variable  PRHUB_MODEL       e.g. deepseek-chat (unset: gpt-4o-mini)\n"
        "Then commit and push the file. It runs every Monday at 09:00 Beijing time, or by hand\n"
        'from the Actions tab ("Run workflow").\n'
    )
