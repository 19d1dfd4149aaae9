"""What forgetting counts before it removes: the GitHub requests a pruned PR costs again."""

from __future__ import annotations

from datetime import UTC, datetime

from prhub.model import Comment
from prhub.store.forget import fetch_requests
from tests.factories import change, make_pr


def comment(kind: str) -> Comment:
    return Comment(kind=kind, author="a", body="b", created_at=datetime(2026, 7, 27, tzinfo=UTC))


def test_a_pruned_pr_costs_its_pull_files_pages_reviews_and_comments_again() -> None:
    small = make_pr([change("a.py")])
    assert fetch_requests(small) == 3  # the pull, one page of files, its reviews
    big = make_pr([change(f"f{i}.py") for i in range(250)])  # three pages of files
    discussed = big.model_copy(
        update={"discussion": [comment("review"), comment("inline"), comment("conversation")]}
    )
    assert fetch_requests(discussed) == 1 + 3 + 1 + 2  # review bodies come with the reviews
