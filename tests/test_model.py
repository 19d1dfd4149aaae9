"""The model's behaviour: title conventions, tag folding, usage sums and computed properties."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prhub.model import (
    Coverage,
    DryRun,
    PlannedPR,
    PRDigest,
    PullRequest,
    Usage,
    parse_title,
    tag_name,
)
from tests.conftest import FIXTURES


@pytest.mark.parametrize(
    ("title", "modules", "kind", "breaking"),
    [
        ("[rollout, trainer] fix: x", ["rollout", "trainer"], "bugfix", False),
        ("feat!: y", [], "feature", True),
        ("no prefix at all", [], None, False),
        ("[BREAKING][vllm] feat(api): z", ["vllm"], "feature", True),
        ("[Doc] chore: a", ["docs"], "chore", False),
        ("[misc] hotfix: b", ["misc"], "bugfix", False),
        ("  [a,,b, a] newkind: c", ["a", "b"], "newkind", False),
        ("Fix: capital type", [], "bugfix", False),
        ("refactor(store)!: drop v1 schema", [], "refactor", True),
        ('Revert "[rollout] fix: x"', [], "revert", False),
        ("revert: undo #12 [BREAKING]", [], "revert", True),
        ("something [breaking] without a type", [], None, True),
    ],
)
def test_parse_title(title, modules, kind, breaking):
    assert parse_title(title) == (modules, kind, breaking)


@pytest.mark.parametrize(
    ("raw", "folded"),
    [
        ("doc", "docs"),
        ("Documentation", "docs"),
        (" tests ", "test"),
        ("bug", "bugfix"),
        ("enhancement", "feature"),
        ("Rollout", "rollout"),
    ],
)
def test_tag_name_folds_our_aliases(raw, folded):
    assert tag_name(raw) == folded


def test_tag_name_applies_a_repositorys_aliases_before_ours():
    aliases = {"ascend": "npu", "manual": "doc"}
    assert tag_name("Ascend", aliases) == "npu"
    assert tag_name("manual", aliases) == "docs"  # the repository's alias, then ours
    assert tag_name("doc", aliases) == "docs"
    assert tag_name("npu", aliases) == "npu"


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


def test_dry_run_totals_include_the_narrative():
    plan = DryRun(
        repo="o/r",
        prs=[
            PlannedPR(number=1, cached=False, calls=3, tokens_in=9000),
            PlannedPR(number=2, cached=True, calls=0, tokens_in=0),
            PlannedPR(number=3, cached=False, calls=1, tokens_in=1500),
        ],
        narrative_calls=2,
        narrative_tokens_in=4000,
    )
    assert plan.calls == 6
    assert plan.tokens_in == 14_500
    assert DryRun(repo="o/r", prs=[]).calls == 0


def test_digest_tags_are_modules_then_kind_then_folded_labels_without_repeats():
    d = PRDigest.model_validate_json((FIXTURES / "digests" / "101.json").read_text())
    d = d.model_copy(
        update={"modules": ["rollout", "docs"], "kind": "bugfix", "labels": ["Bug", "doc", "ci"]}
    )
    assert d.tags == ["rollout", "docs", "bugfix", "ci"]
    assert d.model_copy(update={"kind": None, "labels": []}).tags == ["rollout", "docs"]
