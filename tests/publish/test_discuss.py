"""`weekly --discuss`: one GitHub discussion a week (an issue where Discussions are off), updated
in place when the report changes, never posted twice; through PyGithub against the GitHub
stand-in's GraphQL API."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.factories import prhub, responder
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import prompt_text

WEEK = ("weekly", "--week", "31", "--year", "2026")
DISCUSSIONS = "https://github.com/acme/rocket/discussions/"


@pytest.fixture(autouse=True)
def _narrated(llm: LLMStandIn) -> None:
    """A narrative whose highlights cite PRs, as a model's do."""
    llm.responder = responder


def report_text(tmp_path: Path) -> str:
    return (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").read_text()


def mutations(github: GitHubStandIn) -> list[str]:
    """The GraphQL mutations the stand-in was sent, by name."""
    queries = [r["body"]["query"] for r in github.requests if r["path"] == "/graphql"]
    return [re.search(r"\{\s*(\w+)\(", q)[1] for q in queries if q.startswith("mutation")]


def test_a_week_is_posted_once_and_the_report_links_its_discussion(env, github, tmp_path, store):
    first = prhub(env, *WEEK, "--discuss", "Announcements")
    assert first.exit_code == 0, first.stderr
    [made] = github.posts.discussions
    assert made["title"] == "rocket 仓库周报｜2026 年第 31 周（07-27 至 08-02）"
    assert made["url"].startswith(DISCUSSIONS)
    assert f"prhub: posted the week's discussion {made['url']}" in first.stderr.splitlines()
    body = made["body"]
    assert "**本周亮点**" in body and "**风险观察**" in body
    # Its #N link to the PRs, and it says where it comes from.
    assert "[#101](https://github.com/acme/rocket/pull/101)" in body
    assert "acme/rocket · 2026-07-27 至 2026-08-02 · 来源 PR 6" in body
    categories = {c["id"]: c["name"] for c in github.posts._categories("acme/rocket")}
    assert categories[made["category"]] == "Announcements"
    # The report written before the post is written again with the link; so is the store's.
    assert report_text(tmp_path).count(f"[参与讨论]({made['url']})") == 1
    with sqlite3.connect(store) as db:
        [(data,)] = db.execute("SELECT data FROM reports").fetchall()
    assert json.loads(data)["meta"]["discussion_url"] == made["url"]
    again = prhub(env, *WEEK, "--discuss", "Announcements")
    assert again.exit_code == 0, again.stderr
    assert len(github.posts.discussions) == 1 and mutations(github) == ["createDiscussion"]
    assert f"prhub: the week's discussion is up to date: {made['url']}" in again.stderr
    assert "unchanged reports/acme/rocket/2026-W31.md" in again.stderr.replace("\\", "/")


def test_a_changed_report_updates_its_discussion_in_place(env, github, llm, tmp_path):
    def flaky(body: dict[str, Any]) -> str:
        return "not json" if "PR #104" in prompt_text(body) else responder(body)

    llm.responder = flaky
    partial = prhub(env, *WEEK, "--discuss", "general")  # a category by its slug
    assert partial.exit_code == 12, partial.stderr  # a partial week is posted, and says so
    [made] = github.posts.discussions
    assert "本周 6 个 PR 中有 1 个未能生成导读。" in made["body"]
    llm.responder = responder
    whole = prhub(env, *WEEK, "--discuss", "General")
    assert whole.exit_code == 0, whole.stderr
    assert github.posts.discussions == [made]  # the same discussion, its text changed
    assert "未能生成导读" not in made["body"]
    assert mutations(github) == ["createDiscussion", "updateDiscussion"]
    assert f"prhub: updated the week's discussion {made['url']}" in whole.stderr
    assert f"[参与讨论]({made['url']})" in report_text(tmp_path)


def test_another_week_gets_its_own_discussion(env, github):
    assert prhub(env, *WEEK, "--discuss", "General").exit_code == 0
    other = prhub(env, "weekly", "--week", "32", "--year", "2026", "--discuss", "General")
    assert other.exit_code == 0, other.stderr
    titles = [d["title"] for d in github.posts.discussions]
    assert len(titles) == 2 and "第 32 周" in titles[1]


def test_where_discussions_are_off_the_week_is_an_issue(env, github, tmp_path):
    github.posts.off.add("acme/rocket")
    first = prhub(env, *WEEK, "--discuss", "Announcements")
    assert first.exit_code == 0, first.stderr
    assert github.posts.discussions == []
    [issue] = github.posts.issues
    url = f"https://github.com/acme/rocket/issues/{issue['number']}"
    assert issue["title"].startswith("rocket 仓库周报") and "**本周亮点**" in issue["body"]
    assert f"prhub: acme/rocket has Discussions off: posted the week as issue {url}" in first.stderr
    assert f"[参与讨论]({url})" in report_text(tmp_path)
    assert prhub(env, *WEEK, "--discuss", "Announcements").exit_code == 0
    assert len(github.posts.issues) == 1
    posts = [r for r in github.requests if r["path"] == "/repos/acme/rocket/issues"]
    assert [r["method"] for r in posts] == ["POST"]


def test_an_unknown_category_names_the_ones_there_are_and_keeps_the_report(env, github, tmp_path):
    result = prhub(env, *WEEK, "--discuss", "Weekly")
    assert result.exit_code == 3, result.stderr
    last = result.stderr.splitlines()[-1]
    assert last == (
        "prhub: error: acme/rocket has no discussion category 'Weekly' (it has: Announcements, "
        "General, Ideas, Polls, Q&A, Show and tell): pass one of them to --discuss, or add it "
        "in the repository's Discussions"
    )
    assert github.posts.discussions == [] and mutations(github) == []
    assert "参与讨论" not in report_text(tmp_path)  # written, without a link
    github.posts.categories["acme/rocket"] = ["Weekly"]
    fixed = prhub(env, *WEEK, "--discuss", "Weekly")  # the rerun posts it
    assert fixed.exit_code == 0, fixed.stderr
    assert len(github.posts.discussions) == 1


def test_a_refused_post_is_its_own_exit_code_and_a_rerun_posts_it(env, github, tmp_path):
    forbidden = {
        "data": {"createDiscussion": None},
        "errors": [
            {
                "type": "FORBIDDEN",
                "path": ["createDiscussion"],
                "locations": [{"line": 1, "column": 54}],
                "message": "Resource not accessible by integration",
            }
        ],
    }
    github.script(r"^/graphql$", [None, (200, {}, forbidden)])
    result = prhub(env, *WEEK, "--discuss", "General")
    assert result.exit_code == 19, result.stderr
    last = result.stderr.splitlines()[-1]
    refused = "prhub: error: GitHub refused posting the week's discussion in acme/rocket"
    assert last.startswith(refused)
    assert "Resource not accessible by integration" in last and "discussions: write" in last
    assert "Traceback" not in result.output
    assert "rocket 仓库周报" in report_text(tmp_path)  # the report is kept
    again = prhub(env, *WEEK, "--discuss", "General")
    assert again.exit_code == 0, again.stderr
    assert len(github.posts.discussions) == 1


def test_a_create_whose_answer_is_lost_is_not_sent_again(env, github):
    github.script(r"^/graphql$", [None, (502, {}, {"message": "Server Error"})])
    result = prhub(env, *WEEK, "--discuss", "General")
    assert result.exit_code == 19, result.stderr
    assert "GitHub answered 502 while posting" in result.stderr.splitlines()[-1]
    assert mutations(github) == ["createDiscussion"]  # once: a second might make a second


def test_a_store_imported_from_a_site_updates_the_discussion_it_names(env, github, tmp_path, store):
    assert prhub(env, *WEEK, "--discuss", "General").exit_code == 0
    [made] = github.posts.discussions
    with sqlite3.connect(store) as db:  # the posts a site's JSON does not carry
        db.execute("DELETE FROM posts")
    again = prhub(env, *WEEK, "--discuss", "General")
    assert again.exit_code == 0, again.stderr
    assert github.posts.discussions == [made]  # updated, not posted again
    assert mutations(github) == ["createDiscussion", "updateDiscussion"]
    third = prhub(env, *WEEK, "--discuss", "General")
    assert "is up to date" in third.stderr and len(mutations(github)) == 2


def test_the_discussion_can_go_to_another_repository(env, github, store):
    result = prhub(env, *WEEK, "--discuss", "General", "--discuss-repo", "ACME/booster")
    assert result.exit_code == 0, result.stderr
    [made] = github.posts.discussions
    assert made["repo"] == "acme/booster"
    # Its PR links name the digested repository: GitHub would link a bare #101 to booster's.
    assert "[#101](https://github.com/acme/rocket/pull/101)" in made["body"]
    with sqlite3.connect(store) as db:
        [(repo, target)] = db.execute("SELECT repo, target FROM posts").fetchall()
    assert (repo, target) == ("acme/rocket", "acme/booster")


def test_a_repository_that_is_not_there_is_a_failed_post(env, github):
    result = prhub(env, *WEEK, "--discuss", "General", "--discuss-repo", "acme/nowhere")
    assert result.exit_code == 19, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "prhub: error: repository acme/nowhere not found while looking up acme/nowhere (or the "
        "token cannot see it): check --discuss-repo"
    )


