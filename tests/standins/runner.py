"""A GitHub Actions runner stand-in: a workflow's steps found by id, action or name, and a
step's exact script run by bash as the runner runs it, with its env and outputs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
# How GitHub runs a step whose shell is `bash`.
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    """The `on:` table, which YAML 1.1 reads as the key True."""
    return workflow["on"] if "on" in workflow else workflow[True]


def steps(workflow: dict[Any, Any], job: str) -> list[dict[str, Any]]:
    return workflow["jobs"][job]["steps"]


def step(
    workflow: dict[Any, Any], job: str, *, id: str = "", uses: str = "", name: str = ""
) -> Any:
    """The one step of `job` with this id, action (without version) or name."""
    found = [
        s
        for s in steps(workflow, job)
        if (id and s.get("id") == id)
        or (uses and s.get("uses", "").split("@")[0] == uses)
        or (name and s.get("name") == name)
    ]
    assert len(found) == 1, (id, uses, name, found)
    return found[0]


def expand(text: str, values: dict[str, str]) -> str:
    """`text` with each ${{ expression }} replaced by its test value; unknown ones fail."""
    return EXPRESSION.sub(lambda m: values[m.group(1)], text)


def run_step(
    workflow: dict[Any, Any],
    job: str,
    target: dict[str, Any],
    values: dict[str, str],
    cwd: Path,
    env: dict[str, str],
    prelude: str = "",
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Runs a step's exact script as an Actions runner would; returns it and its outputs."""
    layers = (workflow.get("env", {}), workflow["jobs"][job].get("env", {}), target.get("env", {}))
    return run_script(target, layers, values, cwd, env, prelude)


def action_values(action: dict[str, Any], given: dict[str, str]) -> dict[str, str]:
    """The `inputs.*` expressions of a composite action's steps: its defaults, then `given`."""
    found = {f"inputs.{k}": str(v.get("default", "")) for k, v in action["inputs"].items()}
    return {**found, **{f"inputs.{k}": v for k, v in given.items()}}


def run_action_step(
    target: dict[str, Any],
    values: dict[str, str],
    cwd: Path,
    env: dict[str, str],
    prelude: str = "",
    timeout: float = 120,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """Runs a composite action's step (its `shell: bash`) as the runner would: its env, with
    GITHUB_ACTION_PATH from `env`; returns it and its outputs."""
    assert target["shell"] == "bash", target
    return run_script(target, (target.get("env", {}),), values, cwd, env, prelude, timeout)


def run_script(
    target: dict[str, Any],
    layers: tuple[dict[str, Any], ...],
    values: dict[str, str],
    cwd: Path,
    env: dict[str, str],
    prelude: str = "",
    timeout: float = 120,
) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """A step's script, its expressions filled in, run by bash in `cwd` with the env layers."""
    runner = cwd.parent / "runner"
    runner.mkdir(exist_ok=True)
    outputs = runner / "output"
    outputs.write_text("")
    step_env = {k: expand(str(v), values) for layer in layers for k, v in layer.items()}
    full_env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(runner),
        "RUNNER_TEMP": str(runner),
        "GITHUB_OUTPUT": str(outputs),
        **env,
        **step_env,
    }
    script = prelude + expand(target["run"], values)
    done = subprocess.run(
        [*BASH, "-c", script],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    return done, written


def weekly_values(github: Any, llm: Any) -> tuple[dict[str, str], dict[str, str]]:
    """The inputs of prhub's Action for week 31 on the stand-ins, and the runner's env."""
    from tests.factories import GITHUB_TOKEN, OPENAI_KEY
    from tests.standins.llm import MODEL

    values = {
        "week": "31",
        "year": "2026",
        "github-token": GITHUB_TOKEN,
        "openai-api-key": OPENAI_KEY,
        "openai-base-url": llm.url,
        "model": MODEL,
    }
    # On github.com the runner sets GITHUB_API_URL to https://api.github.com.
    env = {"GITHUB_API_URL": github.url, "PRHUB_CACHE_DIR": os.environ["PRHUB_CACHE_DIR"]}
    return values, env
