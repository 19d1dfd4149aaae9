"""The weekly narrative: digest lines, planned calls, and map-reduce through the LLM stand-in."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from prhub.config import Settings
from prhub.llm.llm import LLM
from prhub.model import PRDigest, Trend, WeeklyNarrative, WeeklyReport
from prhub.prepare.tokens import count
from prhub.weekly import narrate
from prhub.weekly.lines import LINE_MIN, digest_line, fitted
from prhub.weekly.narrate import (
    LINE_ESTIMATE,
    assemble,
    draft_text,
    planned_tokens,
    restates,
    whole_lines,
)
from prhub.weekly.prose import figures
from tests.factories import LEAD, digest, report, settings
from tests.standins import LLMStandIn
from tests.standins.llm import default_responder, prompt_text

SETTINGS = Settings()


def many_long_digests(n: int) -> list[PRDigest]:
    """`n` digests whose lines each fill their share of the weekly prompt."""
    wordy = digest(risks=["并发写入可能丢数据。" * 30])
    return [wordy.model_copy(update={"number": 1000 + i}) for i in range(n)]


@pytest.fixture
def client(llm: LLMStandIn) -> Iterator[Any]:
    """An LLM client for the stand-in, made per settings and closed after the test."""
    made: list[LLM] = []

    def make(config: Settings) -> LLM:
        made.append(LLM(config))
        return made[-1]

    yield make
    for c in made:
        c.close()


# digest_line


def test_digest_line_carries_every_item_of_every_list_in_order():
    d = digest(
        risks=["甲风险", "乙风险", "丙风险：CANN 9.1.0 上 int16 溢出"],
        design_decisions=["设计一"],
        follow_ups=["后续一", "后续二"],
        discussion=["@lead 要求补测试"],
    )
    line = digest_line(d, SETTINGS)
    c = d.content
    assert line == (
        f"#101 [{', '.join(d.tags)}] {c.title} | "
        f"{c.verdict}，重要性 {c.importance:.1f}：{c.importance_reason} | "
        "风险：甲风险；乙风险；丙风险：CANN 9.1.0 上 int16 溢出 | "
        "设计：设计一 | 后续：后续一；后续二 | 讨论：@lead 要求补测试"
    )


def test_digest_line_without_lists_is_its_head_and_verdict():
    line = digest_line(
        digest(risks=[], design_decisions=[], follow_ups=[], discussion=[]), SETTINGS
    )
    assert "风险：" not in line and "设计：" not in line and "未列出" not in line
    assert line.count(" | ") == 1


def test_a_short_share_takes_whole_items_a_round_of_lists_at_a_time():
    risks = [f"第{i}条风险：并发写入可能丢数据，且没有回滚路径。" for i in range(6)]
    decisions = [f"第{i}条设计：缓存集中在一处，便于日后调整。" for i in range(3)]
    d = digest(risks=risks, design_decisions=decisions, follow_ups=["补一个跨批次单测。"])
    line = digest_line(d, SETTINGS, 200)
    assert count(line) <= 200 and "\ufffd" not in line
    shown = {part.split("：", 1)[0]: part for part in line.split(" | ")[2:]}
    # The first of each list before the second of any: no list is starved by a longer one.
    assert risks[0] in shown["风险"] and decisions[0] in shown["设计"]
    assert "补一个跨批次单测。" in shown["后续"]
    kept = sum(r in line for r in risks), sum(x in line for x in decisions)
    assert 0 < kept[0] < len(risks) and kept[0] - kept[1] in (0, 1)
    hidden = sum(r not in line for r in risks) + sum(x not in line for x in decisions)
    assert line.endswith(f"另有 {hidden} 条未列出")


def test_an_item_too_long_for_the_share_is_left_out_whole_and_the_next_one_kept():
    huge = "并发写入可能丢数据，且没有回滚。" * 200
    d = digest(risks=[huge, "短风险"], design_decisions=[], follow_ups=[], discussion=[])
    line = digest_line(d, SETTINGS, LINE_MIN)
    assert count(line) <= LINE_MIN
    assert "并发写入" not in line  # never cut inside an item
    assert line.endswith(" | 风险：短风险 | 另有 1 条未列出")


def test_lines_that_fit_are_whole_and_others_share_the_room_fairly():
    short = digest(risks=["短风险"], follow_ups=["补测试。"]).model_copy(update={"number": 7})
    wordy = [
        digest(risks=[f"第{i}条风险：并发写入可能丢数据。" for i in range(40)]).model_copy(
            update={"number": 100 + n}
        )
        for n in range(3)
    ]
    everything = [short, *wordy]
    whole = [digest_line(d, SETTINGS) for d in everything]
    room = sum(count(line) + 2 for line in whole)
    assert fitted(everything, SETTINGS, room) == whole  # every item of every digest
    squeezed = fitted(everything, SETTINGS, room // 2)
    assert squeezed[0] == whole[0]  # a short line stays whole
    sizes = [count(line) for line in squeezed[1:]]
    assert max(sizes) - min(sizes) <= 40 and sum(count(x) + 2 for x in squeezed) <= room // 2


def test_whole_lines_never_cuts_a_line_and_says_how_many_went():
    text = "\n".join(f"第{i}段：rollout 侧的修复集中在缓存生命周期。" for i in range(10))
    kept = whole_lines(text, 80, SETTINGS.encoding)
    assert count(kept) <= 80 and "\ufffd" not in kept
    *lines, note = kept.split("\n")
    assert lines == text.split("\n")[: len(lines)]
    assert note == f"（另有 {10 - len(lines)} 段未列出）"
    assert whole_lines(text, 10_000, SETTINGS.encoding) == text


# planned_tokens


def test_planned_tokens_for_no_digests_is_nothing():
    assert planned_tokens(report().facts, 0, SETTINGS) == (0, 0)


def test_planned_tokens_for_a_few_digests_is_one_call():
    facts = report().facts
    calls, tokens = planned_tokens(facts, 3, SETTINGS)
    assert calls == 1
    more_calls, more = planned_tokens(facts, 4, SETTINGS)
    assert more_calls == 1
    assert more - tokens == LINE_ESTIMATE + 2  # one line more, at its estimate


def test_planned_tokens_with_a_small_budget_is_groups_and_a_final_call():
    facts = report().facts
    small = Settings(input_budget=3500)
    calls, tokens = planned_tokens(facts, 40, small)
    assert tokens > 40 * LINE_MIN + 3500  # every line, and the final call's budget
    assert calls >= 3  # at least two groups and the final call


# draft_text


def test_draft_text_joins_the_parts_a_final_call_merges():
    n = WeeklyNarrative(
        lead="本周导语",
        summary="本周摘要",
        highlights=["亮点一 #101", "亮点二"],
        key_changes=["变化 #102"],
        trends=[Trend(theme="rollout", prs=[101], judgement="升温")],
        risks=[{"headline": "短", "text": "风险 #106"}],
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
    config = settings(llm)
    narrative, usage, dropped = narrate.narrate(r.facts, r.digests, config, client(config))
    [body] = llm.bodies
    assert usage.calls == 1 and usage.tokens_in == count(prompt_text(body))
    text = prompt_text(body)
    for d in r.digests:
        assert digest_line(d, config) in text  # whole: the week fits
    assert "第 1 组草稿" not in text
    assert narrative.highlights == ["#101 修复温度为零。"]  # "另见 #999" went whole
    assert [k.number for k in narrative.key_prs] == [101]
    assert narrative.trends[0].prs == [101]
    # #999 in a highlight, in a trend and in a key PR note, each recorded where it was
    assert [(d.field, d.text) for d in dropped] == [
        ("highlights", "#999"),
        ("trends", "#999"),
        ("key_prs", "#999"),
    ]


def test_weekly_narrative_map_reduces_when_digests_overflow(llm, client):
    many = many_long_digests(40)
    facts = report().facts.model_copy(update={"prs": [d.number for d in many], "pr_count": 40})
    small = settings(llm, input_budget=3500)
    narrative, usage, _ = narrate.narrate(facts, many, small, client(small))
    sent = llm.bodies
    assert len(sent) == usage.calls >= 3  # at least two groups and the final call
    assert all(count(prompt_text(body)) <= 3500 for body in sent)
    final = prompt_text(sent[-1])
    assert "第 1 组草稿" in final and "第 2 组草稿" in final
    assert not any("第 1 组草稿" in prompt_text(body) for body in sent[:-1])
    # Every PR reaches exactly one group's prompt.
    for d in many:
        head = f"#{d.number} ["
        assert sum(head in prompt_text(body) for body in sent[:-1]) == 1, d.number
    # The dry run's estimate of the same narrative is an upper bound of what was sent.
    calls, tokens = planned_tokens(facts, 40, small)
    assert calls >= usage.calls
    assert tokens >= sum(count(prompt_text(body)) for body in sent)


def test_a_week_that_fits_gives_each_pr_its_share_of_the_budget(llm, client):
    risks = [f"第{i}条风险：并发写入可能丢数据，且没有回滚路径。" for i in range(8)]
    many = [digest(risks=risks).model_copy(update={"number": 1000 + i}) for i in range(60)]
    facts = report().facts.model_copy(update={"prs": [d.number for d in many], "pr_count": 60})
    budget = settings(llm, input_budget=12_000)
    narrate.narrate(facts, many, budget, client(budget))
    [body] = llm.bodies  # one call: the lines were sized to fit it
    text = prompt_text(body)
    room = budget.input_budget - narrate._fixed_tokens(facts, budget)
    for line in fitted(many, budget, room):
        assert line in text and LINE_MIN <= count(line) <= room // 60
        assert "风险：" + risks[0] in line and "设计：" in line  # no list starved
    assert count(text) <= budget.input_budget


# assemble: what a real small model writes, made fit to print


SMALL_MODEL_HIGHLIGHT = "#102 引入 GRPO 优势估计器，是本周最重要的改动，训练配置同步更新。"


def small_model_reply(body: dict[str, Any]) -> str:
    """A 1.5B model's narrative: one highlight three times, the figures restated, no lead."""
    return json.dumps(
        {
            "summary": "本周 rocket 共合入 6 个 PR，平均重要性 5.23。训练算法扩展，配置收紧。",
            "highlights": [SMALL_MODEL_HIGHLIGHT, "#101 修复温度为 0 时的崩溃。"],
            "key_changes": [SMALL_MODEL_HIGHLIGHT, "#106 重命名配置项。"],
            "trends": [],
            "risks": [SMALL_MODEL_HIGHLIGHT + "\n", "#103 没有补测试。"],  # texts alone
            "key_prs": [{"number": 102, "topic": "GRPO", "note": SMALL_MODEL_HIGHLIGHT}],
            "follow_ups": ["为 #106 补迁移说明。", "为 #106 补迁移说明。"],
        },
        ensure_ascii=False,
    )


