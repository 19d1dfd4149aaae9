"""Posting a week as `weekly` does it: a discussion and a chat message, each failing alone,
after the report is written; exit codes and lines when some fail."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import prhub, responder
from tests.standins import LLMStandIn
from tests.standins.llm import prompt_text
from tests.standins.webhook import WebhookStandIn

WEEK = ("weekly", "--week", "31", "--year", "2026")
FORBIDDEN = {
    "data": {"createDiscussion": None},
    "errors": [{"type": "FORBIDDEN", "message": "Resource not accessible by integration"}],
}


@pytest.fixture(autouse=True)
def _narrated(llm: LLMStandIn) -> None:
    llm.responder = responder


def both(env: dict[str, str | None], hook: WebhookStandIn, *args: str) -> Any:
    """`prhub weekly` posting a discussion and to `hook`."""
    env = {**env, "PRHUB_NOTIFY": hook.hook, "PRHUB_NOTIFY_FORMAT": hook.service}
    return prhub(env, *WEEK, "--discuss", "General", *args)


def test_a_failed_discussion_still_lets_the_chat_message_go(env, github):
    github.script(r"^/graphql$", [None, (200, {}, FORBIDDEN)])
    with WebhookStandIn("wecom") as hook:
        result = both(env, hook)
        assert result.exit_code == 19, result.stderr
        [message] = hook.messages
        assert "参与讨论" not in message["markdown"]["content"]  # no discussion to link
        lines = result.stderr.splitlines()
        assert "prhub: sent the week to the WeCom webhook" in lines
        assert lines[-1].startswith("prhub: error: GitHub refused posting the week's discussion")
        again = both(env, hook)  # the rerun posts the discussion and sends nothing twice
    assert again.exit_code == 0, again.stderr
    assert len(github.posts.discussions) == 1 and len(hook.messages) == 1


def test_each_failed_post_has_its_line_and_the_last_its_exit_code(env, github):
    github.script(r"^/graphql$", [None, (200, {}, FORBIDDEN)])
    with WebhookStandIn("slack") as hook:
        hook.script([(404, {}, b"no_service")])
        result = both(env, hook)
    assert result.exit_code == 19, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("prhub: error:")]
    assert len(errors) == 2
    assert "GitHub refused posting" in errors[0]
    assert errors[1] == (
        "prhub: error: the Slack webhook http://127.0.0.1/… refused the week's message "
        "(404: no_service)"
    )


def test_a_partial_week_exits_12_after_the_posts_say_what_failed(env, github, llm):
    llm.responder = lambda b: "not json" if "PR #104" in prompt_text(b) else responder(b)
    github.script(r"^/graphql$", [None, (200, {}, FORBIDDEN)])
    result = prhub(env, *WEEK, "--discuss", "General")
    assert result.exit_code == 12, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("prhub: error:")]
    assert "GitHub refused posting" in errors[0]
    assert errors[1].startswith("prhub: error: 1 PR failed (#104")


def test_a_report_on_stdout_is_printed_once(env, github):
    result = prhub(env, *WEEK, "--discuss", "General", "--out", "-", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("# rocket 仓库周报") == 1
    assert len(github.posts.discussions) == 1


def test_a_quiet_run_prints_only_the_reports_path(env, github, tmp_path):
    result = prhub(env, *WEEK, "--discuss", "General", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == "" and result.stdout.strip().endswith("2026-W31.md")
    report = tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md"
    assert github.posts.discussions[0]["url"] in report.read_text()


def test_all_posts_each_repository_as_its_section_asks(env, github, tmp_path):
    github.mirrors["acme/copy"] = "acme/rocket"
    (tmp_path / "prhub.toml").write_text(
        '[repos."acme/rocket"]\n[repos."acme/copy"]\ndiscuss = "General"\n',
        encoding="utf-8",
    )
    run = {**env, "PRHUB_REPO": None}
    result = prhub(run, "weekly", "--all", "--week", "31", "--year", "2026")
    assert result.exit_code == 0, result.stderr
    [made] = github.posts.discussions
    assert made["repo"] == "acme/copy" and made["url"].startswith(
        "https://github.com/acme/copy/discussions/"
    )
    copy = (tmp_path / "reports" / "acme" / "copy" / "2026-W31.md").read_text()
    assert f"[参与讨论]({made['url']})" in copy
    assert "参与讨论" not in (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").read_text()
    again = prhub(run, "weekly", "--all", "--week", "31", "--year", "2026")
    assert again.exit_code == 0, again.stderr
    assert len(github.posts.discussions) == 1 and "is up to date" in again.stderr


def test_all_counts_a_failed_post_as_its_repositorys_failure(env, github, tmp_path):
    (tmp_path / "prhub.toml").write_text('repos = ["acme/rocket"]\n', encoding="utf-8")
    github.script(r"^/graphql$", [None, (200, {}, FORBIDDEN)])
    run = {**env, "PRHUB_REPO": None}
    result = prhub(run, "weekly", "--all", "--week", "31", "--year", "2026", "--discuss", "General")
    assert result.exit_code == 19, result.stderr
    assert (
        "prhub: error: acme/rocket: GitHub refused posting the week's discussion" in result.stderr
    )
