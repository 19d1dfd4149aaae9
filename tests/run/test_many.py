"""`prhub weekly --all`: the config file's repositories in one run through CliRunner, real
PyGithub and openai against the stand-ins; one repository's failure is its own."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import yaml

from prhub.config import Settings
from prhub.errors import Interrupted, ReposFailed
from prhub.github.source import GITHUB_IN_FLIGHT
from prhub.run.commands import Outcome
from prhub.run.many import exit_code
from prhub.store.store import Store
from tests.factories import GITHUB_TOKEN, ROOT, cli_env, prhub, responder
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import prompt_text

CORPUS = ("acme/a", "acme/b", "acme/c")  # the corpus's PRs, under three names
WEEK_31 = ("--week", "31", "--year", "2026")
TWO_DAYS = ("--since", "2026-07-27", "--until", "2026-07-28")


def config(tmp_path: Path, text: str) -> None:
    (tmp_path / "prhub.toml").write_text(text, encoding="utf-8")


def repos(*names: str) -> str:
    return f"repos = {json.dumps(list(names))}\n"


def index_rows(tmp_path: Path) -> dict[str, list[str]]:
    """reports/index.md's table: each repository's cells after its name."""
    text = (tmp_path / "reports" / "index.md").read_text(encoding="utf-8")
    rows = [line.strip("|").split(" | ") for line in text.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows[2:]}


def link(cell: str) -> str:
    """The address of a Markdown link cell."""
    found = re.fullmatch(r"\[[^\]]+\]\(([^)]+)\)", cell)
    assert found, cell
    return found.group(1)


def shown_count(report: Path) -> int:
    """The PR count a report's meta line shows."""
    found = re.search(r"来源 PR：(\d+)", report.read_text(encoding="utf-8"))
    assert found
    return int(found.group(1))


@pytest.fixture
def corpus_github(corpus_dir: Path) -> Iterator[GitHubStandIn]:
    """GitHub serving the corpus's repository as acme/a, acme/b and acme/c."""
    mirrors = dict.fromkeys(CORPUS, "verl-project/verl")
    with GitHubStandIn(corpus_dir, token=GITHUB_TOKEN, mirrors=mirrors) as server:
        yield server
    assert not server.errors, server.errors


@pytest.fixture
def corpus_env(
    corpus_github: GitHubStandIn, llm: LLMStandIn, store: Path, tmp_path: Path, monkeypatch
) -> dict[str, str | None]:
    monkeypatch.chdir(tmp_path)
    config(tmp_path, repos(*CORPUS))
    return cli_env(corpus_github, llm, store)


@pytest.mark.slow  # three corpus weeks: 80 digests
def test_all_writes_each_repositorys_report_and_one_index(
    corpus_env, corpus_github, llm, store, tmp_path
):
    llm.latency = 0.01  # requests overlap, so the bound is seen
    result = prhub(corpus_env, "weekly", "--all", *WEEK_31, "--jobs", "2")
    assert result.exit_code == 0, result.stderr
    rows = index_rows(tmp_path)
    assert list(rows) == list(CORPUS)
    for name in CORPUS:
        report = tmp_path / "reports" / name / "2026-W31.md"
        text = report.read_text(encoding="utf-8")
        assert text.startswith(f"# {name.split('/')[1]} 仓库周报｜2026 年第 31 周")
        assert f"https://github.com/{name}/pull/" in text and "verl-project" not in text
        assert rows[name][0] == f"[2026-W31.md]({name}/2026-W31.md)"
        assert (tmp_path / "reports" / link(rows[name][0])).resolve() == report.resolve()
        assert rows[name][1] == str(shown_count(report)) and rows[name][3] == "完成"
    prs = sum(int(rows[name][1]) for name in CORPUS)
    assert f"来源 PR 共 {prs} 个" in (tmp_path / "reports" / "index.md").read_text()
    last = result.stderr.splitlines()[-1]
    assert last.startswith(
        f"prhub: 3 repositories: 3 complete (acme/a, acme/b, acme/c) · {prs} PRs "
        f"(0 from the store, 0 failed) · {len(llm.bodies)} LLM calls · "
    )
    # One --jobs bound, one GitHub client's bound, one store with a run of each repository.
    assert llm.most_in_flight <= 2 and corpus_github.most_in_flight <= GITHUB_IN_FLIGHT
    with closing(Store(store)) as kept:
        runs = kept.runs()
    assert sorted(r["counts"]["repo"] for r in runs) == list(CORPUS)


