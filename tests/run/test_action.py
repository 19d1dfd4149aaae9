"""prhub's Action (action.yml): its steps' own scripts, run by bash as a runner runs them, in a
fresh virtual environment on the stand-ins: prhub installed from the Action's checkout, the
week written, the site built, and the store restored from a published site's manifest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.factories import REPO, ROOT, assert_ok, cli_env, prhub, site_manifest
from tests.standins import GitHubStandIn, LLMStandIn, runner
from tests.standins.pages import PagesStandIn

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS = ACTION["runs"]["steps"]
ECHO_PRHUB = 'prhub() { printf "<%s>\\n" "$@"; }\n'
REPORT = "reports/acme/rocket/2026-W31.md"
RESTORE = "Restore the store from the published site"


def step(name: str) -> dict[str, Any]:
    [found] = [s for s in STEPS if s.get("name") == name or s.get("id") == name]
    return found


def run(
    name: str,
    given: dict[str, str],
    cwd: Path,
    env: dict[str, str] | None = None,
    prelude: str = "",
    **values: str,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The step's script with the Action's inputs (its defaults, then `given`) and `values`."""
    cwd.mkdir(parents=True, exist_ok=True)
    filled = {**runner.action_values(ACTION, given), **values}
    return runner.run_action_step(step(name), filled, cwd, env or {}, prelude, timeout=300)


# Its shape


def test_a_composite_action_in_the_order_a_run_needs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    order = [s.get("name") or s["uses"].split("@")[0] for s in STEPS]
    assert order == [
        "actions/setup-python",
        "Restore the store",
        "Install prhub",
        "Install Chinese fonts",  # before any call is paid for
        "Restore the store from the published site",
        "Write the weekly report",
        "Save the store",
        "Build the site",
        "Fail if prhub failed",
    ]
    assert ACTION["outputs"] == {
        "report": {
            "description": ACTION["outputs"]["report"]["description"],
            "value": "${{ steps.prhub.outputs.report }}",
        },
        "status": {
            "description": ACTION["outputs"]["status"]["description"],
            "value": "${{ steps.prhub.outputs.status }}",
        },
        "site": {
            "description": ACTION["outputs"]["site"]["description"],
            "value": "${{ steps.site.outputs.site }}",
        },
    }


def test_scripts_take_inputs_as_variables_and_secrets_reach_one_step() -> None:
    for s in STEPS:
        if "run" in s:
            assert s["shell"] == "bash" and "${{" not in s["run"], s["name"]
    for secret in ("inputs.openai-api-key", "inputs.github-token", "inputs.notify"):
        holders = [s.get("name") for s in STEPS if secret in json.dumps(s)]
        assert holders == ["Write the weekly report"], (secret, holders)
    assert ACTION["inputs"]["openai-api-key"]["required"] is True
    assert ACTION["inputs"]["github-token"]["default"] == "${{ github.token }}"


