"""`prhub summarize` through CliRunner against the GitHub and LLM stand-ins."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prhub.cli import app
from prhub.defaults import ENV
from prhub.llm.reply import example
from prhub.model import DigestContent
from tests.factories import (
    FIXTURES,
    GITHUB_TOKEN,
    assert_fails,
    assert_ok,
    cli_env,
    closed_port_url,
    summarize,
)
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import embedded_example

PR_URL = "https://github.com/acme/rocket/pull/101"
TITLE = "[rollout] fix: clamp sampling temperature to avoid division by zero"
BODY_LINE = "Fixes #95, related to #102 (GRPO evaluation uses greedy rollouts)."
PATCH_LINE = "+MIN_TEMPERATURE = 1e-5"


def paths(standin: GitHubStandIn | LLMStandIn) -> list[str]:
    return [r["path"] for r in standin.requests]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store in a folder that does not exist yet."""
    return tmp_path / "store" / "prhub.db"


# Output


def test_markdown_digest(env: dict[str, str | None], github: GitHubStandIn) -> None:
    result = summarize({**env, "GITHUB_API_URL": None}, "--github-url", github.url)
    assert_ok(result)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"### [#101]({PR_URL}) ")
    assert any(verdict in result.stdout for verdict in ("**精读**", "**快速浏览**", "**可跳过**"))
    footer = [line for line in lines if line.startswith("<sub>")]
    assert len(footer) == 1
    assert "digest@v5 · gpt-4o-mini" in footer[0]
    # stderr holds the closing summary alone; --quiet leaves it empty
    [summary] = result.stderr.splitlines()
    assert summary.startswith("prhub: 1 PR (0 from the store, 0 failed) · 1 LLM call · ")
    assert "≈ $" in summary and "0 retries" in summary
    quiet = summarize({**env, "GITHUB_API_URL": None}, "--github-url", github.url, "--quiet")
    assert_ok(quiet)
    assert quiet.stderr == "" and quiet.stdout == result.stdout


def test_json_digest(env: dict[str, str | None]) -> None:
    result = summarize(env, "--format", "json")
    assert_ok(result)
    digest = json.loads(result.stdout)
    assert (digest["repo"], digest["number"], digest["url"]) == ("acme/rocket", 101, PR_URL)
    meta = digest["meta"]
    assert meta["prompt"] == "digest@v5"
    assert meta["model"] == "gpt-4o-mini"
    assert meta["usage"]["calls"] == 1
    assert meta["usage"]["tokens_in"] > 0 and meta["usage"]["tokens_out"] > 0
    assert meta["coverage"]["full"] == [
        "rocket/rollout/sampler.py",
        "tests/rollout/test_sampler.py",
    ]
    DigestContent.model_validate(digest["content"])


def test_out_writes_exactly_what_stdout_shows(env: dict[str, str | None], tmp_path: Path) -> None:
    shown = summarize(env)
    assert_ok(shown)
    out = tmp_path / "reports" / "101.md"
    written = summarize(env, "--out", str(out))  # the stored digest: the same text
    assert_ok(written)
    assert written.stdout == ""
    assert out.read_text(encoding="utf-8") == shown.stdout
    assert os.listdir(out.parent) == ["101.md"]  # no temporary file left behind


def test_unmerged_pr_is_refused(env: dict[str, str | None], llm: LLMStandIn) -> None:
    assert_fails(summarize(env, pr=110), 7, "--allow-unmerged")
    assert llm.bodies == []


def test_unmerged_pr_with_allow_unmerged(env: dict[str, str | None]) -> None:
    result = summarize(env, "--allow-unmerged", pr=110)
    assert_ok(result)
    assert result.stdout.startswith("### [#110](https://github.com/acme/rocket/pull/110) ")
    assert "未合并" in result.stdout


# Errors, each with its exit code


def test_pr_not_found(env: dict[str, str | None]) -> None:
    assert_fails(summarize(env, pr=999), 6, "acme/rocket#999")


def test_repository_not_found(env: dict[str, str | None]) -> None:
    result = CliRunner().invoke(app, ["summarize", "--pr", "1", "--repo", "acme/nope"], env=env)
    assert_fails(result, 5, "acme/nope")


def test_bad_github_token(env: dict[str, str | None]) -> None:
    assert_fails(summarize({**env, "GITHUB_TOKEN": "ghp_wrong"}), 4, "GITHUB_TOKEN")