def test_a_repository_github_fails_for_fails_alone_and_the_rerun_completes_it(
    corpus_env, corpus_github, llm, tmp_path
):
    corpus_github.down.add("acme/b")
    result = prhub(corpus_env, "weekly", "--all", *TWO_DAYS)
    assert result.exit_code == 8, result.stderr
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert "prhub: error: acme/b: GitHub answered 502 (Server Error) while looking up acme/b; " \
        "rerun later" in lines  # fmt: skip
    assert lines[-2].startswith("prhub: 3 repositories: 2 complete (acme/a, acme/c), 1 failed ")
    assert "1 failed (acme/b: exit 8) · " in lines[-2]
    assert lines[-1].startswith("prhub: error: 1 of 3 repositories not complete (acme/b): rerun")
    name = "2026-07-27_2026-07-28.md"
    folders = {r: tmp_path / "reports" / r for r in CORPUS}
    assert (folders["acme/a"] / name).is_file() and (folders["acme/c"] / name).is_file()
    assert not folders["acme/b"].exists()
    rows = index_rows(tmp_path)
    assert rows["acme/b"] == ["—", "—", "—", "未完成，下次运行会补上"]
    assert rows["acme/a"][3] == rows["acme/c"][3] == "完成"
    first_calls, kept = len(llm.bodies), (folders["acme/a"] / name).read_bytes()

    corpus_github.down.clear()
    again = prhub(corpus_env, "weekly", "--all", *TWO_DAYS)
    assert again.exit_code == 0, again.stderr
    lines = again.stderr.splitlines()
    for done in ("acme/a", "acme/c"):  # from the store: no call, the same report
        said = next(line for line in lines if line.startswith(f"prhub: {done}: "))
        assert " PRs (" in said and " · 0 LLM calls · " in said
        assert f"prhub: unchanged {Path('reports', done, name)}" in lines
    assert f"prhub: wrote {Path('reports/acme/b', name)}" in lines
    # acme/b costs what each of the others cost the first time, and they cost nothing now.
    assert len(llm.bodies) - first_calls == first_calls // 2
    assert (folders["acme/a"] / name).read_bytes() == kept
    assert [row[3] for row in index_rows(tmp_path).values()] == ["完成"] * 3
    assert lines[-1].startswith("prhub: 3 repositories: 3 complete (acme/a, acme/b, acme/c) · ")


# On the fixtures' repository, acme/rocket, also served as acme/copy


@pytest.fixture
def rocket_env(env, github, tmp_path) -> dict[str, str | None]:
    github.mirrors["acme/copy"] = "acme/rocket"
    return {**env, "PRHUB_REPO": None}


def test_repositories_failing_differently_exit_17_and_the_index_says_which(
    rocket_env, github, tmp_path
):
    config(tmp_path, repos("acme/rocket", "acme/copy", "acme/missing"))
    server_error = (500, {}, {"message": "Server Error"})
    github.script(r"^/repos/acme/copy/pulls/104/files$", [server_error] * 4)
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert result.exit_code == ReposFailed.exit_code == 17, result.stderr
    lines = result.stderr.splitlines()
    assert "prhub: error: acme/missing: repository acme/missing not found" in "\n".join(lines)
    assert (
        "1 complete (acme/rocket), 2 failed (acme/copy: exit 12; acme/missing: exit 5) · "
        in (lines[-2])
    )
    assert lines[-1] == (
        "prhub: error: 2 of 3 repositories not complete (acme/copy, acme/missing): rerun to "
        "complete them; what the others did is kept"
    )
    rows = index_rows(tmp_path)
    assert rows["acme/rocket"][3] == "完成"
    assert rows["acme/copy"][0] == "[2026-W31.md](acme/copy/2026-W31.md)"
    assert rows["acme/copy"][3] == "部分完成：1 个 PR 未能生成导读"
    assert rows["acme/missing"] == ["—", "—", "—", "未完成，下次运行会补上"]