def test_a_small_models_repeated_paragraph_is_kept_once_where_it_first_shows(llm, client):
    llm.responder = small_model_reply
    r = report()
    config = settings(llm)
    n, _, _ = narrate.narrate(r.facts, r.digests, config, client(config))
    assert n.highlights == [SMALL_MODEL_HIGHLIGHT, "#101 修复温度为 0 时的崩溃。"]
    assert n.key_changes == ["#106 重命名配置项。"]
    assert [r.text for r in n.risks] == ["#103 没有补测试。"]
    assert n.key_prs == []  # its note repeated a highlight: the table shows the digest's reason
    assert n.follow_ups == ["为 #106 补迁移说明。"]
    assert n.summary == "训练算法扩展，配置收紧。"  # the figures line before it says the rest
    assert n.lead == LEAD


def test_the_summary_loses_only_the_sentences_that_restate_the_figures():
    facts = report().facts
    n = WeeklyNarrative(
        lead="本周合入 6 个 PR，主线是 GRPO。",
        summary=(
            "本周共 6 个 PR。标签分布以 bugfix 为主；平均重要性为 5.23。"
            "GRPO 落地，配置收紧，升级需留意兼容性！2 个 PR 触及 trainer。"
        ),
    )
    out = assemble(n, facts)
    assert out.summary == "GRPO 落地，配置收紧，升级需留意兼容性！2 个 PR 触及 trainer。"
    assert out.lead == n.lead  # the lead may give the count: it is no figures line
    assert restates("本周合入6个PR", facts) and not restates("合入 16 个 PR", facts)


