"""`prhub weekly`, `labels`, `config` and `prompts` through CliRunner and the stand-ins."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from prhub.cli.display import Display
from prhub.cli.options import YEARS
from tests.factories import FIXTURES, GITHUB_TOKEN, OPENAI_KEY, prhub, responder, unlinked
from tests.standins import GitHubStandIn, LLMStandIn


def test_weekly_writes_the_report_and_logs_plain_progress(env, llm, tmp_path):
    result = prhub(env, "weekly", "--week", "31", "--year", "2026")
    assert result.exit_code == 0, result.stderr
    report = tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md"
    assert report.read_text().startswith("# rocket 仓库周报｜2026 年第 31 周（07-27 至 08-02）")
    lines = result.stderr.splitlines()
    assert "prhub: fetching PRs 0/6" in lines and "prhub: summarising 6/6" in lines
    assert f"prhub: wrote {Path('reports/acme/rocket/2026-W31.md')}" in lines
    summary = lines[-1]
    assert summary.startswith("prhub: 6 PRs (0 from the store, 0 failed) · 7 LLM calls · ")
    assert "tokens in /" in summary and "≈ $" in summary
    assert len(llm.bodies) == 7
    assert not list(report.parent.glob(".*.tmp"))


def test_rerun_reuses_everything(env, llm):
    assert prhub(env, "weekly", "--week", "31", "--year", "2026").exit_code == 0
    calls = len(llm.bodies)
    again = prhub(env, "weekly", "--week", "31", "--year", "2026")
    assert again.exit_code == 0
    assert len(llm.bodies) == calls
    assert "6 PRs (6 from the store, 0 failed) · 0 LLM calls" in again.stderr


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("markdown", "md"), ("json", "json"), ("html", "html")]
)
def test_a_rerun_with_nothing_new_leaves_the_report_untouched(env, llm, tmp_path, fmt, suffix):
    week = ["weekly", "--week", "31", "--year", "2026", "--format", fmt]
    assert prhub(env, *week).exit_code == 0
    report = tmp_path / "reports" / "acme" / "rocket" / f"2026-W31.{suffix}"
    first = report.read_bytes()
    os.utime(report, ns=(1_000_000_000, 1_000_000_000))  # a time no write would give
    again = prhub(env, *week)
    assert again.exit_code == 0 and "0 LLM calls" in again.stderr
    assert report.read_bytes() == first
    assert report.stat().st_mtime_ns == 1_000_000_000
    if fmt == "markdown":
        # The footer counts what made the content, which the first run paid for.
        assert f"导读与周报共调用 {len(llm.bodies)} 次" in first.decode()


def test_stdout_json_and_quiet(env):
    result = prhub(
        env, "weekly", "--week", "31", "--year", "2026", "--format", "json", "--out", "-", "-q"
    )
    assert result.exit_code == 0 and result.stderr == ""
    data = json.loads(result.stdout)
    assert data["facts"]["prs"] == [101, 102, 103, 104, 105, 106]


def test_empty_week_exits_zero(env, tmp_path):
    result = prhub(env, "weekly", "--week", "20", "--year", "2026")
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "reports" / "acme" / "rocket" / "2026-W20.md").read_text()
    assert "本周没有合入任何 PR" in text


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--week", "0", "--year", "2026"], 3, "week 0"),
        (["--week", "54", "--year", "2026"], 3, "week 54"),
        (["--week", "50", "--year", str(YEARS[1])], 3, "has not started"),
        (["--since", "2026-02-30"], 3, "--since"),
        (["--tz", "Mars/Olympus", "--week", "31", "--year", "2026"], 3, "timezone"),
    ],
)
def test_bad_windows_fail_cleanly(env, llm, args, code, says):
    result = prhub(env, "weekly", *args)
    assert result.exit_code == code, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("prhub: error:") and says in line
    assert llm.bodies == []


def test_week_that_is_not_a_number_is_a_usage_error(env):
    result = prhub(env, "weekly", "--week", "abc")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_partial_failure_writes_the_report_and_exits_12(env, llm, tmp_path):
    from tests.standins.llm import prompt_text

    def flaky(body):
        return "not json" if "PR #104" in prompt_text(body) else responder(body)

    llm.responder = flaky
    result = prhub(env, "weekly", "--week", "31", "--year", "2026")
    assert result.exit_code == 12
    last = result.stderr.splitlines()[-1]
    assert last.startswith("prhub: error: 1 PR failed (#104: ") and "rerun to retry" in last
    text = (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").read_text()
    assert "1 个未能生成导读（#104）" in unlinked(text).split("## ")[0]  # said at the top
    assert (
        "[#104](https://github.com/acme/rocket/pull/104)。" in text.split("## 未能生成导读的 PR")[1]
    )
    llm.responder = responder
    again = prhub(env, "weekly", "--week", "31", "--year", "2026")
    assert again.exit_code == 0
    assert "6 PRs (5 from the store, 0 failed)" in again.stderr


def test_the_weekly_report_has_its_digests_beside_it(env, tmp_path):
    result = prhub(env, "weekly", "--week", "31", "--year", "2026", "--format", "html")
    assert result.exit_code == 0, result.stderr
    folder = tmp_path / "reports" / "acme" / "rocket"
    page = (folder / "2026-W31.html").read_text()
    for n in range(101, 107):
        assert f'href="pr/{n}.html"' in page and (folder / "pr" / f"{n}.html").is_file()
    assert "#101 " in (folder / "pr" / "101.html").read_text()


def test_quiet_still_prints_the_report_path_on_stdout(env, tmp_path):
    result = prhub(env, "weekly", "--week", "31", "--year", "2026", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == f"{Path('reports/acme/rocket/2026-W31.md')}\n"
    assert (tmp_path / result.stdout.strip()).is_file()
    chosen = tmp_path / "out" / "week.md"
    again = prhub(env, "weekly", "--week", "31", "--year", "2026", "-q", "--out", str(chosen))
    assert again.exit_code == 0 and again.stdout == f"{chosen}\n" and chosen.is_file()
    loud = prhub(env, "weekly", "--week", "31", "--year", "2026")
    assert loud.stdout == ""  # without -q the path is a progress line on stderr
    # The file holds what this run would write: left as it was, and said so.
    unchanged = f"prhub: unchanged {Path('reports/acme/rocket/2026-W31.md')}"
    assert unchanged in loud.stderr.splitlines()


def test_an_unknown_price_is_said_once(env, llm):
    env = {**env, "PRHUB_MODEL": "local-llama"}
    dry = prhub(env, "weekly", "--week", "31", "--year", "2026", "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert dry.stdout.endswith(
        "\nestimated cost: unknown (no [prices.local-llama] in prhub.toml)\n"
    )
    assert dry.stdout.count("unknown") == 1
    run = prhub(env, "weekly", "--week", "31", "--year", "2026")
    summary = run.stderr.splitlines()[-1]
    assert " · cost unknown (no [prices.local-llama] in prhub.toml) · " in summary
    assert summary.count("unknown") == 1


def test_dry_run_sends_nothing_and_needs_no_key(env, llm):
    result = prhub(
        {**env, "OPENAI_API_KEY": None}, "weekly", "--week", "31", "--year", "2026", "--dry-run"
    )
    assert result.exit_code == 0, result.stderr
    assert llm.requests == []
    assert "would send 7 LLM calls" in result.stdout
    assert "estimated cost: ≈ $" in result.stdout
    for number in range(101, 107):
        assert f"#{number}" in result.stdout


def test_dry_run_after_a_run_counts_stored_digests(env, llm):
    assert prhub(env, "summarize", "--pr", "101").exit_code == 0
    before = len(llm.requests)
    result = prhub(env, "weekly", "--week", "31", "--year", "2026", "--dry-run")
    assert len(llm.requests) == before
    assert "#101      0              0  (stored digest reused)" in result.stdout
    assert "would send 6 LLM calls" in result.stdout


def test_summarize_dry_run(env, llm):
    result = prhub(env, "summarize", "--pr", "109", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert (
        llm.requests == [] and "#109" in result.stdout and "would send 1 LLM call" in result.stdout
    )


def test_labels_groups_by_tag(env):
    result = prhub(env, "labels", "--week", "31", "--year", "2026", "--tag", "rollout", "-q")
    assert result.exit_code == 0, result.stderr
    assert "## rollout\n\n2 个 PR\n" in result.stdout
    assert "#101" in result.stdout and "#103" in result.stdout and "#102" not in result.stdout


def test_labels_folds_an_alias_of_the_tag_asked_for(env):
    result = prhub(env, "labels", "--week", "31", "--year", "2026", "--tag", "doc", "-q")
    assert result.exit_code == 0, result.stderr
    assert "## docs\n\n1 个 PR\n" in result.stdout and "#104" in result.stdout


def test_labels_for_a_tag_without_prs_lists_the_tags_that_exist(env):
    result = prhub(env, "labels", "--week", "31", "--year", "2026", "--tag", "npu", "-q")
    assert result.exit_code == 0, result.stderr
    assert "## npu\n\n本周没有这个标签的 PR。" in result.stdout
    assert "本周有 PR 的标签：" in result.stdout and "rollout（2）" in result.stdout


@pytest.mark.parametrize("fmt", ["json", "html"])
def test_labels_takes_the_formats_of_the_other_commands(env, fmt):
    args = ["labels", "--week", "31", "--year", "2026", "--tag", "rollout", "-q"]
    result = prhub(env, *args, "--format", fmt)
    assert result.exit_code == 0, result.stderr
    if fmt == "json":
        [group] = json.loads(result.stdout)["groups"]
        assert [pr["number"] for pr in group["prs"]] == [101, 103]
    else:
        assert (
            result.stdout.startswith("<!doctype html>")
            and '<h2 id="rollout">rollout</h2>' in result.stdout
        )
    bad = prhub(env, *args, "--format", "docx")
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_config_file_precedence_and_masking(env, tmp_path):
    (tmp_path / "prhub.toml").write_text(
        'model = "file-model"\ntz = "UTC"\njobs = 2\n'
        '[repos."acme/rocket"]\nmodel = "repo-model"\n'
        "[prices.repo-model]\ninput = 1.0\noutput = 2.0\n"
    )
    result = prhub(env, "config")
    assert result.exit_code == 0, result.stderr
    path = tmp_path / "prhub.toml"
    lines = result.stdout.splitlines()
    for line in (
        f'config_file = "{path}"  # found in {tmp_path}',
        'repo = "acme/rocket"  # env PRHUB_REPO',
        f'model = "repo-model"  # file {path} [repos."acme/rocket"]',  # the section beats the top
        f'tz = "UTC"  # file {path}',
        f"jobs = 2  # file {path}",
        f"github_token = set ({len(GITHUB_TOKEN)} characters, not shown)  # env GITHUB_TOKEN",
        f'prices.repo-model = {{"input": 1.0, "output": 2.0, "cached": 1.0, "batch": 0.5}}  '
        f"# file {path} [prices.repo-model]",
        'prices.gpt-4o-mini = {"input": 0.15, "output": 0.6, "cached": 0.075, "batch": 0.5}  '
        "# default",
        "max_calls = 4  # default",
    ):
        assert line in lines, line
    out = result.stdout
    assert GITHUB_TOKEN not in out and OPENAI_KEY not in out
    names = [line.split(" = ")[0] for line in lines]
    assert len(names) == len(set(names)) and names.count("config_file") == 1  # each once
    shown = prhub({**env, "PRHUB_MODEL": "env-model"}, "config", "--repo", "acme/other").stdout
    assert 'model = "env-model"  # env PRHUB_MODEL' in shown.splitlines()
    assert 'repo = "acme/other"  # flag --repo' in shown.splitlines()
    flagged = prhub({**env, "PRHUB_JOBS": "3"}, "config").stdout
    assert "jobs = 3  # env PRHUB_JOBS" in flagged.splitlines()  # environment beats the file


def test_config_shows_the_built_in_defaults(env, tmp_path):
    from prhub.config import default_store
    from prhub.tags import TAG_ALIASES

    out = prhub({**env, "PRHUB_STORE": None}, "config").stdout.splitlines()
    assert f'store = "{default_store()}"  # default' in out  # not null: the path in use
    assert (
        "config_file = null  # none found (--config, PRHUB_CONFIG, ./prhub.toml, "
        "./pyproject.toml [tool.prhub])" in out
    )
    assert 'tags.bug = "bugfix"  # default' in out
    assert len([line for line in out if line.startswith("tags.")]) == len(TAG_ALIASES)
    assert "openai_api_key = set (" in "\n".join(out)
    assert "noise_globs = []  # default" in out
    assert any(line.startswith('noise.lock = ["bun.lockb", ') for line in out)


def test_config_as_json_for_scripts(env, tmp_path):
    (tmp_path / "prhub.toml").write_text("jobs = 2\n")
    result = prhub(env, "config", "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["jobs"] == {"value": 2, "source": f"file {tmp_path / 'prhub.toml'}"}
    assert data["repo"] == {"value": "acme/rocket", "source": "env PRHUB_REPO"}
    assert data["github_token"] == {
        "value": f"set ({len(GITHUB_TOKEN)} characters, not shown)",
        "source": "env GITHUB_TOKEN",
    }
    assert data["tz"] == {"value": "Asia/Shanghai", "source": "default"}
    assert GITHUB_TOKEN not in result.stdout and OPENAI_KEY not in result.stdout


@pytest.mark.parametrize(
    ("args", "variables", "toml", "message"),
    [
        (
            ["--repo", "verl"],
            {},
            "",
            "--repo: repository must look like owner/name (letters, digits, '-' in the owner; "
            "also '.' and '_' in the name), got 'verl'",
        ),
        (
            [],
            {"PRHUB_REPO": "verl"},
            "",
            "PRHUB_REPO: repository must look like owner/name (letters, digits, '-' in the "
            "owner; also '.' and '_' in the name), got 'verl'",
        ),
        ([], {"PRHUB_JOBS": "eight"}, "", "PRHUB_JOBS: must be a whole number, got 'eight'"),
        (["--jobs", "0"], {}, "", "--jobs: must be at least 1, got 0"),
        (
            [],
            {},
            '[repos."acme/rocket"]\njobs = "eight"\n',
            "{toml} [repos.\"acme/rocket\"] jobs: must be a whole number, got 'eight'",
        ),
        ([], {}, 'modle = "x"\n', "{toml} modle: no such setting; did you mean model?"),
    ],
)
def test_errors_name_the_flag_variable_or_file_table_and_key(
    env, tmp_path, args, variables, toml, message
):
    if toml:
        (tmp_path / "prhub.toml").write_text(toml)
    result = prhub({**env, **variables}, "weekly", *args)
    assert result.exit_code == 3, result.output
    path = tmp_path / "prhub.toml"
    assert result.stderr == f"prhub: error: {message.format(toml=path)}\n"


def test_secrets_in_a_config_file_are_refused(env, tmp_path):
    (tmp_path / "prhub.toml").write_text('openai_api_key = "sk-in-a-file-000000"\n')
    result = prhub(env, "config")
    assert result.exit_code == 3
    assert "keep openai_api_key out of files" in result.stderr
    assert "sk-in-a-file" not in result.output


def test_pyproject_tool_table_is_read(env, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.prhub]\nrepo = "acme/other"\n')
    assert 'repo = "acme/rocket"' in prhub(env, "config").stdout  # env PRHUB_REPO wins
    assert 'repo = "acme/other"' in prhub({**env, "PRHUB_REPO": None}, "config").stdout


def test_prompts_lists_versions_and_a_users_own_wins(env, llm, tmp_path):
    listed = prhub(env, "prompts").stdout
    for name in ("digest@v1", "digest_notes@v1", "weekly@v1"):
        assert name in listed
    mine = tmp_path / "my-prompts" / "digest"
    mine.mkdir(parents=True)
    shipped = Path(__file__).resolve().parents[2] / "prompts" / "digest"
    (mine / "v6.system.j2").write_text(
        "自定义系统提示。\n" + (shipped / "v1.system.j2").read_text()
    )
    (mine / "v6.user.j2").write_text((shipped / "v1.user.j2").read_text())
    listed = prhub(env, "prompts", "--prompt-dir", str(tmp_path / "my-prompts")).stdout
    assert "digest@v6" in listed and "(used)" in listed.split("digest@v6")[1].splitlines()[0]
    assert prhub(env, "summarize", "--pr", "101", "-q").exit_code == 0
    result = prhub(
        env, "summarize", "--pr", "101", "-q", "--prompt-dir", str(tmp_path / "my-prompts")
    )
    assert result.exit_code == 0
    assert len(llm.bodies) == 2  # a new prompt version is a new digest
    assert llm.bodies[1]["messages"][0]["content"].startswith("自定义系统提示")
    assert "digest@v6" in result.stdout


def test_progress_bar_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    display = Display(stream=stream)
    for done in range(6):
        display("summarize", done, 5)
    display.close()
    assert "summarising" in stream.getvalue()
    assert "5/5" in stream.getvalue()


def test_plain_progress_lines_when_not_a_terminal():
    stream = io.StringIO()
    display = Display(stream=stream)
    for done in range(21):
        display("summarize", done, 20)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "prhub: summarising 0/20" and lines[-1] == "prhub: summarising 20/20"
    assert len(lines) <= 12


def test_help_is_fast_because_sdks_load_lazily():
    import subprocess
    import sys

    heavy = "('openai', 'github', 'tiktoken')"
    code = f"import sys, prhub.cli; print(any(m in sys.modules for m in {heavy}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_html_formats(env, tmp_path):
    result = prhub(env, "weekly", "--week", "31", "--year", "2026", "--format", "html", "-q")
    assert result.exit_code == 0, result.stderr
    page = (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.html").read_text()
    assert page.lower().startswith("<!doctype html>") and "#106" in page
    digest = prhub(env, "summarize", "--pr", "101", "--format", "html", "-q")
    assert digest.exit_code == 0 and "<!doctype html>" in digest.stdout.lower()


@pytest.mark.slow
def test_no_secret_in_any_artifact_even_verbose_with_faults(tmp_path):
    """A real `prhub weekly --verbose` with retries: the token and key appear nowhere it wrote."""
    import subprocess
    import sys

    token = "ghp_" + "Zq9" * 12
    key = "sk-" + "Vw7" * 14
    with (
        GitHubStandIn(FIXTURES / "github", token=token, fault_rate=0.3, seed=3) as github,
        LLMStandIn(api_key=key, fault_rate=0.3, seed=3) as llm,
    ):
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PRHUB_CACHE_DIR": str(tmp_path / "cache"),
            "GITHUB_TOKEN": token,
            "OPENAI_API_KEY": key,
            "OPENAI_BASE_URL": llm.url,
            "GITHUB_API_URL": github.url,
            "PRHUB_STORE": str(tmp_path / "store.db"),
            "PRHUB_MAX_ATTEMPTS": "8",
            "PRHUB_RETRY_BASE_WAIT": "0.01",
        }
        args = ["weekly", "--repo", "acme/rocket", "--week", "31", "--year", "2026", "--verbose"]
        done = subprocess.run(
            [sys.executable, "-m", "prhub", *args, "--format", "html"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        again = subprocess.run(
            [sys.executable, "-m", "prhub", *args, "--format", "json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert github.faults and llm.faults  # retries really happened and were logged
        bodies = json.dumps(llm.bodies)
    assert done.returncode == 0, done.stderr
    assert again.returncode == 0, again.stderr
    assert "retry" in done.stderr
    artifacts = [done.stdout, done.stderr, again.stdout, again.stderr, bodies]
    artifacts += [
        p.read_bytes().decode("utf-8", "replace")
        for p in tmp_path.rglob("*")
        if p.is_file() and "cache" not in p.parts
    ]
    for text in artifacts:
        assert token not in text and key not in text


def test_year_without_week_is_refused(env):
    result = prhub(env, "weekly", "--year", "2025")
    assert result.exit_code == 3 and "--year needs --week" in result.stderr


def test_an_unreachable_llm_stops_the_week_with_its_own_code(env, llm):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    result = prhub({**env, "OPENAI_BASE_URL": closed}, "weekly", "--week", "31", "--year", "2026")
    assert result.exit_code == 9, result.stderr
    assert result.stderr.splitlines()[-1].startswith("prhub: error: the LLM endpoint")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('[prices.m]\ninput = "cheap"\noutput = 1\n', "[prices.m] input: must be a number"),
        ("repos = 3\n", "repos"),
        ('tz = "Mars/Base"\n', "unknown timezone"),
        ('encoding = "p50k_base"\n', "encoding"),
        ("refresh = true\n", "refresh is a switch for one run"),
        ("timeout = 0\n", "timeout"),
    ],
)
def test_a_malformed_config_file_is_one_line(env, tmp_path, text, says):
    (tmp_path / "prhub.toml").write_text(text)
    result = prhub(env, "summarize", "--pr", "101")
    assert result.exit_code == 3, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("prhub: error:") and says in line


def test_credentials_in_a_base_url_stay_out_of_messages(env):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://proxyuser:s3cretpass@127.0.0.1:{port}/v1"
    result = prhub({**env, "OPENAI_BASE_URL": url}, "summarize", "--pr", "101")
    assert result.exit_code == 9
    assert "s3cretpass" not in result.output and f"127.0.0.1:{port}" in result.stderr
    shown = prhub({**env, "OPENAI_BASE_URL": url}, "config").stdout
    assert "s3cretpass" not in shown


@pytest.mark.parametrize("listed", [0, 1])
def test_a_search_listing_fewer_prs_than_it_counts_keeps_the_old_report(
    env, github, tmp_path, listed
):
    week = ["weekly", "--week", "31", "--year", "2026"]
    assert prhub(env, *week).exit_code == 0
    report = tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md"
    first = report.read_bytes()
    github.script(r"^/search/issues$", [("short", listed)] * 20)
    again = prhub(env, *week)
    assert again.exit_code == 8, again.stderr
    assert f"listed {listed}" in again.stderr
    assert report.read_bytes() == first


def test_a_setting_that_is_not_finite_is_refused_in_one_line(env):
    result = prhub({**env, "PRHUB_RETRY_BASE_WAIT": "nan"}, "weekly", "--week", "31")
    assert result.exit_code == 3
    says = "PRHUB_RETRY_BASE_WAIT: must be a finite number, got 'nan'"
    assert result.stderr == f"prhub: error: {says}\n"
