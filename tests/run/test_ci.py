"""The workflows `init-ci` writes and prhub ships: each runs prhub's Action at this prhub's
version tag, installs nothing itself, names no path of this machine, reads its repositories
from prhub.toml, and passes actionlint; the release workflow publishes on a version tag."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
import yaml

from prhub import __version__
from prhub.errors import ConfigError
from prhub.run import ci
from prhub.run.ci import ACTION_PLACEHOLDER, PAGES_WORKFLOW, WORKFLOW, init_ci, workflow_text
from tests.factories import ROOT, prhub
from tests.standins import runner
from tests.standins.runner import triggers

BIN = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
ACTIONLINT = shutil.which("actionlint", path=BIN)
EXAMPLES = ROOT / "examples" / "github-actions"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
TESTS = ROOT / ".github" / "workflows" / "tests.yml"
ACTION = f"acme/prhub@v{__version__}"


def meta(*urls: str) -> Message:
    """Installed metadata naming these Project-URLs."""
    found = Message()
    for url in urls:
        found["Project-URL"] = url
    return found


HOME = meta("Repository, https://github.com/acme/prhub")


def load(text: str) -> dict[Any, Any]:
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def action_step(workflow: dict[Any, Any], job: str) -> dict[str, Any]:
    [step] = [s for s in workflow["jobs"][job]["steps"] if "/prhub@" in s.get("uses", "")]
    return step


SHIPPED = {"weekly-digest.yml": "weekly", "weekly-pages.yml": "build"}


# The shipped workflows


@pytest.mark.parametrize("name", [*SHIPPED, "many-repositories.yml"])
def test_each_runs_the_action_and_installs_nothing_itself(name: str) -> None:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    assert text.count(ACTION_PLACEHOLDER) == 1  # this release's tag, named once
    workflow = load(text)
    scripts = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    commands = [line.split()[0] for s in scripts for line in s.splitlines() if line.strip()]
    assert not {"pip", "python", "prhub"} & set(commands)  # the Action installs and runs prhub
    assert "PRHUB_INSTALL" not in text and "file:" not in text
    for script in scripts:  # expressions pasted into a script are an injection
        assert "${{" not in script, script
    uses = [s["uses"] for job in workflow["jobs"].values() for s in job["steps"] if "uses" in s]
    for used in uses:
        assert re.fullmatch(r"(actions/[\w/-]+@v\d+|your-org/prhub@v[\d.]+)", used), used


@pytest.mark.parametrize(("name", "job"), SHIPPED.items())
def test_the_repositories_come_from_prhub_toml_not_the_workflow(name: str, job: str) -> None:
    """No `--repo ${{ github.repository }}` overrides the file: `repo` is not given, so prhub
    reads prhub.toml's `repo` (or `repos` with all), else the checkout's own repository."""
    workflow = load(workflow_text(pages=name == "weekly-pages.yml"))
    step = action_step(workflow, job)
    assert "repo" not in step["with"] and "github.repository" not in json.dumps(workflow)
    assert step["with"]["all"] is False  # init-ci --all makes it true
    assert step["continue-on-error"] is True and step["id"] == "prhub"
    assert step["with"]["openai-api-key"] == "${{ secrets.OPENAI_API_KEY }}"
    assert json.dumps(workflow).count("secrets.") == 1  # the key, to the Action alone
    last = workflow["jobs"][job]["steps"][-1]
    assert last["if"] == "always() && steps.prhub.outcome == 'failure'"
    assert last["run"].rstrip().endswith("exit 1")
    assert triggers(workflow)["schedule"] == [{"cron": "0 1 * * 1"}]  # 09:00 in UTC+8


def test_the_pages_workflow_restores_from_its_own_site_and_deploys_only_a_built_one() -> None:
    workflow = load(workflow_text(pages=True))
    step = action_step(workflow, "build")
    assert step["with"]["site"] == "site/"
    assert step["with"]["site-url"] == "${{ steps.pages.outputs.base_url }}"
    assert step["with"]["cache-key"] != "prhub-store"  # apart from the commit mode's cache
    upload = runner.step(workflow, "build", uses="actions/upload-pages-artifact")
    assert upload["if"] == "always() && steps.prhub.outputs.site != ''"  # only a built site
    assert upload["with"]["path"] == "${{ steps.prhub.outputs.site }}"
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert build["outputs"]["deploy"] == "${{ steps.artifact.outcome == 'success' }}"
    assert deploy["if"] == "${{ !cancelled() && needs.build.outputs.deploy == 'true' }}"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert build["permissions"] == {"contents": "read", "pull-requests": "read", "pages": "read"}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_commit_step_pushes_once_and_only_a_change(tmp_path: Path) -> None:
    workflow = load(workflow_text())

    def git(*args: str, cwd: Path = tmp_path) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
        ).stdout

    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        **{f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", "someone"), ("EMAIL", "someone@example.com"))},
    }  # fmt: skip
    git("init", "--quiet", "--bare", "--initial-branch=main", "origin.git")
    git("clone", "--quiet", "origin.git", "seed")
    seed = tmp_path / "seed"
    (seed / ".gitignore").write_text("/reports/\n")  # as prhub's own repository has
    git("add", ".", cwd=seed)
    git("commit", "--quiet", "-m", "start", cwd=seed)
    git("push", "--quiet", "origin", "HEAD:main", cwd=seed)
    git("clone", "--quiet", "--depth=1", f"file://{tmp_path / 'origin.git'}", "checkout")
    checkout = tmp_path / "checkout"
    report = "reports/acme/rocket/2026-W31.md"
    (checkout / "reports/acme/rocket").mkdir(parents=True)
    (checkout / report).write_text("# report\n")
    (seed / "NEWS.md").write_text("pushed while prhub ran\n")
    git("add", ".", cwd=seed)
    git("commit", "--quiet", "-m", "meanwhile", cwd=seed)
    git("push", "--quiet", "origin", "HEAD:main", cwd=seed)
    commit = runner.step(workflow, "weekly", name="Commit the reports")
    assert commit["if"] == "always() && steps.prhub.outputs.report != ''"
    for _ in range(2):
        done, _ = runner.run_step(
            workflow,
            "weekly",
            commit,
            {"steps.prhub.outputs.report": report},
            checkout,
            {"GIT_CONFIG_NOSYSTEM": "1"},
        )
        assert done.returncode == 0, done.stdout + done.stderr
        log = git("log", "--format=%an|%s", "main", cwd=tmp_path / "origin.git")
        assert log.splitlines() == [
            "github-actions[bot]|prhub: weekly report 2026-W31",
            "someone|meanwhile",
            "someone|start",
        ]
    assert "nothing to commit" in done.stdout


# init-ci


def test_the_action_is_named_by_the_metadata_and_pinned_to_this_version(tmp_path: Path) -> None:
    path = init_ci(tmp_path, meta=HOME)
    assert path == tmp_path / WORKFLOW
    text = path.read_text(encoding="utf-8")
    assert f"uses: {ACTION}\n" in text and ACTION_PLACEHOLDER not in text
    assert load(text) == load(workflow_text().replace(ACTION_PLACEHOLDER, ACTION))
    assert ci.home(meta("Homepage, https://x.example", "Source, https://github.com/o/p.git")) == (
        "o/p"
    )


@pytest.mark.parametrize(
    "metadata",
    [meta("Repository, https://github.com/your-org/prhub"), meta("Homepage, https://x"), meta()],
)
def test_without_a_home_of_its_own_init_ci_asks_for_the_action(
    tmp_path: Path, metadata: Message
) -> None:
    with pytest.raises(ConfigError) as refused:
        init_ci(tmp_path, meta=metadata)
    assert f"pass --action OWNER/REPO@v{__version__}" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / ".github").exists()
    written = init_ci(tmp_path, action="team/prhub-fork@v9", meta=metadata)
    assert "uses: team/prhub-fork@v9\n" in written.read_text()


@pytest.mark.parametrize("action", ["acme/prhub", "https://github.com/acme/prhub@v1", "a b@c"])
def test_an_action_that_is_no_owner_repo_at_ref_is_refused(tmp_path: Path, action: str) -> None:
    with pytest.raises(ConfigError, match="is no Action: give OWNER/REPO@REF"):
        init_ci(tmp_path, action=action)


@pytest.mark.parametrize(
    ("install", "wanted"),
    [
        ("prhub-digest==0.3.1", "prhub-digest==0.3.1"),
        ("https://github.com/acme/prhub@v0.2.0", "prhub-digest @ git+https://github.com/acme/prhub@v0.2.0"),
        ("https://x/prhub_digest-0.2-py3-none-any.whl", "prhub-digest @ https://x/prhub_digest-0.2-py3-none-any.whl"),
    ],
)  # fmt: skip
def test_an_install_spec_goes_into_the_actions_input(
    tmp_path: Path, install: str, wanted: str
) -> None:
    path = init_ci(tmp_path, action=ACTION, install=install)
    step = action_step(load(path.read_text()), "weekly")
    assert step["with"]["install"] == wanted


@pytest.mark.parametrize(
    ("install", "says"),
    [
        ("prhub", "names the package index's prhub, another project"),
        ("PRHUB==0.2.1", "names the package index's prhub, another project"),
        ("prhub @ git+https://github.com/acme/prhub", "another project"),
        ("file:///home/me/prhub", "a path on this machine"),
        ("./prhub", "a path on this machine"),
        ("prhub-digest @ file:///src/prhub", "a path on this machine"),
    ],
)
def test_the_indexs_prhub_and_local_paths_are_refused(
    tmp_path: Path, install: str, says: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)):
        init_ci(tmp_path, action=ACTION, install=install)
    assert not (tmp_path / ".github").exists()


def test_all_digests_every_repository_of_prhub_toml_and_is_suggested(tmp_path: Path) -> None:
    (tmp_path / "prhub.toml").write_text('repos = ["acme/rocket", "acme/engine"]\n')
    path = init_ci(tmp_path, action=ACTION, pages=True)
    said = ci.next_steps(path, action=ACTION, pages=True)
    assert "prhub.toml lists 2 repositories: rerun with --pages --force --all" in said
    path = init_ci(tmp_path, action=ACTION, pages=True, all_repos=True, force=True)
    assert action_step(load(path.read_text()), "build")["with"]["all"] is True
    assert "--all" not in ci.next_steps(path, action=ACTION, pages=True, all_repos=True)


def test_init_ci_writes_refuses_then_overwrites_with_force(tmp_path: Path) -> None:
    path = init_ci(tmp_path, action=ACTION, pages=True)
    assert path == tmp_path / PAGES_WORKFLOW
    path.write_text("edited by the team\n")
    with pytest.raises(ConfigError, match="--force"):
        init_ci(tmp_path, action=ACTION, pages=True)
    assert path.read_text() == "edited by the team\n"
    init_ci(tmp_path, action=ACTION, pages=True, force=True)
    assert "uses: acme/prhub@" in path.read_text()
    missing = tmp_path / "typo"
    with pytest.raises(ConfigError, match="does not exist"):
        init_ci(missing, action=ACTION)
    assert not missing.exists()


def test_the_command_says_which_action_runs_and_what_to_set(
    env: dict[str, str | None], tmp_path: Path
) -> None:
    done = prhub(env, "init-ci", str(tmp_path), "--action", ACTION)
    assert done.exit_code == 0, done.stderr
    written = tmp_path / WORKFLOW
    assert done.stdout.startswith(
        f"wrote {written}\n"
        f"It runs prhub's Action {ACTION} (as given),\n"
        "which installs prhub from its own checkout; the tag must exist in that repository.\n"
        "To run another, rerun with --force --action OWNER/REPO@TAG.\n"
        "Next, in the repository on GitHub: Settings > Secrets and variables > Actions:\n"
    )
    pages = prhub(env, "init-ci", str(tmp_path), "--action", ACTION, "--pages")
    assert pages.exit_code == 0, pages.stderr
    assert f"{written} also runs prhub weekly: delete it unless you want both.\n" in pages.stdout
    assert 'Source: "GitHub Actions"' in pages.stdout
    refused = prhub(env, "init-ci", str(tmp_path), "--force")  # the dev install names none
    assert refused.exit_code == 3 and "pass --action OWNER/REPO@v" in refused.stderr


@pytest.mark.skipif(ACTIONLINT is None, reason="actionlint is not installed (dev extra)")
def test_what_init_ci_writes_passes_actionlint_and_names_no_local_path(tmp_path: Path) -> None:
    """With shellcheck beside it (dev extra), actionlint checks the steps' scripts too."""
    written = [
        init_ci(tmp_path / name, action=ACTION, pages=pages, all_repos=pages, install=install)
        for name, pages, install in (
            ("a", False, None),
            ("b", True, None),
            ("c", False, "prhub-digest==0.1.0"),
        )
        if (tmp_path / name).mkdir() is None
    ]
    for path in written:
        text = path.read_text(encoding="utf-8")
        for local in (str(ROOT), str(Path.home()), str(tmp_path), "file:", sys.prefix):
            assert local not in text, local
    lint = [*written, EXAMPLES / "many-repositories.yml", RELEASE, TESTS]
    done = subprocess.run(
        [str(ACTIONLINT), *map(str, lint)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": BIN},
    )
    assert done.returncode == 0, done.stdout + done.stderr


# prhub's own checks


def test_its_own_checks_run_pinned_on_each_push_and_with_the_newest_libraries_weekly() -> None:
    workflow = load(TESTS.read_text(encoding="utf-8"))
    assert set(triggers(workflow)) == {"push", "pull_request", "schedule", "workflow_dispatch"}
    assert workflow["permissions"] == {"contents": "read"}
    job = workflow["jobs"]["check"]
    assert job["strategy"]["matrix"]["libraries"] == ["pinned", "newest"]
    [rule] = job["strategy"]["matrix"]["exclude"]  # newest on the schedule only
    assert rule["libraries"] == "${{ github.event_name == 'schedule' && 'none' || 'newest' }}"
    steps = {step.get("name"): step for step in job["steps"]}
    install = steps["Install prhub and its test tools"]["run"]
    assert "pip install --quiet -c constraints.txt -e '.[dev]'" in install  # README's install
    assert "pip install --quiet --upgrade -e '.[dev]'" in install
    assert steps["Check"]["run"] == "bash scripts/check"


# The release


def test_a_version_tag_builds_and_publishes_by_trusted_publishing() -> None:
    workflow = load(RELEASE.read_text(encoding="utf-8"))
    assert triggers(workflow) == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}  # no token: the index trusts it
    assert publish["environment"]["name"] == "pypi"
    assert publish["steps"][-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "secrets." not in json.dumps(workflow)


@pytest.mark.parametrize(("tag", "code"), [(f"v{__version__}", 0), ("v9.9.9", 1)])
def test_the_release_refuses_a_tag_that_is_not_the_version(
    tmp_path: Path, tag: str, code: int
) -> None:
    workflow = load(RELEASE.read_text(encoding="utf-8"))
    check = runner.step(workflow, "build", name="Check that the tag names this version")
    (tmp_path / "checkout" / "prhub").mkdir(parents=True)
    shutil.copy(ROOT / "prhub" / "__init__.py", tmp_path / "checkout" / "prhub")
    done, _ = runner.run_step(
        workflow, "build", check, {"github.ref_name": tag}, tmp_path / "checkout", {}
    )
    assert done.returncode == code, done.stdout + done.stderr


def test_the_release_names_its_own_repository_as_the_actions_home(tmp_path: Path) -> None:
    workflow = load(RELEASE.read_text(encoding="utf-8"))
    stamp = runner.step(workflow, "build", name="Name this repository in the metadata")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(ROOT / "pyproject.toml", checkout)
    where = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/prhub"}
    done, _ = runner.run_step(workflow, "build", stamp, {}, checkout, where)
    assert done.returncode == 0, done.stderr

    def repository(pyproject: Path) -> str:
        return str(tomllib.loads(pyproject.read_text())["project"]["urls"]["Repository"])

    assert ci.home(meta(f"Repository, {repository(checkout / 'pyproject.toml')}")) == "acme/prhub"
    assert ci.home(meta(f"Repository, {repository(ROOT / 'pyproject.toml')}")) is None  # unset