def test_a_tie_for_the_most_prs_crowns_no_author():
    from prhub.model import AuthorCount

    facts = report().facts
    tie = facts.model_copy(
        update={
            "authors": [
                AuthorCount(author="marta-kowal", prs=[102, 106]),
                AuthorCount(author="lin-yue", prs=[101, 103]),
            ]
        }
    )
    n = WeeklyNarrative(
        summary="marta-kowal 是本周最多产的作者。训练侧变化最大。",
        highlights=["marta-kowal 最多产，贡献了 #102 和 #106。", "#101 修复崩溃。"],
    )
    out = assemble(n, tie)
    assert out.summary == "训练侧变化最大。"
    assert out.highlights == ["#101 修复崩溃。"]
    assert assemble(n, facts).highlights == n.highlights  # one top author may be named so


def test_a_lead_the_model_left_out_is_computed_from_the_facts():
    facts = report().facts
    assert assemble(WeeklyNarrative(summary="摘要。"), facts).lead.startswith(
        "本周 rocket 共合入 6 个 PR"
    )
    assert assemble(WeeklyNarrative(lead="  ", summary="摘要。"), facts).lead != "  "


# prompt weekly v4


def other_week() -> WeeklyReport:
    r = report()
    facts = r.facts.model_copy(
        update={"repo": "other/repo", "prs": [7, 8], "pr_count": 2, "key_prs": [8]}
    )
    return r.model_copy(update={"facts": facts})


