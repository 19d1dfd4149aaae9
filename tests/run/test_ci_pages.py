"""The GitHub Pages workflow of `init-ci --pages`: its shape, its scripts run by bash on the
stand-ins, and the store rebuilt from the published site when the cache is gone."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from prhub.cli import app
from prhub.errors import ConfigError
from prhub.run.ci import (
    INSTALL_PLACEHOLDER,
    PAGES_WORKFLOW,
    WORKFLOW,
    init_ci,
    next_steps,
    workflow_text,
)
from tests.factories import closed_port_url
from tests.standins import GitHubStandIn, LLMStandIn, runner
from tests.standins.pages import PagesStandIn
from tests.standins.runner import EXPRESSION, triggers

JOB = "build"
REPORT = Path("reports/acme/rocket/2026-W31.md")
WEEK_JSON = Path("acme/rocket/2026-W31.json")  # where the site keeps the week's JSON
RESTORE = "Restore the store from the published site"
ECHO_PRHUB = 'prhub() { printf "<%s>\\n" "$@"; }\n'
# The dev extra's tools sit beside this Python, whether or not its environment is activated.
BIN = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
ACTIONLINT = shutil.which("actionlint", path=BIN)
HAS_SITE = "site" in getattr(typer.main.get_command(app), "commands", {})


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(workflow_text(pages=True))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def commit_mode() -> dict[Any, Any]:
    data = yaml.safe_load(workflow_text())
    assert isinstance(data, dict)
    return data


def steps(workflow: dict[Any, Any]) -> list[dict[str, Any]]:
    return runner.steps(workflow, JOB)


def step(workflow: dict[Any, Any], *, id: str = "", uses: str = "", name: str = "") -> Any:
    """The one step of the build job with this id, action (without version) or name."""
    return runner.step(workflow, JOB, id=id, uses=uses, name=name)


def run_step(
    workflow: dict[Any, Any],
    target: dict[str, Any],
    values: dict[str, str],
    cwd: Path,
    env: dict[str, str] | None = None,
    prelude: str = "",
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Runs a step of the build job as an Actions runner would; returns it and its outputs."""
    cwd.mkdir(exist_ok=True)
    return runner.run_step(workflow, JOB, target, values, cwd, env or {}, prelude)


def restore_from(workflow: dict[Any, Any], site_url: str, checkout: Path) -> Any:
    """The restore step run in `checkout` against the site published at `site_url`."""
    values = {"steps.pages.outputs.base_url": site_url}
    done, _ = run_step(workflow, step(workflow, name=RESTORE), values, checkout)
    return done


# Its shape


def test_it_runs_when_the_commit_mode_runs(
    workflow: dict[Any, Any], commit_mode: dict[Any, Any]
) -> None:
    assert triggers(workflow) == triggers(commit_mode)
    assert triggers(workflow)["schedule"] == [{"cron": "0 1 * * 1"}]  # 09:00 in UTC+8


def test_least_privilege_and_one_run_at_a_time(workflow: dict[Any, Any]) -> None:
    assert workflow["permissions"] == {"contents": "read"}
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert build["permissions"] == {"contents": "read", "pull-requests": "read", "pages": "read"}
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert step(workflow, uses="actions/checkout")["with"]["persist-credentials"] is False
    assert workflow["concurrency"] == {"group": "prhub-pages", "cancel-in-progress": False}
    assert build["timeout-minutes"] > 0 and deploy["timeout-minutes"] > 0
    assert workflow["defaults"]["run"]["shell"] == "bash"  # -eo pipefail, as BASH runs it


def test_actions_pinned_to_the_commit_modes_major_versions(
    workflow: dict[Any, Any], commit_mode: dict[Any, Any]
) -> None:
    def pins(w: dict[Any, Any]) -> dict[str, str]:
        used = [s["uses"] for job in w["jobs"].values() for s in job["steps"] if "uses" in s]
        for uses in used:
            assert re.fullmatch(r"actions/[\w/-]+@v\d+", uses), uses
        return dict(u.split("@") for u in used)

    ours, theirs = pins(workflow), pins(commit_mode)
    pages = {"actions/configure-pages", "actions/upload-pages-artifact", "actions/deploy-pages"}
    assert pages < set(ours)
    for action in set(ours) & set(theirs):
        assert ours[action] == theirs[action], action


