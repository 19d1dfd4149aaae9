"""The shipped GitHub Actions workflow: its shape, its scripts run by bash, and `init_ci`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from prhub import __version__
from prhub.errors import ConfigError
from prhub.run import ci
from prhub.run.ci import (
    INSTALL_PLACEHOLDER,
    WORKFLOW,
    init_ci,
    next_steps,
    requirement,
    workflow_text,
)
from tests.factories import FIXTURES
from tests.standins import GitHubStandIn, LLMStandIn, runner
from tests.standins.runner import EXPRESSION, triggers

REPORT = "reports/acme/rocket/2026-W31.md"
JOB = "weekly"


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(workflow_text())
    assert isinstance(data, dict)
    return data


def steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return runner.steps(workflow, JOB)


def prhub_step(workflow: dict[Any, Any]) -> dict[str, Any]:
    return step(workflow, id="prhub")


def step(workflow: dict[Any, Any], *, id: str = "", uses: str = "", name: str = "") -> Any:
    """The one step of the weekly job with this id, action (without version) or name."""
    return runner.step(workflow, JOB, id=id, uses=uses, name=name)


def run_step(
    workflow: dict[Any, Any],
    target: dict[str, Any],
    values: dict[str, str],
    cwd: Path,
    env: dict[str, str],
    prelude: str = "",
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Runs a step of the weekly job as an Actions runner would; returns it and its outputs."""
    return runner.run_step(workflow, JOB, target, values, cwd, env, prelude)


def test_weekly_on_monday_morning_beijing_and_by_hand(workflow: dict[Any, Any]) -> None:
    on = triggers(workflow)
    assert on["schedule"] == [{"cron": "0 1 * * 1"}]  # 09:00 in UTC+8
    inputs = on["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"week", "year"}
    for spec in inputs.values():
        assert spec["required"] is False
        assert spec["default"] == ""


def test_least_privilege_and_one_run_at_a_time(workflow: dict[Any, Any]) -> None:
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "read"}
    assert "permissions" not in workflow["jobs"]["weekly"]
    assert workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    assert workflow["jobs"]["weekly"]["timeout-minutes"] > 0
    assert workflow["defaults"]["run"]["shell"] == "bash"  # -eo pipefail, as BASH runs it


def test_actions_pinned_to_major_versions(workflow: dict[Any, Any]) -> None:
    for s in steps(workflow):
        if "uses" in s:
            assert re.fullmatch(r"actions/[\w/-]+@v\d+", s["uses"]), s["uses"]


def test_store_restored_by_prefix_and_saved_under_a_new_key(workflow: dict[Any, Any]) -> None:
    assert workflow["env"]["PRHUB_STORE"] == ".prhub/prhub.db"
    restore = step(workflow, uses="actions/cache/restore")
    assert restore["with"]["path"] == ".prhub/"
    assert "github.run_id" in restore["with"]["key"]
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])
    save = step(workflow, uses="actions/cache/save")
    assert save["with"]["path"] == ".prhub/"
    key = "${{ steps.ID.outputs.cache-primary-key }}".replace("ID", restore["id"])
    assert save["with"]["key"] == key
    assert save["if"].startswith("always()")  # saved after a partial failure too
    order = steps(workflow)
    assert order.index(restore) < order.index(step(workflow, id="prhub")) < order.index(save)