def test_missing_api_key_fails_before_any_llm_request(
    env: dict[str, str | None], github: GitHubStandIn, llm: LLMStandIn
) -> None:
    assert_fails(summarize({**env, "OPENAI_API_KEY": None}), 3, "OPENAI_API_KEY")
    assert llm.requests == []


def test_a_stored_digest_needs_no_api_key(env: dict[str, str | None], llm: LLMStandIn) -> None:
    first = summarize(env)
    assert_ok(first)
    calls = len(llm.bodies)
    again = summarize({**env, "OPENAI_API_KEY": None})
    assert_ok(again)
    assert again.stdout == first.stdout and len(llm.bodies) == calls


def test_unreachable_llm(env: dict[str, str | None], llm: LLMStandIn) -> None:
    result = summarize({**env, "OPENAI_BASE_URL": closed_port_url() + "/v1"})
    assert_fails(result, 9, "unreachable")
    assert llm.requests == []


def test_reply_invalid_twice(env: dict[str, str | None], llm: LLMStandIn) -> None:
    llm.script([("content", "not json")] * 3)
    result = summarize(env)
    assert_fails(result, 11, "failed validation twice", spent=True)
    # The correction came back as the reply it corrects: asked once more, afresh, then failed.
    assert len(llm.bodies) == 3
    assert "· 3 LLM calls · " in result.stderr  # what the failed run paid for


def test_missing_repo(env: dict[str, str | None], github: GitHubStandIn) -> None:
    result = CliRunner().invoke(app, ["summarize", "--pr", "101"], env={**env, "PRHUB_REPO": None})
    assert_fails(result, 3, "--repo")
    assert github.requests == []


def test_malformed_repo(env: dict[str, str | None]) -> None:
    result = CliRunner().invoke(app, ["summarize", "--pr", "101", "--repo", "rocket"], env=env)
    assert_fails(result, 3, "owner/name")


def test_bad_github_url(env: dict[str, str | None]) -> None:
    assert_fails(summarize(env, "--github-url", "notaurl"), 3, "notaurl")


def test_unreachable_github(env: dict[str, str | None], llm: LLMStandIn) -> None:
    assert_fails(summarize(env, "--github-url", closed_port_url()), 8, "cannot reach GitHub")
    assert llm.requests == []


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only directories"
)
def test_read_only_output_directory(env: dict[str, str | None], tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        assert_fails(summarize(env, "--out", str(folder / "101.md")), 14, "cannot write")
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o700)