def test_the_deploy_job_publishes_what_the_build_job_uploaded(workflow: dict[Any, Any]) -> None:
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    site, upload = step(workflow, id="site"), step(workflow, uses="actions/upload-pages-artifact")
    assert site["run"].split() == ["prhub", "site", upload["with"]["path"]]
    assert upload["id"] == "artifact" and upload["if"] == "steps.site.outcome == 'success'"
    assert site["if"] == "steps.prhub.outputs.status == '0' || steps.prhub.outputs.status == '12'"
    assert build["outputs"]["deploy"] == "${{ steps.artifact.outcome == 'success' }}"
    # Also when the build job failed after the upload (exit 12 fails it at its last step).
    assert deploy["needs"] == "build"
    assert deploy["if"] == "${{ !cancelled() && needs.build.outputs.deploy == 'true' }}"
    [publish] = deploy["steps"]
    assert publish["uses"].startswith("actions/deploy-pages@") and publish["id"] == "deployment"
    url = "${{ steps.ID.outputs.page_url }}".replace("ID", publish["id"])
    assert deploy["environment"] == {"name": "github-pages", "url": url}
    last = steps(workflow)[-1]
    assert last["if"] == "always() && steps.prhub.outcome == 'failure'"
    assert last["run"].rstrip().endswith("exit 1")


def test_steps_in_their_order(workflow: dict[Any, Any]) -> None:
    order = [s.get("name") or s["uses"].split("@")[0] for s in steps(workflow)]
    assert order == [
        "actions/checkout",
        "actions/setup-python",
        "Restore the store",
        "Install prhub",
        "Install Chinese fonts",  # fails before any call is paid for
        "Configure Pages",
        RESTORE,
        "Write the weekly report",
        "Save the store",
        "Build the site",
        "Upload the site",
        "Fail if prhub failed",
    ]
    assert step(workflow, name=RESTORE)["env"]["SITE_URL"] == "${{ steps.pages.outputs.base_url }}"
    assert step(workflow, uses="actions/configure-pages")["id"] == "pages"
    assert "apt-get install" in step(workflow, name="Install Chinese fonts")["run"]
    assert "fonts-noto-cjk" in step(workflow, name="Install Chinese fonts")["run"]


def test_store_cached_apart_from_the_commit_modes(
    workflow: dict[Any, Any], commit_mode: dict[Any, Any]
) -> None:
    assert workflow["env"]["PRHUB_STORE"] == commit_mode["env"]["PRHUB_STORE"] == ".prhub/prhub.db"
    restore = step(workflow, uses="actions/cache/restore")
    assert restore["with"]["path"] == ".prhub/"
    assert "github.run_id" in restore["with"]["key"]
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])
    other = runner.step(commit_mode, "weekly", uses="actions/cache/restore")
    assert not other["with"]["restore-keys"].startswith(restore["with"]["restore-keys"])
    assert not restore["with"]["restore-keys"].startswith(other["with"]["restore-keys"])
    save = step(workflow, uses="actions/cache/save")
    assert save["with"]["path"] == ".prhub/"
    assert save["with"]["key"] == "${{ steps.store.outputs.cache-primary-key }}"
    # Kept after a partial failure, never after a failed import left a part of the store.
    assert save["if"] == (
        "always() && steps.prhub.outcome != 'skipped' && hashFiles('.prhub/**') != ''"
    )


