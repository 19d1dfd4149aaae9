"""What `weekly` posts to is checked as early as it can be: a webhook of no host prhub knows
before any work, a discussion's page before it is kept, printed or linked."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.factories import prhub, responder

WEEK = ("weekly", "--week", "31", "--year", "2026")
REPORT = Path("reports") / "acme" / "rocket" / "2026-W31.md"


def test_a_webhook_of_no_known_host_is_refused_before_any_work(env, github, llm, tmp_path):
    hook = "https://chat.example.com/hooks/s3cretpath0000"
    result = prhub({**env, "PRHUB_NOTIFY": hook}, *WEEK)
    assert result.exit_code == 3, result.stderr
    assert result.stderr.splitlines() == [
        "prhub: error: the webhook https://chat.example.com/… is of no host prhub knows: pass "
        "--notify-format feishu, dingtalk, wecom, slack (or set notify_format)"
    ]
    assert github.requests == [] and llm.requests == []
    assert not (tmp_path / REPORT).exists()


@pytest.mark.parametrize(
    "page",
    [
        "javascript:alert(1)//github.com/acme/rocket/discussions/9",
        "https://evil.example/acme/rocket/discussions/9",
        "http://github.com/acme/rocket/discussions/9",
        "https://github.com/other/rocket/discussions/9",
    ],
)
def test_a_discussion_page_off_the_github_prhub_talks_to_is_not_kept(
    env, github, llm, tmp_path, store, page
):
    llm.responder = responder

    def made(request: dict[str, Any]) -> Any:
        discussion = {"id": "D_kwDOstandin9", "url": page}
        return 200, {}, {"data": {"createDiscussion": {"discussion": discussion}}}

    github.script(r"^/graphql$", [None, made])  # the repository's categories, then the post
    result = prhub(env, *WEEK, "--discuss", "General")
    assert result.exit_code == 19, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith(
        "prhub: error: GitHub named the week's post in acme/rocket at a page that is not one of "
        "its own on https://github.com ("
    )
    assert "posted the week's discussion" not in result.stderr
    assert page not in result.stderr
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM posts").fetchone()[0] == 0
        assert all(page not in row[0] for row in db.execute("SELECT data FROM reports"))
    assert "参与讨论" not in (tmp_path / REPORT).read_text()
