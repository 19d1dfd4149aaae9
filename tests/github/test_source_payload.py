"""GitHub's payloads as prhub's model: review discussion and .gitattributes text."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from prhub.errors import GitHubUnavailable
from prhub.github.source_payload import attributes_text, discussion, pull_request_from_payload
from tests.factories import FIXTURES

PULLS = FIXTURES / "github" / "acme" / "booster" / "pulls"


def load(name: str) -> Any:
    return json.loads((PULLS / name).read_text())


def user(login: str, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": 1, "type": kind}


def said(
    body: str | None, when: str | None = "2026-07-21T09:00:00Z", **extra: Any
) -> dict[str, Any]:
    return {"user": user("ada"), "body": body, "created_at": when, **extra}


def test_the_fixture_pr_carries_its_whole_discussion() -> None:
    pr = pull_request_from_payload(
        "acme/booster",
        load("12.json"),
        load("12.files.json"),
        load("12.reviews.json"),
        load("12.comments.json"),
        load("12.issue_comments.json"),
    )
    assert [c.kind for c in pr.discussion].count("conversation") == 3
    assert [c.kind for c in pr.discussion].count("inline") == 3
    assert [c.kind for c in pr.discussion].count("review") == 2  # one of three has no body
    assert [(r.author, r.state) for r in pr.reviews][1] == ("lin-yue", "COMMENTED")


def test_without_discussion_lists_a_pr_has_none() -> None:
    pr = pull_request_from_payload("acme/booster", load("12.json"), load("12.files.json"))
    assert pr.discussion == []


@pytest.mark.parametrize(
    ("author", "bot"),
    [
        (user("dependabot[bot]", "Bot"), True),
        (user("codecov", "Bot"), True),
        (user("renovate[bot]"), True),  # the login alone says so
        (user("bottleneck"), False),
        (user("octo-org", "Organization"), False),
        (None, False),
    ],
)
def test_a_bot_is_told_by_its_type_or_its_login(author: dict[str, Any] | None, bot: bool) -> None:
    (comment,) = discussion([], [], [{**said("hi"), "user": author}])
    assert comment.bot is bot


def test_a_deleted_account_is_ghost_and_a_missing_association_is_none() -> None:
    (comment,) = discussion([], [], [{"user": None, "body": "hi", "created_at": None}])
    assert (comment.author, comment.association) == ("ghost", "NONE")


def test_an_inline_comment_keeps_its_line_or_the_original_one() -> None:
    inline = [
        said("now", path="a.py", line=7, original_line=5),
        said("outdated", path="a.py", line=None, original_line=5),
        said("on the file", path="b.py", line=None, original_line=None),
    ]
    assert [(c.path, c.line) for c in discussion([], inline, [])] == [
        ("a.py", 7),
        ("a.py", 5),
        ("b.py", None),
    ]


def test_discussion_is_oldest_first_and_ties_keep_githubs_order() -> None:
    reviews = [
        {"user": user("r"), "body": "pending", "state": "PENDING"},  # no time: last
        {
            "user": user("r"),
            "body": "late",
            "state": "APPROVED",
            "submitted_at": "2026-07-23T00:00Z",
        },
    ]
    inline = [said("b", "2026-07-22T00:00:00Z", path="x"), said("c", "2026-07-22T00:00:00Z")]
    conversation = [said("a", "2026-07-21T08:00:00+08:00")]
    assert [c.body for c in discussion(reviews, inline, conversation)] == [
        "a",
        "b",
        "c",
        "late",
        "pending",
    ]


def test_empty_and_blank_bodies_say_nothing() -> None:
    reviews = [{"user": user("r"), "body": "", "state": "APPROVED"}]
    assert discussion(reviews, [said(" \n")], [said(None)]) == []


def test_a_lone_surrogate_in_a_comment_becomes_a_replacement_character() -> None:
    (comment,) = discussion([], [], [said("bad \ud800 byte")])
    assert comment.body == "bad \ufffd byte"


# .gitattributes


def encoded(text: str) -> dict[str, Any]:
    data = base64.b64encode(text.encode()).decode()
    wrapped = "".join(data[i : i + 60] + "\n" for i in range(0, len(data), 60))
    return {"type": "file", "encoding": "base64", "content": wrapped}


def test_attributes_text_decodes_githubs_wrapped_base64() -> None:
    text = "*.pb.go linguist-generated=true\n" * 5 + "vendor/** linguist-vendored\n"
    assert attributes_text("o/r", encoded(text)) == text


def test_attributes_text_of_invalid_utf8_is_replaced_not_refused() -> None:
    content = {"type": "file", "encoding": "base64", "content": base64.b64encode(b"a\xff").decode()}
    assert attributes_text("o/r", content) == "a\ufffd"


def test_a_gitattributes_that_is_no_file_has_no_attributes() -> None:
    assert attributes_text("o/r", {"type": "symlink", "target": "elsewhere"}) == ""
    assert attributes_text("o/r", {"type": "none"}) == ""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"type": "file", "encoding": "none", "content": ""}, "encoding 'none'"),
        ({"type": "file", "encoding": "base64", "content": "abc"}, "broken base64"),
    ],
)
def test_attributes_github_did_not_send_are_an_error(content: dict[str, Any], message: str) -> None:
    with pytest.raises(GitHubUnavailable, match=message):
        attributes_text("o/r", content)
