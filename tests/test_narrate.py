"""The weekly narrative: digest lines, planned calls, and map-reduce through the LLM stand-in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from prhub import narrate
from prhub.config import Settings
from prhub.llm import LLM
from prhub.model import PRDigest
from prhub.narrate import DIGEST_LINE_TOKENS, digest_line, draft_text, planned_tokens
from prhub.prepare.tokens import count
from prhub.report import Trend, WeeklyNarrative, WeeklyReport
from tests.conftest import FIXTURES, OPENAI_KEY
from tests.standins import LLMStandIn
from tests.standins.llm import default_responder, prompt_text

SETTINGS = Settings()


def report() -> WeeklyReport:
    path = FIXTURES / "reports" / "acme-rocket-2026-W31.json"
    return WeeklyReport.model_validate_json(path.read_text())


def digest(**content: Any) -> PRDigest:
    d = PRDigest.model_validate_json((FIXTURES / "digests" / "101.json").read_text())
    return d.model_copy(update={"content": d.content.model_copy(update=content)})


def many_long_digests(n: int) -> list[PRDigest]:
    """`n` digests whose lines each fill their share of the weekly prompt."""
    wordy = digest(risks=["并发写入可能丢数据。" * 30])
    return [wordy.model_copy(update={"number": 1000 + i}) for i in range(n)]


@pytest.fixture
def client(llm: LLMStandIn) -> Iterator[Any]:
    """An LLM client for the stand-in, made per settings and closed after the test."""
    made: list[LLM] = []

    def make(settings: Settings) -> LLM:
        made.append(LLM(settings))
        return made[-1]

    yield make
    for c in made:
        c.close()


def on(llm: LLMStandIn, **extra: Any) -> Settings:
    return Settings(openai_base_url=llm.url, openai_api_key=OPENAI_KEY, **extra)


# digest_line


def test_digest_line_holds_number_tags_title_verdict_and_importance():
    d = digest(risks=["甲风险", "乙风险", "丙风险"])
    line = digest_line(d, SETTINGS)
    c = d.content
    assert line.startswith(f"#101 [{', '.join(d.tags)}] {c.title} | ")
    assert f"{c.verdict}，重要性 {c.importance:.1f}：{c.importance_reason}" in line
    assert line.endswith(" | 风险：甲风险；乙风险")  # the first two risks only


def test_digest_line_without_risks_has_no_risk_part():
    line = digest_line(digest(risks=[]), SETTINGS)
    assert "风险：" not in line
    assert line.count(" | ") == 1


def test_digest_line_is_cut_to_its_token_share():
    d = digest(risks=["并发写入可能丢数据，且没有回滚。" * 200] * 50)
    line = digest_line(d, SETTINGS)
    assert count(line) <= DIGEST_LINE_TOKENS
    assert count(line) >= DIGEST_LINE_TOKENS - 5  # cut, not dropped
    assert line.startswith("#101 [")
    small = digest_line(digest(risks=["短"]), SETTINGS)
    assert count(small) < DIGEST_LINE_TOKENS


# planned_tokens


def test_planned_tokens_for_no_digests_is_nothing():
    assert planned_tokens(report().facts, 0, SETTINGS) == (0, 0)


def test_planned_tokens_for_a_few_digests_is_one_call():
    facts = report().facts
    calls, tokens = planned_tokens(facts, 3, SETTINGS)
    assert calls == 1
    more_calls, more = planned_tokens(facts, 4, SETTINGS)
    assert more_calls == 1
    assert DIGEST_LINE_TOKENS <= more - tokens <= DIGEST_LINE_TOKENS + 10  # one line more


def test_planned_tokens_with_a_small_budget_is_groups_and_a_final_call():
    facts = report().facts
    small = Settings(input_budget=3500)
    calls, tokens = planned_tokens(facts, 40, small)
    assert tokens > 40 * DIGEST_LINE_TOKENS + 3500  # every line, and the final call's budget
    assert calls >= 3  # at least two groups and the final call


# draft_text


def test_draft_text_joins_the_parts_a_final_call_merges():
    n = WeeklyNarrative(
        lead="本周导语",
        summary="本周摘要",
        highlights=["亮点一 #101", "亮点二"],
        key_changes=["变化 #102"],
        trends=[Trend(theme="rollout", prs=[101], judgement="升温")],
        risks=["风险 #106"],
        follow_ups=["后续不进草稿"],
    )
    assert draft_text(n) == (
        "本周导语\n本周摘要\n亮点一 #101\n亮点二\n变化 #102\n风险 #106\nrollout：升温"
    )
    assert draft_text(WeeklyNarrative(summary="只有摘要")) == "只有摘要"


# narrate


def citing(body: dict[str, Any]) -> str:
    """A weekly narrative citing #101, which is in the week, and #999, which is not."""
    narrative = json.loads(default_responder(body))
    narrative["highlights"] = ["#101 修复温度为零，另见 #999。"]
    narrative["trends"] = [{"theme": "rollout", "prs": [101, 999], "judgement": "升温"}]
    narrative["key_prs"] = [
        {"number": 101, "topic": "温度", "note": "修复"},
        {"number": 999, "topic": "不存在", "note": "不在本周"},
    ]
    return json.dumps(narrative, ensure_ascii=False)


def test_narrate_is_one_grounded_call_when_the_week_fits(llm, client):
    llm.responder = citing
    r = report()
    settings = on(llm)
    narrative, usage, dropped = narrate.narrate(r.facts, r.digests, settings, client(settings))
    [body] = llm.bodies
    assert usage.calls == 1 and usage.tokens_in == count(prompt_text(body))
    text = prompt_text(body)
    for d in r.digests:
        assert digest_line(d, settings) in text
    assert "第 1 组草稿" not in text
    assert narrative.highlights == ["#101 修复温度为零，另见 。"]
    assert [k.number for k in narrative.key_prs] == [101]
    assert narrative.trends[0].prs == [101]
    assert dropped == 3  # #999 in a highlight, in a key PR note and in a trend


def test_weekly_narrative_map_reduces_when_digests_overflow(llm, client):
    many = many_long_digests(40)
    facts = report().facts.model_copy(update={"prs": [d.number for d in many], "pr_count": 40})
    small = on(llm, input_budget=3500)
    narrative, usage, _ = narrate.narrate(facts, many, small, client(small))
    sent = llm.bodies
    assert isinstance(narrative, WeeklyNarrative)
    assert len(sent) == usage.calls >= 3  # at least two groups and the final call
    assert all(count(prompt_text(body)) <= 3500 for body in sent)
    final = prompt_text(sent[-1])
    assert "第 1 组草稿" in final and "第 2 组草稿" in final
    assert not any("第 1 组草稿" in prompt_text(body) for body in sent[:-1])
    # Every PR reaches exactly one group's prompt in full.
    for d in many:
        line = digest_line(d, small)
        assert sum(line in prompt_text(body) for body in sent[:-1]) == 1, d.number
    # The dry run's estimate of the same narrative is an upper bound of what was sent.
    calls, tokens = planned_tokens(facts, 40, small)
    assert calls >= usage.calls
    assert tokens >= sum(count(prompt_text(body)) for body in sent)