def test_install_step_and_secrets_as_in_the_commit_mode(
    workflow: dict[Any, Any], commit_mode: dict[Any, Any]
) -> None:
    install = step(workflow, name="Install prhub")
    assert install == runner.step(commit_mode, "weekly", name="Install prhub")
    assert workflow["env"]["PRHUB_INSTALL"] == INSTALL_PLACEHOLDER
    assert workflow_text(pages=True).count(json.dumps(INSTALL_PLACEHOLDER)) == 1
    env = step(workflow, id="prhub")["env"]
    assert env == runner.step(commit_mode, "weekly", id="prhub")["env"]
    assert env["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    everywhere = json.dumps(workflow)
    assert everywhere.count("secrets.") == json.dumps(env).count("secrets.") == 2
    assert step(workflow, id="prhub")["continue-on-error"] is True


def test_no_expression_inside_a_script(workflow: dict[Any, Any]) -> None:
    """Expressions are pasted into scripts before bash runs: inputs there are an injection."""
    scripts = [s["run"] for job in workflow["jobs"].values() for s in job["steps"] if "run" in s]
    assert len(scripts) >= 5
    for script in scripts:
        assert "${{" not in script, script


# Its scripts, run


@pytest.mark.parametrize(
    ("week", "year", "extra"),
    [
        ("", "", []),
        ("31", "2026", ["--week", "31", "--year", "2026"]),
        ("$(touch pwned); 7", "", ["--week", "$(touch pwned); 7"]),
    ],
)
def test_inputs_become_flags_only_when_given(
    workflow: dict[Any, Any], tmp_path: Path, week: str, year: str, extra: list[str]
) -> None:
    checkout = tmp_path / "checkout"
    values = dict.fromkeys(EXPRESSION.findall(json.dumps(step(workflow, id="prhub"))), "x")
    values.update({"github.repository": "acme/rocket", "inputs.week": week, "inputs.year": year})
    done, outputs = run_step(workflow, step(workflow, id="prhub"), values, checkout, {}, ECHO_PRHUB)
    assert done.returncode == 0, done.stderr
    argv = ["weekly", "--repo", "acme/rocket", *extra]
    assert done.stdout.splitlines() == [f"<{arg}>" for arg in argv]
    assert outputs == {"status": "0"}
    assert not (checkout / "pwned").exists()


def test_a_partial_failure_still_builds_the_site(workflow: dict[Any, Any], tmp_path: Path) -> None:
    partial = "prhub() { echo 'prhub: error: 1 PR(s) failed' >&2; return 12; }\n"
    values = dict.fromkeys(EXPRESSION.findall(json.dumps(step(workflow, id="prhub"))), "")
    weekly = step(workflow, id="prhub")
    done, outputs = run_step(workflow, weekly, values, tmp_path / "c", {}, partial)
    assert done.returncode == 12
    assert outputs == {"status": "12"}  # which the site step's condition accepts
    assert "prhub: error: 1 PR(s) failed" in done.stderr  # still in the job's log
    site, _ = run_step(workflow, step(workflow, id="site"), {}, tmp_path / "c", {}, ECHO_PRHUB)
    assert site.returncode == 0 and site.stdout == "<site>\n<site/>\n"


def test_a_store_from_the_cache_is_kept_as_it_is(workflow: dict[Any, Any], tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".prhub").mkdir(parents=True)
    (checkout / ".prhub" / "prhub.db").write_bytes(b"cached")
    with PagesStandIn(tmp_path / "published") as pages:
        done = restore_from(workflow, pages.url, checkout)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "The store came from the cache: nothing to import\n"
    assert pages.requests == []
    assert (checkout / ".prhub" / "prhub.db").read_bytes() == b"cached"


def test_nothing_published_yet_starts_empty(workflow: dict[Any, Any], tmp_path: Path) -> None:
    (tmp_path / "published").mkdir()
    with PagesStandIn(tmp_path / "published") as pages:
        done = restore_from(workflow, pages.url, tmp_path / "checkout")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"::notice::Nothing is published at {pages.url} yet: starting with an empty store\n"
    )
    assert [r["path"] for r in pages.requests] == ["/rocket/index.html"]
    assert not (tmp_path / "checkout" / ".prhub").exists()


