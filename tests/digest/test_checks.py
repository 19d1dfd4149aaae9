"""Content checks: what a digest must be beyond its schema."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prhub.digest import checks
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
    from prhub.digest.checks import copied_entry

    assert copied_entry("[讨论] @lin-yue（CONTRIBUTOR）：Yes: an old checkpoint loads.")
    assert copied_entry("行内评论 booster/x.py:14] @hana（MEMBER）：A module constant")
    assert copied_entry("评审意见 @bot（NONE，bot）：LGTM")
    assert not copied_entry(
        "@hana 建议把 `SAVE_EVERY` 移到 `TrainerConfig`，未采纳，可作为待办跟进"
    )
    assert not copied_entry("评审中 @hana 批准了合并")


def test_chinese_discussion_notes_in_the_prompts_own_shape_pass() -> None:
    from prhub.digest.checks import copied_entry, note_fails

    assert not note_fails("@alice（MEMBER）：建议把超时改为可配置，作者未采纳。")
    assert not note_fails("@wuxibin89 批准（APPROVED）")  # short, but what the prompt asks for
    assert copied_entry("@hana（MEMBER）：A module constant here hides the interval")
    assert note_fails("Copilot suggested a test for odd lengths.")


def test_published_notes_are_those_on_a_discussion_shown_that_copy_none_of_it() -> None:
    copied = "[讨论] @lead（MEMBER）：Please add a test."
    own = "@lead 要求补一个单元测试，作者承诺在后续 PR 处理。"
    english = "Copilot suggested a test for odd lengths."
    reply = content(discussion=[copied, own])
    failed = checks.failures(reply, pr(), pr_facts(pr()))
    assert failed == ["discussion_copied"]  # the reply as written is asked once more
    kept, still = checks.published(reply, failed, discussed=True)
    assert (kept.discussion, still) == ([own], [])  # the copy went, and the failure with it
    kept, still = checks.published(content(discussion=[copied, english]), failed, True)
    assert (kept.discussion, still) == ([english], ["discussion_copied"])
    kept, still = checks.published(content(discussion=[own]), [], discussed=False)
    assert (kept.discussion, still) == ([], [])  # no discussion shown: no notes on one


def test_one_length_rule_in_one_unit_stated_identically_everywhere() -> None:
    from prhub.llm.prompt import load_prompt
    from prhub.model import ChineseTitle

    rule = checks.TITLE_RULE
    assert rule in (DigestContent.model_fields["title"].description or "")
    assert rule in (ChineseTitle.model_fields["title"].description or "")
    assert rule in checks.MESSAGES["title_too_long"]
    for task in ("digest", "digest_title"):
        source = load_prompt(task).source  # the latest version's templates
        assert rule in source, task
        assert "40 个" not in source and "≤40" not in source, task


def test_a_title_counts_words_and_identifiers_as_one_each() -> None:
    assert checks.title_length("修复 `compute_policy_loss` 的 OOM 问题") == 7
    assert checks.title_length("消除 O(N^2) 重复 tokenize，提速 8 倍") == 11
    assert checks.title_length("新增 GLM-5.2 在 verl/models/pad.py 的示例。") == 8


def test_only_what_a_reader_rejects_costs_a_corrective_call() -> None:
    p = pr()
    slightly_long = "修复" * 22  # 44 字: over the rule, still one readable line
    failed = checks.failures(content(title=slightly_long), p, pr_facts(p))
    assert failed == ["title_too_long"] and not checks.needs_correction(failed)
    rambling = "修复" * 31
    assert checks.title_failures(rambling) == ["title_far_too_long"]
    assert checks.needs_correction(checks.title_failures(rambling))
    english = checks.title_failures("Clamp sampling temperature to avoid division by zero")
    assert english == ["title_not_chinese"] and checks.needs_correction(english)
    copied = checks.title_failures(
        "修复 clamp temperature 问题", "[rollout] fix: clamp temperature"
    )
    assert copied == ["title_copied"] and checks.needs_correction(copied)


def test_a_chinese_title_with_english_terms_passes_and_english_copied_back_fails() -> None:
    # as strong models and the references write them
    assert checks.chinese(
        "连续 token 将 generation prompt 融合进末组渲染，消除 O(N^2) 重复 tokenize"
    )
    assert checks.chinese("新增 Ascend NPU batch-invariant 开关回归测试（14 例）")
    assert checks.chinese("修复 trl 新版本下 value-head critic 导入崩溃")
    assert not checks.chinese("Fuse the generation prompt into the last group render")
    assert not checks.chinese("修复：fuse the generation prompt into the last group render")


def test_sentences_and_items_that_repeat_the_prompt_are_dropped_and_recorded():
    from prhub.digest.checks import unechoed
    from prhub.model import DigestContent

    # What the local 1.5B model wrote: the example's note and a corrective message handed back.
    content = DigestContent(
        title="修复 IPC 检查",
        verdict="快速浏览",
        minutes=5,
        advice="值不值得读、读哪里、为什么，先结论，再理由。本 PR 在 `ipc_collect` 前检查 IPC。",
        design_decisions=["标题必须用中文概括改动（标识符可以保留英文）。", "复用设备抽象判断 IPC"],
        risks=[],
        follow_ups=[],
        importance=4,
        importance_reason="局部修复。",
        related_prs=[],
    )
    out, drops = unechoed(content)
    assert out.advice == "本 PR 在 `ipc_collect` 前检查 IPC。"
    assert out.design_decisions == ["复用设备抽象判断 IPC"]
    assert [(d.field, d.reason) for d in drops] == [
        ("design_decisions", "echoed_prompt"),
        ("advice", "echoed_prompt"),
    ]
    assert unechoed(out) == (out, [])
