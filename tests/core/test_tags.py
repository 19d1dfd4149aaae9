"""Title conventions and tag folding."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prhub.model import PullRequest
from prhub.prepare.facts import pr_facts
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
        ("fix: drop the v1 loader [BREAKING]", [], "bugfix", True),
        ("[vllm, breaking] fix: x", ["vllm"], "bugfix", True),
    ],
)
def test_parse_title(title, modules, kind, breaking):
    assert parse_title(title)[:3] == (modules, kind, breaking)


@pytest.mark.parametrize(
    ("title", "revert", "reverted"),
    [
        ('Revert "[rollout] fix: x (#95)"', True, 95),
        ("[trainer] revert: undo the LoRA merge", True, None),
        ("Revert #95", True, 95),
        ("Revert the cache change", True, None),
        ("Reverting the cache change", False, None),  # describes a change, as "Reverted …"
        ("Reverted 'old' behaviour of X", False, None),
        ("Revertible checkpoints for the trainer", False, None),
        ("[ckpt] feat: revert-safe checkpoint writes", False, None),
        ("fix: revert to fp32 accumulation", False, None),  # the type is fix
    ],
)
def test_one_revert_rule_for_tags_and_facts(title, revert, reverted):
    """The tags and the facts told to the model agree on what is a revert."""
    pr = PullRequest(
        repo="acme/rocket", number=101, title=title, author="me", created_at=datetime.now(UTC)
    )
    assert parse_title(title).revert is revert
    assert (parse_title(title).kind == "revert") is revert
    facts = pr_facts(pr)
    assert (facts.revert, facts.reverted) == (revert, reverted)


def test_the_subject_is_the_title_without_its_prefix():
    assert parse_title("[rollout, vllm] fix(api)!: clamp the temperature").subject == (
        "clamp the temperature"
    )
    assert parse_title('Revert "fix: x"').subject == 'Revert "fix: x"'


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