def contract_site(root: Path, week_json: Path | None) -> None:
    """A site in the layout `prhub site` writes, around one week's JSON (None: a dead link)."""
    repo = root / "acme" / "rocket"
    (repo / "pr").mkdir(parents=True)
    (root / "index.html").write_text(
        '<a href="acme/rocket/index.html">acme/rocket</a>'
        '<a href="acme/rocket/2026-W31.html">W31</a>'
    )
    (root / "search.json").write_text("[]")
    links = ["../../index.html", "2026-W31.html", "tags.html", "feed.xml", "pr/101.html"]
    (repo / "index.html").write_text("".join(f'<a href="{link}">x</a>' for link in links))
    downloads = ["index.html", "2026-W31.md", "2026-W31.pdf", "2026-W31.json", "pr/101.html"]
    (repo / "2026-W31.html").write_text("".join(f'<a href="{x}">x</a>' for x in downloads))
    for name in ("tags.html", "pr/101.html"):
        (repo / name).write_text('<a href="index.html">x</a> <a href="../index.html">x</a>')
    for name in ("2026-W31.md", "2026-W31.pdf", "feed.xml"):
        (repo / name).write_text("x")
    if week_json is not None:
        shutil.copyfile(week_json, root / WEEK_JSON)


@pytest.mark.skipif(shutil.which("wget") is None, reason="wget is not installed")
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_store_comes_back_from_the_published_site(
    workflow: dict[Any, Any], github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path
) -> None:
    """A week made on one runner, published; on the next, with the cache gone, the week is
    rebuilt from the site's JSON alone and costs no LLM call: the same report, byte for byte."""
    values, env = runner.weekly_values(github, llm)
    first, second = tmp_path / "first", tmp_path / "second"
    weekly = step(workflow, id="prhub")
    done, _ = run_step(workflow, weekly, values, first, env)
    assert done.returncode == 0, done.stdout + done.stderr
    # The week's JSON as prhub publishes it, made with the weekly step's own settings.
    export = {**weekly, "run": 'prhub weekly --repo "$REPO" --week 31 --year 2026 --out "$OUT"'}
    done, _ = run_step(workflow, export, values, first, {**env, "OUT": str(tmp_path / "w.json")})
    assert done.returncode == 0, done.stderr
    contract_site(tmp_path / "published", tmp_path / "w.json")
    with PagesStandIn(tmp_path / "published") as pages:
        pages.script(r"/index\.html$", [(503, {}, b"busy")])  # curl retries it
        done = restore_from(workflow, pages.url, second)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "prhub: imported 6 digests and 1 week from " in done.stderr
    fetched = {r["path"] for r in pages.requests}
    assert fetched == {
        "/rocket/index.html",
        "/rocket/",
        "/rocket/acme/rocket/index.html",
        "/rocket/acme/rocket/2026-W31.html",
        f"/rocket/{WEEK_JSON}",
    }  # never the digests' pages, the downloads or feeds the import has no use for
    calls = len(llm.bodies)
    done, outputs = run_step(workflow, weekly, values, second, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs == {"status": "0"}
    assert len(llm.bodies) == calls  # no LLM call
    assert (second / REPORT).read_bytes() == (first / REPORT).read_bytes()


@pytest.mark.skipif(shutil.which("wget") is None, reason="wget is not installed")
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("fault", ["403", "dead link", "refused"])
def test_a_site_that_cannot_be_read_stops_the_run(
    workflow: dict[Any, Any], tmp_path: Path, fault: str
) -> None:
    """Building on an empty store would publish a site without the weeks it could not read."""
    contract_site(tmp_path / "published", None)  # the week's JSON is a dead link
    with PagesStandIn(tmp_path / "published") as pages:
        if fault == "403":
            pages.script(r"/index\.html$", [(403, {}, b"no access")])
        url = closed_port_url() + "/rocket" if fault == "refused" else pages.url
        done = restore_from(workflow, url, tmp_path / "checkout")
    assert done.returncode != 0
    if fault == "403":
        assert done.stdout == (
            f"::error::{url}/index.html answered HTTP 403: cannot restore the store from the "
            "published site; re-run when it is reachable\n"
        )
    elif fault == "dead link":
        assert f"/rocket/{WEEK_JSON}" in {r["path"] for r in pages.requests}
        assert "404" in done.stderr
    assert not (tmp_path / "checkout" / ".prhub").exists()


@pytest.mark.skipif(not HAS_SITE, reason="prhub has no `site` command yet")
@pytest.mark.skipif(shutil.which("wget") is None, reason="wget is not installed")
def test_the_built_site_is_published_and_restores_the_store(
    workflow: dict[Any, Any], github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path
) -> None:
    """The whole build job on two runners: the second, its cache gone, imports the first one's
    site, pays no LLM call and builds the same site."""
    values, env = runner.weekly_values(github, llm)
    first, second = tmp_path / "first", tmp_path / "second"
    for name in ("prhub", "site"):
        done, _ = run_step(workflow, step(workflow, id=name), values, first, env)
        assert done.returncode == 0, done.stdout + done.stderr
    assert (first / "site" / "index.html").is_file()
    assert (first / "site" / WEEK_JSON).is_file()
    with PagesStandIn(first / "site") as pages:
        done = restore_from(workflow, pages.url, second)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "prhub: imported 6 digests and 1 week from " in done.stderr
    calls = len(llm.bodies)
    for name in ("prhub", "site"):
        done, _ = run_step(workflow, step(workflow, id=name), values, second, env)
        assert done.returncode == 0, done.stdout + done.stderr
    assert len(llm.bodies) == calls
    built, again = tree(first / "site"), tree(second / "site")
    assert again.keys() == built.keys()
    assert [p for p in built if built[p] != again[p]] == []


def tree(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# init-ci --pages


def test_init_ci_pages_writes_refuses_then_overwrites_with_force(tmp_path: Path) -> None:
    path = init_ci(tmp_path, install=INSTALL_PLACEHOLDER, pages=True)
    assert path == tmp_path / PAGES_WORKFLOW == tmp_path / ".github/workflows/prhub-pages.yml"
    assert path.read_text(encoding="utf-8") == workflow_text(pages=True)
    assert not (tmp_path / WORKFLOW).exists()  # the commit mode stays the default, not added
    path.write_text("edited by the team\n")
    with pytest.raises(ConfigError, match="--force"):
        init_ci(tmp_path, install=INSTALL_PLACEHOLDER, pages=True)
    assert path.read_text() == "edited by the team\n"
    assert init_ci(tmp_path, force=True, install=INSTALL_PLACEHOLDER, pages=True) == path
    assert path.read_text(encoding="utf-8") == workflow_text(pages=True)


def test_init_ci_pages_sets_the_install_requirement(tmp_path: Path) -> None:
    wanted = "prhub @ git+https://github.com/acme/prhub@v0.2.0"
    path = init_ci(tmp_path, install="https://github.com/acme/prhub@v0.2.0", pages=True)
    written = yaml.safe_load(path.read_text(encoding="utf-8"))
    expected = yaml.safe_load(workflow_text(pages=True))
    expected["env"]["PRHUB_INSTALL"] = wanted
    assert written == expected


def test_next_steps_name_the_pages_source_and_a_second_workflow(tmp_path: Path) -> None:
    path = init_ci(tmp_path, install=INSTALL_PLACEHOLDER, pages=True)
    text = next_steps(path, INSTALL_PLACEHOLDER, pages=True)
    assert 'Settings > Pages > Build and deployment > Source: "GitHub Actions"' in text
    assert "rerun with --pages --force --install GIT_URL" in text
    assert "also runs prhub weekly" not in text
    commit = init_ci(tmp_path, install=INSTALL_PLACEHOLDER)
    assert f"{path} also runs prhub weekly" in next_steps(commit, INSTALL_PLACEHOLDER)
    assert "Settings > Pages" not in next_steps(commit, INSTALL_PLACEHOLDER)
    assert f"{commit} also runs prhub weekly" in next_steps(path, INSTALL_PLACEHOLDER, pages=True)


@pytest.mark.skipif(ACTIONLINT is None, reason="actionlint is not installed (dev extra)")
@pytest.mark.parametrize("install", [INSTALL_PLACEHOLDER, "https://github.com/acme/prhub@v0.2.0"])
def test_actionlint_accepts_both_workflows(tmp_path: Path, install: str) -> None:
    """With shellcheck beside it (dev extra), actionlint checks the steps' scripts too."""
    written = [init_ci(tmp_path, install=install, pages=pages) for pages in (False, True)]
    command = [str(ACTIONLINT), *map(str, written)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PATH": BIN})
    assert done.returncode == 0, done.stdout + done.stderr