def test_an_empty_week_posts_nothing(env, github):
    result = prhub(env, "weekly", "--week", "20", "--year", "2026", "--discuss", "General")
    assert result.exit_code == 0, result.stderr
    assert "prhub: nothing posted: no PR was merged in the week" in result.stderr
    assert mutations(github) == [] and github.posts.discussions == []


def test_a_blank_category_is_refused_before_anything_runs(env, llm):
    result = prhub(env, *WEEK, "--discuss", "  ")
    assert result.exit_code == 3, result.stderr
    assert result.stderr == "prhub: error: --discuss: names no discussion category\n"
    assert llm.bodies == []


def test_the_store_keeps_what_was_posted_where(env, github, store):
    assert prhub(env, *WEEK, "--discuss", "General").exit_code == 0
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT repo, kind, target, url, node, hash FROM posts").fetchall()
    [made] = github.posts.discussions
    [(repo, kind, target, url, node, digest)] = rows
    assert (repo, kind, target, url, node) == (
        "acme/rocket",
        "discussion",
        "acme/rocket",
        made["url"],
        made["id"],
    )
    assert len(digest) == 16


@pytest.mark.parametrize(
    ("rest", "graphql"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
    ],
)
def test_discussions_are_asked_where_github_serves_graphql(rest, graphql):
    from prhub.config import Settings
    from prhub.github.source import connect

    client = connect(Settings(github_url=rest))
    try:
        assert client.requester.graphql_url == graphql
    finally:
        client.close()


def test_without_a_token_the_post_says_to_set_one(env, github):
    github.token = None  # the stand-in serves anyone its REST API
    github.script(
        r"^/graphql$", [(401, {}, {"message": "This endpoint requires you to be authenticated."})]
    )
    result = prhub({**env, "GITHUB_TOKEN": None}, *WEEK, "--discuss", "General")
    assert result.exit_code == 19, result.stderr
    assert result.stderr.splitlines()[-1] == (
        "prhub: error: GitHub wants a token with write access for looking up acme/rocket, and "
        "none is set: export GITHUB_TOKEN (or GH_TOKEN)"
    )