@pytest.mark.parametrize("mode", ["json_object", "json_schema"])
def test_v4_keeps_every_static_part_first_and_byte_identical_across_weeks(mode):
    weeks = [report(), other_week()]
    sent = [
        narrate._messages(
            r.facts, [digest_line(d, SETTINGS) for d in r.digests], [], SETTINGS, mode
        )
        for r in weeks
    ]
    assert sent[0][0] == sent[1][0]  # the system message: instructions and example
    system = sent[0][0]["content"]
    assert "acme/rocket" not in system and "#101" not in system
    assert sent[0][1]["content"].startswith("<facts>\n仓库：acme/rocket")
    assert ("```json" in system) == (mode == "json_object")


def test_v4_data_uses_the_words_its_instructions_use():
    r = report()
    system, user = (
        m["content"] for m in narrate._messages(r.facts, [], [], SETTINGS, "json_object")
    )
    labels = ["本周的 PR", "合入 PR 数", "统计行", "重点 PR", "贡献最多的作者"]
    labels += ["Revert", "改了代码但没有改测试的 PR", "破坏性变更"]
    for label in labels:
        assert label in system, label
        assert f"\n{label}" in user, label
    figures_line = next(ln for ln in user.splitlines() if ln.startswith("统计行"))
    assert figures_line.endswith(figures(r.facts))
    assert "紧跟在统计行后面" in system and "不要重复统计行里的任何数字" in system


def test_a_prs_prompt_line_copied_into_the_narrative_reads_as_sentences() -> None:
    from prhub.weekly.narrate import plain

    copied = (
        "#102 [algo, trainer] 增加 GRPO 组相对优势估计器 | 精读，重要性 9.0：主路径上的新算法。"
        " | 风险：默认值变化"
    )
    assert plain(copied) == "#102 增加 GRPO 组相对优势估计器。主路径上的新算法。"
    escaped = "#106 \\[trainer] 重命名配置项 | 快速浏览，重要性 4.0：局部改名。"
    assert plain(escaped) == "#106 重命名配置项。局部改名。"
    written = "#101 修复温度为零的问题，与 #102 相关。"
    assert plain(written) == written


def test_v4_lets_the_narrative_state_numbers_its_digests_state():
    system = narrate._messages(report().facts, [], [], SETTINGS, "json_object")[0]["content"]
    assert "数字只用 <facts> 给出的" not in system  # v3's rule forbade int16, CANN 9.1.0, 七处
    assert "PR 的数量只用 <facts> 给出的" in system
    assert "在 <facts> 或 <digests> 里出现过，就可以照写" in system
    assert "| 风险：… | 设计：… | 后续：…" in system  # the lines as digest_line writes them


def test_numbers_a_digest_states_survive_grounding_and_pr_counts_still_match_the_facts():
    from prhub.weekly.ground import ground_weekly

    facts = report().facts  # 6 PRs
    n = WeeklyNarrative(
        summary="#101 在 CANN 9.1.0 上改用 int16，修了七处。6 个 PR 里 4 个 PR 涉及训练。",
        risks=["#102 的 3 个 PR 拆分说明里提到 2 倍显存。"],
    )
    out, dropped = ground_weekly(n, facts)
    assert out.summary == n.summary  # 6 and 4 are counts the facts hold
    assert out.risks == []  # no fact counts 3 PRs, and "#102 的 PR" would not read
    assert [(d.field, d.text, d.reason) for d in dropped] == [
        ("risks", "#102 的 3 个 PR 拆分说明里提到 2 倍显存。", "unknown_number")
    ]


