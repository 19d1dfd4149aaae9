"""Title conventions and tag folding."""

from __future__ import annotations

import pytest

from prhub.tags import parse_title, tag_name


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