def test_secrets_from_secrets_settings_from_vars(workflow: dict[Any, Any]) -> None:
    env = step(workflow, id="prhub")["env"]
    assert env["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    assert env["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"
    assert env["OPENAI_BASE_URL"] == "${{ vars.OPENAI_BASE_URL }}"
    assert env["PRHUB_MODEL"] == "${{ vars.PRHUB_MODEL }}"
    assert "secrets." not in json.dumps(workflow["env"])  # only the step that needs them


def test_no_expression_inside_a_script(workflow: dict[Any, Any]) -> None:
    """Expressions are pasted into scripts before bash runs: inputs there are an injection."""
    scripts = [s["run"] for s in steps(workflow) if "run" in s]
    assert len(scripts) >= 3
    for script in scripts:
        assert "${{" not in script, script


def test_prhub_step_survives_a_partial_failure(workflow: dict[Any, Any]) -> None:
    prhub = step(workflow, id="prhub")
    assert prhub["continue-on-error"] is True
    assert "prhub weekly --repo" in prhub["run"]
    # The shipped file installs this release from the package index.
    assert workflow["env"]["PRHUB_INSTALL"] == INSTALL_PLACEHOLDER == f"prhub=={__version__}"
    assert workflow_text().count(json.dumps(INSTALL_PLACEHOLDER)) == 1
    install = step(workflow, name="Install prhub")
    assert '"$PRHUB_INSTALL"' in install["run"]


@pytest.mark.parametrize(
    ("summary", "code"),
    [
        ("Chinese digests of merged GitHub pull requests: one per PR, one per ISO week.", 0),
        ("One GitHub poller for many coding agents", 1),  # the index's other prhub
    ],
)
def test_install_step_stops_when_the_index_gave_another_prhub(
    workflow: dict[Any, Any], tmp_path: Path, summary: str, code: int
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    # pip itself is not run: `python -m pip install` succeeds, `pip show` names the project.
    fake_pip = (
        'python() { [ "$3" != show ] || printf "Name: prhub\\nSummary: %s\\n" "$SUMMARY"; }\n'
    )
    install = step(workflow, name="Install prhub")
    env = {"SUMMARY": summary}
    done, _ = run_step(workflow, {"env": {}, **install}, {}, checkout, env, fake_pip)
    assert done.returncode == code, done.stdout + done.stderr
    if code:
        assert done.stdout == (
            f"::error::{INSTALL_PLACEHOLDER} is another project named prhub ({summary}): "
            "set PRHUB_INSTALL to this prhub's git URL or wheel\n"
        )


def test_report_uploaded_and_committed_whenever_written(workflow: dict[Any, Any]) -> None:
    upload = step(workflow, uses="actions/upload-artifact")
    commit = step(workflow, name="Commit the report")
    for s in (upload, commit):
        assert s["if"] == "always() && steps.prhub.outputs.report != ''"
    assert upload["with"]["path"] == "${{ steps.prhub.outputs.report }}"
    assert "git push" in commit["run"]
    last = steps(workflow)[-1]
    assert last["if"] == "always() && steps.prhub.outcome == 'failure'"
    assert last["run"].rstrip().endswith("exit 1")


def test_prhub_step_writes_the_report(
    workflow: dict[Any, Any], github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path
) -> None:
    """The step's exact script and env, expressions filled in, run by bash on the stand-ins."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    values, env = runner.weekly_values(github, llm)
    done, outputs = run_step(workflow, prhub_step(workflow), values, checkout, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs == {"report": REPORT, "status": "0"}
    text = (checkout / REPORT).read_text(encoding="utf-8")
    golden = FIXTURES / "golden" / "weekly-acme-rocket-2026-W31.md"
    assert text.splitlines()[0] == golden.read_text(encoding="utf-8").splitlines()[0]
    assert (checkout / ".prhub" / "prhub.db").is_file()  # where the cache steps look
    assert {r["path"] for r in github.requests}  # really talked to the stand-ins
    assert llm.requests


ECHO_PRHUB = 'prhub() { printf "<%s>\\n" "$@"; }\n'


@pytest.mark.parametrize(
    ("week", "year", "extra"),
    [
        ("", "", []),
        ("31", "", ["--week", "31"]),
        ("31", "2026", ["--week", "31", "--year", "2026"]),
        ("$(touch pwned); 7", "", ["--week", "$(touch pwned); 7"]),
    ],
)
def test_inputs_become_flags_only_when_given(
    workflow: dict[Any, Any], tmp_path: Path, week: str, year: str, extra: list[str]
) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    values = {k: "x" for k in ("secrets.GITHUB_TOKEN", "secrets.OPENAI_API_KEY")}
    values.update({"vars.OPENAI_BASE_URL": "", "vars.PRHUB_MODEL": ""})
    values.update({"github.repository": "acme/rocket", "inputs.week": week, "inputs.year": year})
    done, outputs = run_step(workflow, prhub_step(workflow), values, checkout, {}, ECHO_PRHUB)
    assert done.returncode == 0, done.stderr
    argv = ["weekly", "--repo", "acme/rocket", *extra]
    assert done.stdout.splitlines() == [f"<{arg}>" for arg in argv]
    assert outputs == {"status": "0"}  # nothing written, so no report for later steps
    assert not (checkout / "pwned").exists()


def test_partial_failure_still_names_the_report(workflow: dict[Any, Any], tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    partial = (
        "prhub() { mkdir -p reports/acme/rocket && echo '# report' > " + REPORT + "\n"
        "  echo 'prhub: wrote " + REPORT + "' >&2; echo 'prhub: error: 1 PR(s) failed' >&2\n"
        "  return 12; }\n"
    )
    values = dict.fromkeys(EXPRESSION.findall(json.dumps(step(workflow, id="prhub"))), "")
    done, outputs = run_step(workflow, prhub_step(workflow), values, checkout, {}, partial)
    assert done.returncode == 12
    assert outputs == {"report": REPORT, "status": "12"}
    assert "prhub: error: 1 PR(s) failed" in done.stdout  # still in the job's log


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_commit_step_pushes_once_and_only_a_change(
    workflow: dict[Any, Any], tmp_path: Path
) -> None:
    def git(*args: str, cwd: Path = tmp_path) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
        ).stdout

    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "someone",
        "GIT_AUTHOR_EMAIL": "someone@example.com",
        "GIT_COMMITTER_NAME": "someone",
        "GIT_COMMITTER_EMAIL": "someone@example.com",
    }
    git("init", "--quiet", "--bare", "--initial-branch=main", "origin.git")
    git("clone", "--quiet", "origin.git", "seed")
    seed = tmp_path / "seed"
    (seed / "README.md").write_text("rocket\n")
    (seed / ".gitignore").write_text("/reports/\n")  # as prhub's own repository has
    git("add", ".", cwd=seed)
    git("commit", "--quiet", "-m", "start", cwd=seed)
    git("push", "--quiet", "origin", "HEAD:main", cwd=seed)
    git("clone", "--quiet", "--depth=1", f"file://{tmp_path / 'origin.git'}", "checkout")
    checkout = tmp_path / "checkout"
    (checkout / "reports/acme/rocket").mkdir(parents=True)
    (checkout / REPORT).write_text("# report\n")
    (seed / "NEWS.md").write_text("pushed while prhub ran\n")
    git("add", ".", cwd=seed)
    git("commit", "--quiet", "-m", "meanwhile", cwd=seed)
    git("push", "--quiet", "origin", "HEAD:main", cwd=seed)

    values = {"steps.prhub.outputs.report": REPORT}
    commit = step(workflow, name="Commit the report")
    runner_env = {"GIT_CONFIG_NOSYSTEM": "1"}  # the step sets the identity itself
    for _ in range(2):
        done, _outputs = run_step(workflow, commit, values, checkout, runner_env)
        assert done.returncode == 0, done.stdout + done.stderr
        log = git("log", "--format=%an|%s", "main", cwd=tmp_path / "origin.git")
        assert log.splitlines() == [
            "github-actions[bot]|prhub: weekly report 2026-W31",
            "someone|meanwhile",
            "someone|start",
        ]
    assert "nothing to commit" in done.stdout


def test_init_ci_writes_refuses_then_overwrites_with_force(tmp_path: Path) -> None:
    path = init_ci(tmp_path, install=INSTALL_PLACEHOLDER)
    assert path == tmp_path / ".github" / "workflows" / "prhub-weekly.yml" == tmp_path / WORKFLOW
    assert path.read_text(encoding="utf-8") == workflow_text()
    path.write_text("edited by the team\n")
    with pytest.raises(ConfigError, match="--force") as failure:
        init_ci(tmp_path, install=INSTALL_PLACEHOLDER)
    assert "\n" not in str(failure.value)
    assert path.read_text() == "edited by the team\n"
    assert init_ci(tmp_path, force=True, install=INSTALL_PLACEHOLDER) == path
    assert path.read_text(encoding="utf-8") == workflow_text()


@pytest.mark.parametrize(
    ("install", "wanted"),
    [
        ("prhub==0.3.1", "prhub==0.3.1"),
        (
            "prhub @ git+https://github.com/acme/prhub@5f1c2e9",
            "prhub @ git+https://github.com/acme/prhub@5f1c2e9",
        ),
        (
            "https://github.com/acme/prhub@v0.2.0",
            "prhub @ git+https://github.com/acme/prhub@v0.2.0",
        ),
        ("git+ssh://git@host/acme/prhub.git", "prhub @ git+ssh://git@host/acme/prhub.git"),
        ("https://x/prhub-0.2-py3-none-any.whl", "prhub @ https://x/prhub-0.2-py3-none-any.whl"),
        ('prhub @ https://x/"q"\\w.whl', 'prhub @ https://x/"q"\\w.whl'),
    ],
)
def test_init_ci_sets_the_install_requirement(
    tmp_path: Path, install: str | None, wanted: str
) -> None:
    assert requirement(install) == wanted
    path = init_ci(tmp_path, install=install)
    written = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert written["env"]["PRHUB_INSTALL"] == wanted
    expected = yaml.safe_load(workflow_text())
    expected["env"]["PRHUB_INSTALL"] = wanted
    assert written == expected
    assert f"It installs {wanted} (" in next_steps(path, install)


def test_init_ci_refuses_a_target_that_is_not_a_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-checkout"
    with pytest.raises(ConfigError) as failure:
        init_ci(missing)
    assert str(failure.value) == (
        f"{missing} does not exist: give the checkout of the repository to add it to"
    )
    assert not missing.exists()  # nothing created on the way
    a_file = tmp_path / "README.md"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match="is not a directory"):
        init_ci(a_file)


@pytest.mark.parametrize(
    ("record", "wanted"),
    [
        (
            {
                "url": "https://github.com/acme/prhub",
                "vcs_info": {"vcs": "git", "commit_id": "ab12"},
            },
            "prhub @ git+https://github.com/acme/prhub@ab12",
        ),
        (
            {"url": "https://x/prhub-0.2-py3-none-any.whl", "archive_info": {"hashes": {}}},
            "prhub @ https://x/prhub-0.2-py3-none-any.whl",
        ),
        ({"url": "file:///src/prhub", "dir_info": {"editable": True}}, "prhub @ file:///src/prhub"),
        ({"url": "https://hg/x", "vcs_info": {"vcs": "hg"}}, None),
        (None, None),
    ],
)
def test_the_install_line_comes_from_pep_610(record: dict[str, Any] | None, wanted: str | None):
    assert ci.from_record(record) == wanted


def test_the_running_prhub_is_read_from_its_direct_url_json() -> None:
    from importlib import metadata

    text = metadata.distribution("prhub").read_text("direct_url.json")
    assert ci.installed() == (json.loads(text) if text else None)


def test_the_written_install_line_installs_this_prhub_in_a_fresh_venv(tmp_path: Path) -> None:
    """The line `init-ci` writes, installed offline into a new virtual environment: prhub's
    own dependencies come from this one (a .pth), prhub itself from what the line names."""
    pytest.importorskip("hatchling", reason="building prhub offline needs hatchling (dev extra)")
    import sysconfig
    import venv

    record = ci.installed()
    if record is None or not record["url"].startswith("file:"):
        pytest.skip(f"this prhub was not installed from a local path ({record}): needs the network")
    repo = tmp_path / "checkout"
    repo.mkdir()
    wanted = yaml.safe_load(init_ci(repo).read_text(encoding="utf-8"))["env"]["PRHUB_INSTALL"]
    assert wanted == f"prhub @ {record['url']}"
    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
    done = subprocess.run(
        [*pip, "--no-build-isolation", wanted], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run([fresh / "bin" / "prhub", "--version"], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == f"prhub {__version__}\n"
    # Installed there, not found elsewhere.
    assert Path(site, "prhub", "cli", "commands.py").is_file()