def test_a_sentence_that_credits_a_path_to_a_pr_that_did_not_change_it_goes():
    from prhub.model import KeyPRNote
    from prhub.weekly.ground import ground_weekly

    facts = report().facts  # 6 PRs, #101 and #102 among them
    # A bare name is a claimed path only where a changed file of the week bears it: #102's
    # Makefile is; a Dockerfile no PR changed is a word.
    changed = {
        101: {"verl/trainer/main_ppo.py"},
        102: {"docs/README.md", "setup.py", "Makefile"},
    }
    n = WeeklyNarrative(
        lead="#102 删除了 main_ppo.py。#101 重写了 `verl/trainer/main_ppo.py`。",
        summary="",
        highlights=["#102 更新了 README.md", "#101 与 #102 改了 main_ppo.py 和 setup.py"],
        risks=["#101 的 `Makefile` 没有测试", "main_ppo.py 没有测试", "#101 需要重建 Dockerfile"],
        key_prs=[
            KeyPRNote(number=102, topic="文档", note="改了 main_ppo.py"),
            KeyPRNote(number=101, topic="训练", note="重写 main_ppo.py"),
        ],
    )
    out, dropped = ground_weekly(n, facts, changed)
    assert out.lead == "#101 重写了 `verl/trainer/main_ppo.py`。"
    assert out.highlights == n.highlights  # a changed file's name, by the PRs that changed it
    # It credits no PR; a word in prose is no path.
    assert [r.text for r in out.risks] == ["main_ppo.py 没有测试", "#101 需要重建 Dockerfile"]
    assert [k.note for k in out.key_prs] == ["", "重写 main_ppo.py"]
    assert [(d.field, d.text, d.reason) for d in dropped] == [
        ("lead", "#102 删除了 main_ppo.py。", "mentioned_as_changed"),
        ("risks", "#101 的 `Makefile` 没有测试", "mentioned_as_changed"),
        ("key_prs", "改了 main_ppo.py", "mentioned_as_changed"),
    ]
    assert ground_weekly(n, facts)[0].lead == n.lead  # without the changed files: as before


# A citation that cannot stand: its pointing clause goes, else its sentence or item, recorded

WEEKLY_CUTS = [
    # (text, what is left or None when it goes whole, what was dropped)
    ("#101 修复温度为零，另见 #999。", "#101 修复温度为零。", "#999"),
    ("#101 修复温度为零（见 #999）。", "#101 修复温度为零。", "#999"),
    ("#101 与 #102、#999 一起改了采样。", None, "#101 与 #102、#999 一起改了采样。"),
    ("另见 #102、#999。#101 修复温度。", "另见 #102。#101 修复温度。", "#999"),
    ("与 #999 冲突。", None, "与 #999 冲突。"),
    ("#999 修复了温度。", None, "#999 修复了温度。"),
    ("共 42 个 PR", None, "共 42 个 PR"),
    ("本周合入 42 个 PR，主要是 rollout。", None, "本周合入 42 个 PR，主要是 rollout。"),
    ("本周合入 6 个 PR，主要是 rollout。", "本周合入 6 个 PR，主要是 rollout。", None),
]


@pytest.mark.parametrize(("text", "left", "gone"), WEEKLY_CUTS, ids=[c[0] for c in WEEKLY_CUTS])
def test_what_cannot_stand_goes_with_its_pointing_clause_or_its_sentence(text, left, gone):
    from prhub.weekly.ground import ground_weekly

    n = WeeklyNarrative(summary=text, highlights=[text])
    out, dropped = ground_weekly(n, report().facts)  # 6 PRs: #101 to #106
    assert out.summary == (left or "")
    assert out.highlights == ([left] if left else [])
    recorded = [(d.field, d.text, d.reason) for d in dropped]
    if gone is None:
        assert recorded == []
    else:
        assert recorded == [
            ("summary", gone, "unknown_number"),
            ("highlights", gone, "unknown_number"),
        ]
    for kept in filter(None, [out.summary, *out.highlights]):
        assert not re.search(r"(?:见|与|和|及|共)\s*[，。、）)]|\s[，。]|[（(]\s*[）)]", kept), kept


def test_the_drops_of_a_narrative_are_logged_and_counted(llm, client, caplog):
    llm.responder = citing
    r = report()
    config = settings(llm)
    caplog.set_level("INFO", logger="prhub")
    _, _, dropped = narrate.narrate(r.facts, r.digests, config, client(config))
    logged = [m for m in caplog.messages if m.startswith("weekly: grounding dropped")]
    assert logged == [
        "weekly: grounding dropped from highlights (unknown_number): #999",
        "weekly: grounding dropped from trends (unknown_number): #999",
        "weekly: grounding dropped from key_prs (unknown_number): #999",
    ]
    assert len(dropped) == len(logged)
