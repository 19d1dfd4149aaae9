"""A weak model's digest made honest and as useful as it can be: verdicts checked against what
the PR changed, copied prompt words cut (not the sentences they sit in), answers set in the
example's brackets kept, an empty required field asked again and named when it stays empty, and
a correction that comes back unchanged asked once more afresh."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prhub.digest.checks import failures, unechoed
from prhub.digest.digest import digest_pr
from prhub.llm.llm import LLM
from prhub.llm.prompt import AFRESH
from prhub.model import ChunkNotes, DigestContent, PRDigest, PullRequest
from prhub.prepare.facts import pr_facts
from prhub.publish.footers import digest_footer
from tests.factories import change, digest_content, make_pr, settings
from tests.standins import LLMStandIn
from tests.standins.llm import prompt_text

ADVICE = "值得精读：先看 `rocket/rollout/sampler.py` 的温度下限，再看调用方如何传入温度。"


def code_pr() -> PullRequest:
    pr = make_pr([change("rocket/rollout/sampler.py", added=30, deleted=4)], title="fix: clamp")
    return pr.model_copy(update={"additions": 30, "deletions": 4})


def ci_pr() -> PullRequest:
    pr = make_pr([change(".github/workflows/ci.yml", added=20, deleted=2)], title="ci: bump")
    return pr.model_copy(update={"additions": 20, "deletions": 2})


def reply(**fields: Any) -> dict[str, Any]:
    made = {
        "title": "为采样温度加下限，避免除以零",
        "verdict": "快速浏览",
        "minutes": 5,
        "advice": ADVICE,
        "design_decisions": [],
        "risks": [],
        "follow_ups": [],
        "discussion": [],
        "importance": 5,
        "importance_reason": "修复主路径上的除零错误。",
        "related_prs": [],
    }
    return {**made, **fields}


def answering(*replies: dict[str, Any]) -> Callable[[dict[str, Any]], str]:
    """A model that gives `replies` in turn, the last one for every request after."""
    left = list(replies)

    def answer(body: dict[str, Any]) -> str:
        return json.dumps(left.pop(0) if len(left) > 1 else left[0], ensure_ascii=False)

    return answer


def digested(llm: LLMStandIn, pr: PullRequest) -> PRDigest:
    config = settings(llm)
    client = LLM(config)
    try:
        return digest_pr(pr, config, client)
    finally:
        client.close()


def test_a_close_read_of_a_change_without_code_is_corrected(llm):
    advice = (
        "只改了 `.github/workflows/ci.yml` 里测试矩阵的 Python 版本，维护持续集成的同学扫一眼即可。"
    )
    llm.responder = answering(
        reply(verdict="精读", advice=advice),
        reply(verdict="可跳过", advice=advice, importance=2),
    )
    made = digested(llm, ci_pr())
    assert len(llm.bodies) == 2
    assert "精读" in prompt_text(llm.bodies[1]) and "快速浏览" in prompt_text(llm.bodies[1])
    assert made.content.verdict == "可跳过" and made.meta.failed_checks == []


def test_a_verdict_is_judged_by_what_the_pr_changed():
    rated = digest_content(advice=ADVICE, verdict="精读")
    assert "verdict_overrated" in failures(rated, ci_pr(), pr_facts(ci_pr()))
    assert "verdict_overrated" not in failures(rated, code_pr(), pr_facts(code_pr()))
    tiny = code_pr().model_copy(update={"additions": 1, "deletions": 1})
    assert "verdict_overrated" in failures(rated, tiny, pr_facts(tiny))


def test_copied_prompt_words_go_and_what_the_model_wrote_after_them_stays():
    copied = "值不值得读、读哪里、为什么：这个 PR 值得精读，重点看 `a.py` 的重试逻辑。"
    only = "阅读建议必须点名至少一个本 PR 改动的文件或标识符。"
    c, drops = unechoed(digest_content(advice=copied + only, risks=[only, "重试没有上限。"]))
    assert c.advice == "这个 PR 值得精读，重点看 `a.py` 的重试逻辑。"
    assert c.risks == ["重试没有上限。"]
    assert [(d.field, d.text) for d in drops] == [
        ("risks", only),
        ("advice", "值不值得读、读哪里、为什么："),
        ("advice", only),
    ]
    assert all(d.reason == "echoed_prompt" for d in drops)


def test_a_correction_copied_whole_goes_but_its_fact_in_the_models_words_stays():
    """A weak model answered a verdict correction by pasting it into its advice (other quote
    marks and all); a digest that states the same fact in its own words keeps it."""
    pasted = (
        "这个 PR 没有改手写代码（只改了文档、配置、CI 或依赖版本），或者改动极小，"
        "阅读建议不应是‘精读’，应为‘快速浏览’或‘可跳过’。"
    )
    c, drops = unechoed(digest_content(advice="只改了 `ci.yml` 的镜像标签。" + pasted))
    assert c.advice == "只改了 `ci.yml` 的镜像标签。"
    assert [(d.field, d.reason) for d in drops] == [("advice", "echoed_prompt")]
    own = "这个 PR 没有改手写代码，只换了 `ci.yml` 的镜像，快速浏览即可。"
    assert unechoed(digest_content(advice=own))[0].advice == own


def test_an_empty_advice_is_asked_again_and_named_when_it_stays_empty(llm):
    llm.responder = answering(reply(advice=""))
    made = digested(llm, code_pr())
    assert len(llm.bodies) == 3  # the correction came back unchanged: asked once more afresh
    assert "阅读建议（advice）不能为空" in prompt_text(llm.bodies[1])
    assert made.meta.failed_checks == ["advice_empty"]  # not "正文不是中文"
    assert "未通过检查：阅读建议为空" in digest_footer(made)


def test_an_empty_advice_answered_on_the_second_ask_is_published(llm):
    llm.responder = answering(reply(advice=""), reply())
    made = digested(llm, code_pr())
    assert len(llm.bodies) == 2 and made.content.advice == ADVICE
    assert made.meta.failed_checks == []


def test_a_correction_that_comes_back_unchanged_is_asked_afresh(llm):
    english = reply(advice="Read the sampler: it clamps the temperature before dividing by it.")
    llm.responder = answering(english, english, reply())
    made = digested(llm, code_pr())
    first, told, again = (prompt_text(b) for b in llm.bodies)
    assert "上一次回复有以下问题" in told and told.endswith("格式重新输出完整结果。")
    assert again.endswith(AFRESH) and english["advice"] not in again
    assert made.content.advice == ADVICE and made.meta.failed_checks == []


def test_an_answer_set_in_the_examples_brackets_is_kept_without_them(make_llm, llm):
    llm.responder = answering(
        {
            "summary": "<这一段给采样器加了温度下限>",
            "key_files": ["<rocket/rollout/sampler.py>"],
            "identifiers": ["<clamp_temperature>"],
            "risks": ["<无风险点>"],
        }
    )
    notes, _ = make_llm("json_object").complete([{"role": "user", "content": "x"}], ChunkNotes)
    assert notes.summary == "这一段给采样器加了温度下限"
    assert notes.key_files == ["rocket/rollout/sampler.py"]
    assert notes.identifiers == ["clamp_temperature"] and notes.risks == []


def test_a_reply_corrected_with_itself_is_asked_afresh_without_it(make_llm, llm):
    broken = '{"title": "x"}'
    replies = [broken, broken, json.dumps(reply(), ensure_ascii=False)]
    llm.responder = lambda body: replies.pop(0)
    content, usage = make_llm().complete([{"role": "user", "content": "写导读"}], DigestContent)
    assert content.advice == ADVICE and usage.calls == 3
    last = llm.bodies[-1]["messages"]
    assert not any(m["role"] == "assistant" for m in last)  # the bad reply is not sent back
    assert last[-1]["content"].endswith(AFRESH)