def test_a_repository_the_llm_fails_for_is_completed_by_the_rerun_from_the_store(
    rocket_env, github, llm, tmp_path
):
    config(tmp_path, repos("acme/rocket", "acme/copy"))

    def failing_for_copy(body):
        return "not json" if "仓库：acme/copy" in prompt_text(body) else responder(body)

    llm.responder = failing_for_copy
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert result.exit_code == 12, result.stderr
    assert "1 complete (acme/rocket), 1 failed (acme/copy: exit 12)" in result.stderr
    assert index_rows(tmp_path)["acme/copy"][3] == "部分完成：6 个 PR 未能生成导读"
    llm.responder, asked = responder, len(llm.bodies)
    fetched = len(github.requests)
    again = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert again.exit_code == 0, again.stderr
    assert "prhub: acme/rocket: 6 PRs (6 from the store, 0 failed) · 0 LLM calls" in again.stderr
    assert len(llm.bodies) - asked == 7  # acme/copy's six digests and its narrative
    # Its PRs were stored by the failed run: the rerun fetches none of them again.
    pulls = [r["path"] for r in github.requests[fetched:] if "/pulls/" in r["path"]]
    assert pulls == []


def test_repositories_failing_alike_exit_as_they_failed(rocket_env, tmp_path):
    config(tmp_path, repos("acme/rocket", "acme/gone", "acme/lost"))
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert result.exit_code == 5, result.stderr
    assert "1 complete (acme/rocket), 2 failed (acme/gone: exit 5; acme/lost: exit 5)" in (
        result.stderr
    )


def test_a_repository_that_fails_keeps_its_earlier_report_in_the_index(
    rocket_env, github, tmp_path
):
    config(tmp_path, repos("acme/rocket", "acme/copy"))
    assert prhub(rocket_env, "weekly", "--all", *WEEK_31).exit_code == 0
    github.down.add("acme/copy")
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert result.exit_code == 8, result.stderr
    copy = index_rows(tmp_path)["acme/copy"]
    assert copy[0] == "[2026-W31.md](acme/copy/2026-W31.md)"
    assert copy[3] == "未完成，显示此前生成的周报"
    assert "仓库 2 个，完成 1 个" in (tmp_path / "reports" / "index.md").read_text()


def test_sections_apply_to_their_repository_under_the_runs_one_jobs_bound(
    rocket_env, llm, tmp_path
):
    config(tmp_path, '[repos."acme/rocket"]\njobs = 8\ntz = "UTC"\n\n[repos."acme/copy"]\n')
    llm.latency = 0.02
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31, "--jobs", "1")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.UTC.md").is_file()
    assert (tmp_path / "reports" / "acme" / "copy" / "2026-W31.md").is_file()
    assert llm.most_in_flight == 1


def test_quiet_prints_each_report_path_then_the_index(rocket_env, tmp_path):
    config(tmp_path, repos("acme/rocket", "acme/copy"))
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31, "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    written = [Path("reports/acme/rocket/2026-W31.md"), Path("reports/acme/copy/2026-W31.md")]
    assert result.stdout.splitlines() == [*map(str, written), str(Path("reports/index.md"))]
    index = tmp_path / "reports" / "index.md"
    os.utime(index, ns=(1_000_000_000, 1_000_000_000))  # a time no write would give
    again = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert again.exit_code == 0, again.stderr
    assert f"prhub: unchanged {Path('reports/index.md')}" in again.stderr.splitlines()
    assert index.stat().st_mtime_ns == 1_000_000_000


def test_a_dry_run_prints_each_plan_and_writes_nothing(rocket_env, llm, tmp_path):
    config(tmp_path, repos("acme/rocket", "acme/copy"))
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31, "--dry-run")
    assert result.exit_code == 0, result.stderr
    plans = re.findall(r"^dry run for (\S+): nothing was sent", result.stdout, re.MULTILINE)
    assert plans == ["acme/rocket", "acme/copy"]
    assert result.stdout.count("would send 7 LLM calls") == 2
    assert llm.bodies == [] and not (tmp_path / "reports").exists()
    assert (
        result.stderr.splitlines()[-1]
        == "prhub: 2 repositories: 2 complete (acme/rocket, acme/copy)"
    )