def test_the_store_is_kept_after_a_run_and_never_after_a_failed_restore() -> None:
    restore, save = step("Restore the store"), step("Save the store")
    assert restore["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert "github.run_id" in restore["with"]["key"]
    assert save["with"]["key"] == "${{ steps.store.outputs.cache-primary-key }}"
    # A failed restore skips the weekly step, so the half-made store is not saved.
    assert save["if"].startswith("always() && steps.prhub.outcome != 'skipped'")
    assert step("Write the weekly report")["continue-on-error"] is True
    assert "always()" not in step("Write the weekly report").get("if", "")
    site = step("Build the site")
    assert "always()" not in site["if"] and "steps.prhub.outputs.status == '12'" in site["if"]
    assert step("Fail if prhub failed")["if"] == "always() && steps.prhub.outcome == 'failure'"


# Its scripts, run


FAKE_PIP = (
    'python() { echo "python $*" >> calls; [ "$3" != show ] || printf "Name: %s\\nSummary: %s\\n"'
    ' "$4" "$SUMMARY"; }\nprhub() { echo "prhub $*" >> calls; }\n'
)


@pytest.mark.parametrize("install", ["prhub", "Prhub==0.2.1", "prhub @ git+https://x/prhub"])
def test_the_indexs_prhub_is_refused_before_pip_runs(tmp_path: Path, install: str) -> None:
    done, _ = run("Install prhub", {"install": install}, tmp_path / "w", {}, FAKE_PIP)
    assert done.returncode == 1
    assert "names the package index's prhub, another project" in done.stdout
    assert not (tmp_path / "w" / "calls").exists()  # nothing was installed


@pytest.mark.parametrize(
    ("summary", "code"),
    [("Chinese digests of merged GitHub pull requests: one per PR.", 0), ("", 1)],
)
def test_the_install_is_checked_to_be_this_prhub(tmp_path: Path, summary: str, code: int) -> None:
    env = {"SUMMARY": summary, "GITHUB_ACTION_PATH": "/actions/acme/prhub/v0.1.0"}
    done, _ = run("Install prhub", {}, tmp_path / "w", env, FAKE_PIP)
    assert done.returncode == code, done.stdout + done.stderr
    calls = (tmp_path / "w" / "calls").read_text().splitlines()
    assert calls[0].endswith(
        "install --disable-pip-version-check --quiet /actions/acme/prhub/v0.1.0"
    )
    if code:
        assert "did not install prhub (the distribution prhub-digest)" in done.stdout


@pytest.mark.parametrize(
    ("given", "pinned"), [({}, True), ({"install": "prhub-digest==0.1.0"}, False)]
)
def test_its_own_checkout_installs_with_the_tested_versions(
    tmp_path: Path, given: dict[str, str], pinned: bool
) -> None:
    action = tmp_path / "action"
    action.mkdir()
    (action / "constraints.txt").write_text("openai==3.60.0\n")
    env = {
        "SUMMARY": "Chinese digests of merged GitHub pull requests",
        "GITHUB_ACTION_PATH": str(action),
    }
    done, _ = run("Install prhub", given, tmp_path / "w", env, FAKE_PIP)
    assert done.returncode == 0, done.stdout + done.stderr
    install = (tmp_path / "w" / "calls").read_text().splitlines()[0]
    assert (f"--constraint {action}/constraints.txt" in install) is pinned, install
    assert install.endswith(given.get("install", str(action)))


@pytest.mark.parametrize(
    ("given", "argv"),
    [
        ({}, ["weekly"]),
        ({"week": "31", "year": "2026"}, ["weekly", "--week", "31", "--year", "2026"]),
        ({"all": "true", "discuss": "News"}, ["weekly", "--all", "--discuss", "News"]),
        ({"repo": "acme/rocket"}, ["weekly", "--repo", "acme/rocket"]),
        ({"week": "$(touch pwned); 7"}, ["weekly", "--week", "$(touch pwned); 7"]),
    ],
)  # fmt: skip
def test_inputs_become_flags_only_when_given(
    tmp_path: Path, given: dict[str, str], argv: list[str]
) -> None:
    done, outputs = run("prhub", given, tmp_path / "w", {}, ECHO_PRHUB)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"<{arg}>" for arg in argv]
    assert outputs == {"status": "0"}  # nothing written, so no report for later steps
    assert not (tmp_path / "w" / "pwned").exists()


def test_a_partial_failure_still_names_the_report_and_its_status(tmp_path: Path) -> None:
    partial = (
        f"prhub() {{ mkdir -p reports/acme/rocket && echo '# report' > {REPORT}\n"
        f"  echo 'prhub: wrote {REPORT}' >&2; echo 'prhub: error: 1 PR(s) failed' >&2\n"
        "  return 12; }\n"
    )
    done, outputs = run("prhub", {}, tmp_path / "w", {}, partial)
    assert done.returncode == 12
    assert outputs == {"report": REPORT, "status": "12"}
    assert "prhub: error: 1 PR(s) failed" in done.stdout  # still in the job's log


def test_a_store_from_the_cache_is_not_restored_again(tmp_path: Path) -> None:
    (tmp_path / "w" / ".prhub").mkdir(parents=True)
    (tmp_path / "w" / ".prhub" / "prhub.db").write_bytes(b"cached")
    given = {"site-url": "http://127.0.0.1:9/never"}
    done, _ = run(RESTORE, given, tmp_path / "w", {}, "")
    assert (
        done.returncode == 0
        and done.stdout == "The store came from the cache: nothing to restore\n"
    )


# A fresh runner


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A clean virtual environment, as setup-python gives, with prhub installed by the
    Action's own install step from its checkout: offline, its dependencies taken from this
    environment (a .pth), none of this environment's prhub."""
    pytest.importorskip("hatchling", reason="building prhub offline needs hatchling (dev extra)")
    where = tmp_path_factory.mktemp("runner")
    bin_dir = where / "venv" / "bin"
    venv.create(where / "venv", with_pip=False)
    site = subprocess.run(
        [bin_dir / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_ACTION_PATH": str(ROOT),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",  # pip reads 0 here as: build without isolation
    }
    done, _ = run("Install prhub", {}, where / "install", env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("prhub ")  # `prhub --version`
    assert (Path(site) / "prhub" / "cli" / "commands.py").is_file()  # installed there
    assert shutil.which("prhub", path=env["PATH"]) == str(bin_dir / "prhub")
    return env


def test_a_fresh_runner_writes_the_week_and_builds_the_site(
    fresh: dict[str, str], github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path
) -> None:
    given, env = runner.weekly_values(github, llm)
    given["site"] = "site/"
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "prhub.toml").write_text(f'repo = "{REPO}"\n')  # the repository, from the file
    (tmp_path / "published").mkdir()
    with PagesStandIn(tmp_path / "published") as pages:
        given["site-url"] = pages.url
        fonts = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True)
        if shutil.which("fc-list") and fonts.stdout.strip():  # else it would apt-get install
            done, _ = run("Install Chinese fonts", given, work, {**fresh, **env})
            assert done.stdout == "A font for Chinese is installed\n"
        done, _ = run(RESTORE, given, work, {**fresh, **env})
    assert done.returncode == 0, done.stderr
    assert f"nothing is published at {pages.url} yet" in done.stderr
    done, outputs = run("prhub", given, work, {**fresh, **env})
    assert done.returncode == 0, done.stdout + done.stderr
    assert outputs == {"report": REPORT, "status": "0"}
    assert (work / ".prhub" / "prhub.db").is_file()  # where the cache steps look
    built, site = run("site", given, work, {**fresh, **env}, **{"steps.prhub.outputs.status": "0"})
    assert built.returncode == 0, built.stdout + built.stderr
    assert site == {"site": "site/"}
    assert (work / "site" / "index.html").is_file()
    assert (work / "site" / REPO / "2026-W31.html").is_file()
    # The site-url input is the site's address: the feed links absolutely on it.
    feed = (work / "site" / REPO / "feed.xml").read_text(encoding="utf-8")
    assert f'href="{given["site-url"].rstrip("/")}/{REPO}/feed.xml"' in feed
    assert llm.requests and {r["path"] for r in github.requests}  # really the stand-ins


