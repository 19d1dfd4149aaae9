"""What prhub says matches what it did: its figures, its lines, its waits."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from tests.factories import OPENAI_KEY, prhub, responder, settings, week_of
from tests.standins import LLMStandIn

WEEK = ("--week", "31", "--year", "2026")
REPORT = Path("reports/acme/rocket/2026-W31.md")


def test_a_report_left_as_it_was_is_unchanged_not_wrote(env):
    first = prhub(env, "weekly", *WEEK)
    assert f"prhub: wrote {REPORT}" in first.stderr.splitlines()
    again = prhub(env, "weekly", *WEEK)
    assert f"prhub: unchanged {REPORT}" in again.stderr.splitlines()
    assert "wrote" not in again.stderr


def test_a_dry_run_counts_only_what_a_run_would_send(env, llm):
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    sent = len(llm.bodies)
    plan = prhub(env, "weekly", *WEEK, "--dry-run")
    assert plan.exit_code == 0, plan.stderr
    assert "would send 0 LLM calls, 0 prompt tokens" in plan.stdout
    assert "estimated cost: $0.00 (nothing to send)" in plan.stdout
    rerun = prhub(env, "weekly", *WEEK)
    assert len(llm.bodies) == sent and "0 LLM calls" in rerun.stderr  # as the plan said
    one = prhub(env, "summarize", "--pr", "101", "--dry-run")
    assert "would send 0 LLM calls" in one.stdout and "$0.00" in one.stdout


def test_a_dry_run_with_an_unpriced_model_says_zero_for_nothing(env, llm):
    assert prhub({**env, "PRHUB_MODEL": "local-llama"}, "weekly", *WEEK).exit_code == 0
    plan = prhub({**env, "PRHUB_MODEL": "local-llama"}, "weekly", *WEEK, "--dry-run")
    assert "estimated cost: $0.00 (nothing to send)" in plan.stdout
    assert "unknown" not in plan.stdout


def test_one_pr_is_singular(env):
    result = prhub(env, "summarize", "--pr", "101")
    assert result.exit_code == 0
    assert result.stderr.startswith("prhub: 1 PR (0 from the store, 0 failed) · 1 LLM call · ")


def test_an_unmerged_pr_reads_unmerged_not_merged_at_unmerged(env):
    for fmt in ("markdown", "html"):
        result = prhub(env, "summarize", "--pr", "110", "--allow-unmerged", "--format", fmt)
        assert result.exit_code == 0, result.stderr
        assert "未合并" in result.stdout and "合并于 未合并" not in result.stdout
        assert not re.search(r"合并于\s*(<[^>]*>\s*)*未合并", result.stdout)


def test_breaking_titles_are_tagged_breaking(env):
    result = prhub(env, "labels", *WEEK, "--tag", "breaking")
    assert result.exit_code == 0, result.stderr
    assert "#106" in result.stdout  # [BREAKING][trainer] refactor: ...
    assert "#101" not in result.stdout


def test_jobs_help_says_what_it_bounds(env):
    shown = " ".join(prhub(env, "weekly", "--help").stdout.split())
    assert "LLM requests in flight at once" in shown
    assert "PRs summarised at once" not in shown


def test_runs_lists_past_runs_with_calls_tokens_and_cost(env, llm):
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    listed = prhub(env, "runs").stdout.splitlines()
    assert len(listed) == 2
    newest, oldest = listed
    assert " weekly  acme/rocket  6 PRs (6 from the store, 0 failed) · 0 LLM calls" in newest
    assert "$0.00 · done" in newest
    assert f"· {len(llm.bodies)} LLM calls · " in oldest and "≈ $" in oldest
    assert re.search(r"· [\d,]+ tokens in / [\d,]+ out ·", oldest)
    assert prhub(env, "runs", "--limit", "1").stdout.splitlines() == [newest]


def test_runs_without_a_store_says_so(env, tmp_path):
    result = prhub({**env, "PRHUB_STORE": str(tmp_path / "none.db")}, "runs")
    assert result.stdout == "no runs recorded in this store\n"
    assert not (tmp_path / "none.db").exists()


def test_two_runs_at_once_pay_for_the_narrative_once(github, tmp_path):
    with LLMStandIn(api_key=OPENAI_KEY, latency=0.3) as server:
        server.responder = responder
        config = settings(github, server, tmp_path, jobs=2)
        week_of(config, year=2026, week=31, narrate=False)  # digests stored
        digests = len(server.bodies)
        reports = []
        runs = [
            threading.Thread(target=lambda: reports.append(week_of(config, year=2026, week=31)))
            for _ in range(2)
        ]
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=120)
        assert len(reports) == 2
        assert len(server.bodies) == digests + 1  # one narrative for both
        assert reports[0].narrative == reports[1].narrative is not None


def test_a_progress_line_is_one_write_so_no_log_line_lands_inside_it():
    import io

    from prhub.cli.display import Display

    class Writes(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.writes: list[str] = []

        def write(self, text: str) -> int:
            self.writes.append(text)
            return super().write(text)

    stream = Writes()
    Display(stream=stream).line("fetching PRs 3/6")
    # A log line from another thread once fell between a line and its newline, so that
    # "prhub: GitHub GET ..." did not start a line of its own.
    assert stream.writes == ["prhub: fetching PRs 3/6\n"]


def test_verbose_logs_every_github_request_and_retry(env, github, tmp_path):
    import os
    import subprocess
    import sys

    from tests.factories import ROOT

    github.script(r"/pulls/103$", [(502, {}, {"message": "Bad gateway"})])
    child_env = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    child_env["PYTHONPATH"] = str(ROOT)

    def weekly(*extra: str) -> str:
        argv = [sys.executable, "-m", "prhub", "weekly", *WEEK, *extra]
        done = subprocess.run(argv, env=child_env, cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stderr

    stderr = weekly("--verbose")
    logged = [line for line in stderr.splitlines() if line.startswith("prhub: GitHub GET ")]
    assert len(logged) == len(github.requests)
    assert f"prhub: GitHub GET {github.url}/repos/acme/rocket/pulls/103: 502" in logged
    assert "prhub: fetching acme/rocket#103 failed (GithubException); retry 1" in stderr
    assert "prhub: GitHub GET" not in weekly("--refresh")