def test_an_interruption_says_which_repositories_are_complete(rocket_env, tmp_path, monkeypatch):
    from prhub.run import week

    config(tmp_path, repos("acme/rocket", "acme/copy", "acme/third"))
    weekly = week.weekly

    def interrupted(run, w, **kw):
        if run.settings.repo == "acme/copy":
            raise Interrupted(signal.SIGINT)
        return weekly(run, w, **kw)

    monkeypatch.setattr(week, "weekly", interrupted)
    with pytest.raises(Interrupted) as stopped:  # the console script says it, then exits
        prhub(rocket_env, "weekly", "--all", *WEEK_31)
    kept = "1 of 3 repositories complete; 0 new digests and 0 fetched PRs are stored"
    assert stopped.value.kept == kept  # and what the interrupted one stored
    assert (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").is_file()
    assert not (tmp_path / "reports" / "index.md").exists()


def test_all_without_repositories_is_one_line_and_runs_nothing(rocket_env, github, tmp_path):
    for text in ("", "repos = []\n", 'model = "m"\n'):
        config(tmp_path, text)
        result = prhub(rocket_env, "weekly", "--all", *WEEK_31)
        assert result.exit_code == 3, result.stderr
        assert result.stderr == (
            "prhub: error: no repositories for --all: list them in prhub.toml as repos = "
            '["owner/a", "owner/b"], or give each a [repos."owner/name"] section\n'
        )
    assert github.requests == [] and not (tmp_path / "reports").exists()


@pytest.mark.parametrize("flag", [["--repo", "acme/rocket"], ["--out", "week.md"], ["--out", "-"]])
def test_all_refuses_what_names_one_repository_or_file(rocket_env, tmp_path, flag):
    config(tmp_path, repos("acme/rocket"))
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31, *flag)
    assert result.exit_code == 2
    assert f"drop {flag[0]}" in result.stderr and "Traceback" not in result.output


def test_a_malformed_section_stops_the_run_before_anything_is_fetched(rocket_env, github, tmp_path):
    config(tmp_path, '[repos."acme/rocket"]\n\n[repos."acme/copy"]\njobs = 0\n')
    result = prhub(rocket_env, "weekly", "--all", *WEEK_31)
    assert result.exit_code == 3
    assert result.stderr.endswith('[repos."acme/copy"] jobs: must be at least 1, got 0\n')
    assert github.requests == []


@pytest.mark.parametrize(
    ("codes", "expected"),
    [((0, 0), 0), ((0, 8), 8), ((8, 8, 0), 8), ((12, 0), 12), ((8, 5), 17), ((12, 8, 0), 17)],
)
def test_the_exit_code_is_the_failures_when_they_agree(codes, expected):
    def failed(code: int) -> ReposFailed | None:
        return ReposFailed("failed", code) if code else None

    outcomes = [
        Outcome(Settings(repo=f"o/r{i}"), error=failed(code)) for i, code in enumerate(codes)
    ]
    assert exit_code(outcomes) == expected


def test_summarize_takes_one_pr_of_one_repository(rocket_env):
    result = prhub(rocket_env, "summarize", "--all", "--pr", "101")
    assert result.exit_code == 2 and "No such option: --all" in result.stderr


# The Actions matrix across repositories

MATRIX = ROOT / "examples" / "github-actions" / "many-repositories.yml"
BIN = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the dev extra's tools


def test_the_matrix_example_runs_a_job_per_repository_and_commits_once():
    jobs = yaml.safe_load(MATRIX.read_text(encoding="utf-8"))["jobs"]
    report, commit = jobs["report"], jobs["commit"]
    assert report["strategy"]["fail-fast"] is False and report["strategy"]["matrix"]["repo"]
    step = next(s for s in report["steps"] if s.get("id") == "prhub")
    assert step["uses"].split("@")[0].endswith("/prhub")  # prhub's Action
    assert step["with"]["repo"] == "${{ matrix.repo }}"
    assert "${{ matrix.repo }}" in step["with"]["cache-key"]  # a store for each repository
    assert commit["needs"] == "report" and commit["if"] == "always()"


@pytest.mark.skipif(
    shutil.which("actionlint", path=BIN) is None, reason="actionlint is not installed (dev extra)"
)
def test_actionlint_accepts_the_matrix_example():
    command = [str(shutil.which("actionlint", path=BIN)), str(MATRIX)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PATH": BIN})
    assert done.returncode == 0, done.stdout + done.stderr
