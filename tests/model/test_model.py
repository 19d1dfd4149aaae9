"""The model's behaviour: usage sums and computed properties."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prhub.model import Coverage, PRDigest, PullRequest, Usage
from tests.factories import FIXTURES


def test_usage_adds_field_by_field_and_leaves_operands_alone():
    a = Usage(calls=1, tokens_in=100, tokens_out=20)
    b = Usage(calls=2, tokens_in=5, tokens_out=7)
    assert a + b == Usage(calls=3, tokens_in=105, tokens_out=27)
    assert a == Usage(calls=1, tokens_in=100, tokens_out=20)
    assert sum([a, b, b], Usage()) == Usage(calls=5, tokens_in=110, tokens_out=34)


def pull(**extra) -> PullRequest:
    values = {
        "repo": "o/r",
        "number": 7,
        "title": "t",
        "author": "a",
        "created_at": datetime(2026, 7, 27, tzinfo=UTC),
        "head_sha": "headsha",
    }
    return PullRequest(**{**values, **extra})


def test_version_is_the_merge_commit_when_merged_else_the_head():
    assert pull(merged=True, merge_commit_sha="mergesha").version == "mergesha"
    assert pull().version == "headsha"
    assert pull(merge_commit_sha=None, head_sha="").version == ""


@pytest.mark.parametrize(
    ("seen", "total", "share"), [(0, 0, 1.0), (5, 0, 1.0), (0, 40, 0.0), (10, 40, 0.25)]
)
def test_coverage_share_seen(seen, total, share):
    assert Coverage(lines_seen=seen, lines_total=total).share_seen == share


def test_digest_tags_are_modules_then_kind_then_folded_labels_without_repeats():
    d = PRDigest.model_validate_json((FIXTURES / "digests" / "101.json").read_text())
    d = d.model_copy(
        update={"modules": ["rollout", "docs"], "kind": "bugfix", "labels": ["Bug", "doc", "ci"]}
    )
    assert d.tags == ["rollout", "docs", "bugfix", "ci"]
    assert d.model_copy(update={"kind": None, "labels": []}).tags == ["rollout", "docs"]