def test_a_store_restored_by_the_actions_step_rebuilds_the_same_site(
    fresh: dict[str, str],
    env: dict[str, str | None],
    github: GitHubStandIn,
    llm: LLMStandIn,
    tmp_path: Path,
) -> None:
    """Default, other-timezone and window reports, published with their manifest: the
    restore step's own script fills an empty store from it, and that store builds the same
    site, byte for byte."""
    for week in (("--week", "31"), ("--week", "31", "--tz", "UTC"), ("--since", "2026-07-27")):
        assert_ok(prhub(env, "weekly", *week, *(("--year", "2026") if "--week" in week else ())))
    published = tmp_path / "published"
    assert_ok(prhub(env, "site", str(published), "--no-pdf"))
    manifest = site_manifest(published)
    assert manifest["reports"] == 3
    work = tmp_path / "runner"
    with PagesStandIn(published) as pages:
        done, _ = run(
            "Restore the store from the published site", {"site-url": pages.url}, work, fresh
        )
    assert done.returncode == 0, done.stderr
    assert f"prhub: restored {pages.url}: 3 reports and " in done.stderr
    store = work / ".prhub" / "prhub.db"
    rebuilt = tmp_path / "rebuilt"
    assert_ok(prhub(cli_env(github, llm, store), "site", str(rebuilt), "--no-pdf"))
    site_manifest(rebuilt)
    before = {p.relative_to(published): p.read_bytes() for p in published.rglob("*") if p.is_file()}
    after = {p.relative_to(rebuilt): p.read_bytes() for p in rebuilt.rglob("*") if p.is_file()}
    assert after.keys() == before.keys()
    assert [p for p in before if before[p] != after[p]] == []


def test_a_restore_short_of_the_manifest_fails_before_a_site_is_built(
    fresh: dict[str, str], env: dict[str, str | None], tmp_path: Path
) -> None:
    assert_ok(prhub(env, "weekly", "--week", "31", "--year", "2026"))
    published = tmp_path / "published"
    assert_ok(prhub(env, "site", str(published), "--no-pdf"))
    site_manifest(published)
    (published / REPO / "2026-W31.json").unlink()  # listed, but gone
    work = tmp_path / "runner"
    with PagesStandIn(published) as pages:
        done, _ = run(
            "Restore the store from the published site", {"site-url": pages.url}, work, fresh
        )
    assert done.returncode == 22, done.stderr
    assert "answered HTTP 404, though manifest.json lists it" in done.stderr
    assert not (work / ".prhub").exists() or not any((work / ".prhub").iterdir())
    # The step failed: the Action's later steps run only `always()`, and those that do need
    # the weekly step to have run (skipped here) or a site the site step alone reports.
    later = STEPS[STEPS.index(step("Restore the store from the published site")) + 1 :]
    for s in later:
        assert "always()" not in s.get("if", "") or "steps.prhub.outcome" in s["if"], s


BIN = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the dev extra's tools
SHELLCHECK = shutil.which("shellcheck", path=BIN)


@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (dev extra)")
def test_shellcheck_accepts_every_script_of_the_action(tmp_path: Path) -> None:
    """actionlint checks workflows' scripts; the Action's own are checked here, as bash with
    -eo pipefail runs them."""
    for i, s in enumerate(x for x in STEPS if "run" in x):
        script = tmp_path / f"{i}.sh"
        script.write_text("#!/bin/bash\nset -eo pipefail\n" + s["run"])
        done = subprocess.run([str(SHELLCHECK), str(script)], capture_output=True, text=True)
        assert done.returncode == 0, (s["name"], done.stdout)