def test_refused_output_file_is_an_output_error(
    env: dict[str, str | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a read-only directory does to a user who is not root (root may write anyway).
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    result = summarize(env, "--out", str(tmp_path / "101.md"))
    assert_fails(result, 14, "Permission denied", spent=True)
    assert not (tmp_path / "101.md").exists()


def test_output_under_a_file_is_an_output_error(env: dict[str, str | None], tmp_path: Path) -> None:
    # Unwritable even for root, unlike a read-only directory.
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    assert_fails(summarize(env, "--out", str(blocker / "101.md")), 14, "cannot write", spent=True)


def test_failed_replace_leaves_no_temporary_file(
    env: dict[str, str | None], tmp_path: Path
) -> None:
    target = tmp_path / "out" / "101.md"
    target.mkdir(parents=True)  # a directory where the file should go: os.replace fails
    assert_fails(summarize(env, "--out", str(target)), 14, "cannot write", spent=True)
    assert os.listdir(target.parent) == ["101.md"]


# Secrets


def test_secrets_reach_no_request_body_output_or_store(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gh_secret = "ghp_PRHUBgithubSECRETvalue0123456789abcd"
    llm_secret = "sk-PRHUBopenaiSECRETvalue-0123456789"
    store = tmp_path / "store" / "prhub.db"
    out = tmp_path / "out" / "101.md"
    caplog.set_level(logging.INFO)  # what --verbose shows
    with (
        GitHubStandIn(FIXTURES / "github", token=gh_secret) as github,
        LLMStandIn(api_key=llm_secret) as llm,
    ):
        env = cli_env(github, llm, store, GITHUB_TOKEN=gh_secret, OPENAI_API_KEY=llm_secret)
        github.script(r"/pulls/101$", [(502, {}, {"message": "Server Error"})])
        llm.script([(500, {}, {"error": {"message": "boom"}})])
        runs = [
            summarize(env, "--verbose"),
            summarize(env, "--verbose", "--refresh", "--format", "json"),
            summarize(env, "--out", str(out)),
        ]
    assert not github.errors and not llm.errors
    for result in runs:
        assert_ok(result)
    assert "retry 1" in caplog.text  # --verbose did log the retries
    assert len(llm.bodies) == 3 and out.exists()  # 500, retry, --refresh
    texts = [json.dumps(llm.bodies), caplog.text]
    texts += [r.stdout + r.stderr for r in runs]
    # The LLM never sees the GitHub token, GitHub never sees the API key.
    texts += [
        json.dumps(llm.requests).replace(f"Bearer {llm_secret}", ""),
        json.dumps(github.requests).replace(f"token {gh_secret}", ""),
    ]
    for secret in (gh_secret, llm_secret):
        assert all(secret not in text for text in texts)
    files = [out, *store.parent.iterdir()]  # the database with its -wal and -shm files
    for path in files:
        data = path.read_bytes()
        assert gh_secret.encode() not in data and llm_secret.encode() not in data, path


# What the model is sent


def test_prompt_carries_title_body_and_patch(env: dict[str, str | None], llm: LLMStandIn) -> None:
    assert_ok(summarize(env))
    [body] = llm.bodies
    user = body["messages"][-1]["content"]
    assert TITLE in user
    assert BODY_LINE in user
    assert PATCH_LINE in user


def test_request_uses_strict_json_schema(env: dict[str, str | None], llm: LLMStandIn) -> None:
    assert_ok(summarize(env))
    [body] = llm.bodies
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    spec = response_format["json_schema"]
    assert spec["strict"] is True
    assert spec["name"] == "DigestContent"
    assert spec["schema"] == DigestContent.model_json_schema()


def test_json_object_mode_puts_an_example_in_the_system_message(
    env: dict[str, str | None], llm: LLMStandIn
) -> None:
    assert_ok(summarize(env, "--response-mode", "json_object"))
    [body] = llm.bodies
    assert body["response_format"] == {"type": "json_object"}
    system = body["messages"][0]
    assert system["role"] == "system"
    assert embedded_example(system["content"]) == example(DigestContent)


# The store


def test_second_run_reuses_the_store(
    env: dict[str, str | None], github: GitHubStandIn, llm: LLMStandIn
) -> None:
    first = summarize(env)
    assert_ok(first)
    llm_calls, github_calls = len(llm.bodies), len(github.requests)
    again = summarize(env)
    assert_ok(again)
    assert again.stdout == first.stdout
    assert len(llm.bodies) == llm_calls
    # One request for the PR: the pull, to notice a change; files and reviews come from the store.
    # (And one for the run: the repository's name as GitHub spells it; and one for the PR its
    # body relates it to, #102, revalidated with its ETag: a 304, free.)
    assert paths(github)[github_calls:] == [
        "/repos/acme/rocket",
        "/repos/acme/rocket/pulls/101",
        "/repos/acme/rocket/pulls/102",
    ]
    assert github.charged()["free"] >= 1


def test_refresh_asks_the_model_again(env: dict[str, str | None], llm: LLMStandIn) -> None:
    assert_ok(summarize(env))
    assert_ok(summarize(env, "--refresh"))
    assert len(llm.bodies) == 2


# Start-up: the SDKs, pydantic and rich load only in the commands that use them.
HEAVY = ("openai", "github", "jinja2", "tiktoken", "pydantic", "rich", "prhub.model")


def imported_by(*args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules a fresh interpreter imports to run `args`, as -X importtime lists them."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=60
    )
    lines = [line.split("|") for line in done.stderr.splitlines()]
    modules = {line[-1].strip() for line in lines if line[0].startswith("import time:")}
    return modules, done


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY)


def test_importing_the_cli_loads_no_sdk_pydantic_or_rich() -> None:
    modules, done = imported_by("-c", "import prhub.cli")
    assert done.returncode == 0, done.stderr
    assert "prhub.cli" in modules and "typer" in modules
    assert heavy(modules) == []


@pytest.mark.parametrize(
    "argv", [["--help"], ["--version"], ["summarize", "--help"], ["weekly", "--help"]]
)
def test_help_and_version_load_no_sdk_pydantic_or_rich(argv: list[str]) -> None:
    modules, done = imported_by("-m", "prhub", *argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: prhub") or done.stdout.startswith("prhub ")
    assert heavy(modules) == []


# For people: version, help, suggestions, warnings, the README's first commands


def test_version() -> None:
    from prhub import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"prhub {__version__}\n")
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject  # read from prhub/__init__.py when built
    from importlib.metadata import version

    assert version("prhub-digest") == __version__


@pytest.mark.parametrize("command", ["summarize", "weekly", "labels", "config", "init-ci"])
def test_switches_show_no_type_in_help(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "<bool>" not in result.stdout
    assert "<int>" in result.stdout or "<str>" in result.stdout or "<path>" in result.stdout
    help_line = next(line for line in result.stdout.splitlines() if "--help" in line)
    assert help_line.split("--help")[1].split()[0] == "Show"  # no type between flag and text


def help_rows(shown: str) -> dict[str, str]:
    """Each option of a help page with its text, wrapped lines joined: {"--jobs": "--jobs ..."}."""
    rows: list[str] = []
    for line in shown.split("Options:\n", 1)[1].splitlines():
        if line.lstrip().startswith("-"):
            rows.append(line.strip())
        elif line.strip() and rows:
            rows[-1] += " " + line.strip()
    return {next(w for w in row.split() if w.startswith("--")).rstrip(","): row for row in rows}


def test_help_shows_defaults() -> None:
    shown = CliRunner().invoke(app, ["weekly", "--help"], env={"COLUMNS": "80"}).stdout
    lines = help_rows(shown)
    assert "ISO week [default: the last complete week]" in lines["--week"]
    assert "[default: Asia/Shanghai]" in lines["--tz"]
    assert "[default: 4]" in lines["--jobs"]
    assert "[default: 24000]" in lines["--input-budget"]
    assert "[default: gpt-4o-mini]" in lines["--model"]
    assert "[default: YEAR-WNN.md in reports/OWNER/REPO]" in lines["--out"]
    assert "--dry-run  " in lines["--dry-run"] and "<" not in lines["--dry-run"]
    config = "[default: ./prhub.toml, else ./pyproject.toml [tool.prhub]]"
    assert config in " ".join(lines["--config"].split())  # its brackets shown as they are


@pytest.mark.parametrize(
    "command", ["summarize", "weekly", "labels", "config", "prompts", "init-ci"]
)
def test_help_lists_every_option_with_its_whole_text(command: str) -> None:
    import typer.main

    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    shown = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80"}).stdout
    rows = help_rows(shown)
    for param in click_command.params:
        text = " ".join(getattr(param, "help", "").split())
        if param.param_type_name == "option":
            [row] = [rows[o] for o in param.opts if o in rows]
            assert text in " ".join(row.split()), param.name
        else:  # an argument, listed above the options
            assert text and text in " ".join(shown.split("Options:")[0].split()), param.name


def test_the_command_list_shows_each_summary_in_full() -> None:
    import typer.main

    shown = " ".join(CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"}).stdout.split())
    for name, command in typer.main.get_command(app).commands.items():  # type: ignore[attr-defined]
        summary = " ".join((command.help or "").split("\n\n")[0].split())
        assert f"{name} {summary}" in shown


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["weekly", "--bogus"], "No such option: --bogus"),  # nothing unrelated offered
        (
            ["weekly", "--rep", "x"],
            "No such option: --rep (Possible options: --repo, --report-url)",
        ),
        (["weekly", "--jbos", "2"], "No such option: --jbos (Possible options: --jobs)"),
        (["weekly", "--output", "x"], "No such option: --output (Possible options: --out)"),
        (["summarize", "--dryrun"], "No such option: --dryrun (Possible options: --dry-run)"),
        (["--verison"], "No such option: --verison (Possible options: --version)"),
    ],
)
def test_an_unknown_option_suggests_close_ones_only(argv: list[str], says: str) -> None:
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 2
    [message] = [line for line in result.stderr.splitlines() if "No such" in line]
    assert message == f"Error: {says}"


UNAUTHENTICATED = (
    "prhub: warning: GITHUB_TOKEN is not set: reading GitHub unauthenticated, which github.com "
    "limits to 60 requests an hour; export GITHUB_TOKEN for 5,000"
)


def test_without_a_github_token_one_line_warns(llm: LLMStandIn, store: Path) -> None:
    with GitHubStandIn(FIXTURES / "github") as github:  # no token: anonymous requests answered
        env = cli_env(github, llm, store, GITHUB_TOKEN=None)
        result = summarize(env)
        quiet = summarize(env, "--quiet")
    assert_ok(result)
    warning, summary = result.stderr.splitlines()
    assert warning == UNAUTHENTICATED
    assert summary.startswith("prhub: 1 PR (0 from the store")
    assert_ok(quiet)
    assert quiet.stderr == UNAUTHENTICATED + "\n"  # quiet hides progress, not what to fix
    assert all("Authorization" not in r["headers"] for r in github.requests)


def test_with_a_github_token_no_warning(env: dict[str, str | None]) -> None:
    result = summarize(env, "--quiet")
    assert_ok(result)
    assert result.stderr == ""


def test_readme_install_and_run_in_the_order_a_person_types_them() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = readme.split("```sh\n")[1:]
    blocks = [block.split("```")[0] for block in blocks]
    installs = [b for b in blocks if "pip install -c constraints.txt ." in b]
    tests = [b for b in blocks if "scripts/check" in b]
    assert len(installs) == 1 and len(tests) == 1  # one way in, one way to test
    lines = [line.split("#")[0].strip() for line in installs[0].splitlines()]
    order = [
        "git clone ",
        "cd prhub",
        "python3 -m venv .venv",
        ". .venv/bin/activate",
        "pip install -c constraints.txt .",
        "export GITHUB_TOKEN=",
        "export GITHUB_API_URL=",
        "export OPENAI_API_KEY=",
        "export OPENAI_BASE_URL=",
        "export PRHUB_MODEL=",
        "prhub summarize ",
    ]
    assert [next(i for i, line in enumerate(lines) if line.startswith(o)) for o in order] == list(
        range(len(order))
    )
    section = readme.split("## Run the tests")[1].split("\n## ")[0]
    assert "pip install -c constraints.txt -e '.[dev]' && bash scripts/check" in tests[0]
    assert "python3 -m venv .venv" in tests[0]  # works in a fresh clone
    assert "about 4 to 5 minutes" in section
    assert "HTML page tests without Chromium" in section
    assert 'bash scripts/check -m "not slow"' in section


# A reader that goes away, or no stdout at all: what other command-line tools do


def _bare_env(tmp_path: Path) -> dict[str, str]:

    values = {k: v for k, v in os.environ.items() if k not in {*ENV.values(), "PRHUB_CONFIG"}}
    return {**values, "PRHUB_REPO": "acme/rocket", "PRHUB_STORE": str(tmp_path / "s.db")}


@pytest.mark.parametrize("argv", [["config"], ["prompts"], ["config", "--format", "json"]])
def test_a_reader_that_left_ends_prhub_quietly_as_a_pipe_would(tmp_path: Path, argv) -> None:
    read, write = os.pipe()
    os.close(read)  # `prhub config | head -c 0`: the reader is gone before prhub writes
    try:
        done = subprocess.run(
            [sys.executable, "-m", "prhub", *argv],
            stdout=write,
            stderr=subprocess.PIPE,
            env=_bare_env(tmp_path),
            cwd=tmp_path,
            timeout=60,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, b"")


@pytest.mark.parametrize("argv", [["config"], ["prompts"]])
def test_a_closed_stdout_is_one_line_not_a_bug(tmp_path: Path, argv) -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$0" -m prhub "$@" >&-', sys.executable, *argv],
        stderr=subprocess.PIPE,
        env=_bare_env(tmp_path),
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 14
    assert done.stderr.decode() == ("prhub: error: cannot write to standard output: it is closed\n")


def test_a_hostile_prompt_dir_runs_nothing_even_in_a_dry_run(
    github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "mine" / "digest"
    folder.mkdir(parents=True)
    (folder / "v99.system.j2").write_text("system")
    shell = "{{ cycler.__init__.__globals__.os.popen('touch PWNED').read() }}"
    leak = "{{ lipsum.__globals__.os.environ.GITHUB_TOKEN }}"
    (folder / "v99.user.j2").write_text(f"{shell}{leak}")
    env = cli_env(github, llm, tmp_path / "store.db")
    result = summarize(env, "--dry-run", "--prompt-dir", str(tmp_path / "mine"))
    assert_fails(result, 3, "prompt digest@v99")
    assert GITHUB_TOKEN not in result.output and not (tmp_path / "PWNED").exists()
    assert llm.bodies == []
