"""Content checks: what a digest must be beyond its schema."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prhub import checks
from prhub.model import DigestContent, FileChange, PullRequest
from prhub.prepare.facts import pr_facts

ADVICE = (
    "值得快速浏览。改动集中在 `sample_logits`，把温度为 0 的情形改成 argmax，"
    "避免贪心评估时除零导致概率变成 NaN；阅读时先看分支顺序，再看新增的单测如何覆盖两种输入。"
)


def pr(
    title: str = "[rollout] fix: clamp temperature", body: str = "", **kw: object
) -> PullRequest:
    files = kw.pop("files", None) or [
        FileChange(
            path="rocket/rollout/sampler.py",
            status="modified",
            additions=3,
            deletions=1,
            patch="@@ -1 +1 @@\n-def sample_logits(x):\n+def sample_logits(x, t):",
        )
    ]
    return PullRequest(
        repo="acme/rocket",
        number=101,
        title=title,
        body=body,
        author="me",
        created_at=datetime(2026, 7, 27, tzinfo=UTC),
        files=files,
        **kw,
    )


def content(**kw: object) -> DigestContent:
    fields: dict[str, object] = {
        "title": "采样温度为 0 时改走 argmax，修复贪心评估崩溃",
        "verdict": "快速浏览",
        "minutes": 4,
        "advice": ADVICE,
        "design_decisions": ["把温度为 0 当作贪心解码，而不是极小温度。"],
        "risks": [],
        "follow_ups": [],
        "importance": 5.5,
        "importance_reason": "修复评估主路径上的崩溃",
        "tags": ["rollout"],
        "related_prs": [],
    }
    return DigestContent.model_validate({**fields, **kw})


def test_a_good_digest_passes_every_check() -> None:
    p = pr()
    assert checks.failures(content(), p, pr_facts(p)) == []


@pytest.mark.parametrize(
    ("change", "failed"),
    [
        ({"title": "Clamp sampling temperature to avoid division by zero"}, "title_not_chinese"),
        ({"title": "修复采样\n| a | b |"}, "title_multiline"),
        ({"title": "修复" * 21}, "title_too_long"),
        ({"title": "修复 clamp temperature 问题"}, "title_copied"),
        ({"advice": ADVICE.replace("`sample_logits`", "采样函数")}, "advice_uncited"),
        (
            {"advice": "Worth a quick look: `sample_logits` now uses argmax at zero temperature."},
            "not_chinese",
        ),
    ],
)
def test_each_check_names_what_is_wrong(change: dict[str, str], failed: str) -> None:
    p = pr()
    assert failed in checks.failures(content(**change), p, pr_facts(p))


def test_identifiers_do_not_make_a_chinese_title_english() -> None:
    assert checks.chinese("修复 FSDP2 checkpoint 加载时的 OOM 问题")
    assert checks.chinese("为 `compute_policy_loss` 增加 token 级别的聚合模式")
    assert checks.chinese("修复 BucketedWeightReceiver 中的 IPC 错误")  # a real model's title
    assert not checks.chinese("Fix FSDP2 checkpoint loading OOM")
    assert not checks.chinese("修复 bug")  # too little Chinese to say anything


def test_a_revert_described_as_a_feature_fails() -> None:
    p = pr(title='Revert "[trainer] feat: add LoRA merging (#95)"')
    facts = pr_facts(p)
    assert facts.revert and facts.reverted == 95
    failed = checks.failures(content(title="为训练器新增 LoRA 合并功能"), p, facts)
    assert "revert_misread" in failed
    assert "revert_misread" not in checks.failures(
        content(title="回滚 #95：撤销训练器的 LoRA 合并"), p, facts
    )


def test_a_docs_only_pr_rated_high_fails() -> None:
    p = pr(files=[FileChange(path="docs/start.md", status="modified", additions=3, patch="+x")])
    failed = checks.failures(
        content(importance=8.0, advice=ADVICE + "见 start.md。"), p, pr_facts(p)
    )
    assert failed == ["docs_overrated"]


def test_the_correction_lists_each_problem_in_chinese() -> None:
    text = checks.correction(["title_not_chinese", "advice_uncited"])
    assert text.count("\n- ") == 2 and "标题必须用中文" in text and "JSON" in text


def test_a_discussion_line_copied_back_is_not_a_note() -> None:
    from prhub.checks import copied_entry

    assert copied_entry("[讨论] @lin-yue（CONTRIBUTOR）：Yes: an old checkpoint loads.")
    assert copied_entry("行内评论 booster/x.py:14] @hana（MEMBER）：A module constant")
    assert copied_entry("评审意见 @bot（NONE，bot）：LGTM")
    assert not copied_entry(
        "@hana 建议把 `SAVE_EVERY` 移到 `TrainerConfig`，未采纳，可作为待办跟进"
    )
    assert not copied_entry("评审中 @hana 批准了合并")


def test_chinese_discussion_notes_in_the_prompts_own_shape_pass() -> None:
    from prhub.checks import copied_entry, note_fails

    assert not note_fails("@alice（MEMBER）：建议把超时改为可配置，作者未采纳。")
    assert not note_fails("@wuxibin89 批准（APPROVED）")  # short, but what the prompt asks for
    assert copied_entry("@hana（MEMBER）：A module constant here hides the interval")
    assert note_fails("Copilot suggested a test for odd lengths.")
