"""Replies read tolerantly, validated strictly: unit cases, corrections, and the recorded corpus."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from prhub import model
from prhub.errors import LLMInvalidReply
from prhub.llm.reply import ReplyError, candidates, example, read
from prhub.model import ChunkNotes, DigestContent, WeeklyNarrative
from tests.factories import MESSAGES, VALID, MakeLLM, Rating
from tests.standins import LLMStandIn

REPLIES = Path(__file__).parents[1] / "replies"
DIGEST = {
    "title": "采样温度下限钳制为 1e-5",
    "verdict": "快速浏览",
    "minutes": 5,
    "advice": "看 `sample_logits`。",
    "design_decisions": ["温度为 0 时取 argmax"],
    "risks": [],
    "follow_ups": [],
    "importance": 5,
    "importance_reason": "局部修复。",
    "related_prs": [95],
}
TEXT = json.dumps(DIGEST, ensure_ascii=False)


# Unwrapping


@pytest.mark.parametrize(
    "reply",
    [
        TEXT,
        f"```json\n{TEXT}\n```",
        f"Here it is:\n```\n{TEXT}\n```\nDone.",
        f"以下是导读：{TEXT} 希望有帮助。",
        f'<think>\n格式是 {{"title": "x"}}\n</think>\n\n{TEXT}',
        f"<THINK>想一想</THINK>{TEXT}",
        f'模板打开了思考，{{"title": 1}}\n</think>\n{TEXT}',
        f'<think>\n还没想完 {{"title": 1}}\n{TEXT}',
        json.dumps({"DigestContent": DIGEST}, ensure_ascii=False),
    ],
)
def test_known_wrappers_are_unwrapped(reply: str) -> None:
    assert read(reply, DigestContent) == DigestContent.model_validate(DIGEST)


def test_candidates_are_top_level_objects_in_order() -> None:
    assert candidates('a {"x": 1} b {"y": {"z": 2}, "w": 3} [1] {bad}') == [
        {"x": 1},
        {"y": {"z": 2}, "w": 3},
    ]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("", "the reply was empty"),
        ("   \n", "the reply was empty"),
        ("<think>只有思考</think>", "no JSON object"),
        ("not json", "no JSON object"),
        ('{"title": "x"}', "verdict: Field required"),
    ],
)
def test_what_cannot_be_read_is_named(reply: str, problem: str) -> None:
    with pytest.raises(ReplyError, match=problem):
        read(reply, DigestContent)


# Coercion before validation


@pytest.mark.parametrize(
    ("field", "given", "read_as"),
    [
        ("verdict", "精读（约 10 分钟）", "精读"),
        ("verdict", " 可跳过。", "可跳过"),
        ("minutes", "15", 15),
        ("minutes", "约 15 分钟", 15),
        ("importance", "7.5", 7.5),
        ("importance", "8/10", 8),
        ("related_prs", ["#12", "13", 14, "无"], [12, 13, 14]),
        ("related_prs", "None", []),
        ("risks", ["无", "None", "N/A", "暂无", "-", "", " 真风险 "], ["真风险"]),
        ("risks", None, []),
        ("risks", "只有一条风险", ["只有一条风险"]),
        # as a 1.5B model wrote them: an item saying there is none
        ("follow_ups", ["无后续动作", "暂无明显风险", "没有需要的跟进。"], []),
        ("follow_ups", ["无后续动作会破坏兼容，补测试即可"], ["无后续动作会破坏兼容，补测试即可"]),
    ],
)
def test_slips_are_coerced(field: str, given: object, read_as: object) -> None:
    digest = read(json.dumps({**DIGEST, field: given}, ensure_ascii=False), DigestContent)
    assert getattr(digest, field) == read_as


@pytest.mark.parametrize(
    ("field", "given"),
    [
        ("verdict", "精读|快速浏览"),  # what a 1.5B model wrote for an example of "a|b|c"
        ("verdict", "不必精读"),
        ("verdict", "skim"),
        ("minutes", "5-10 分钟"),
        ("importance", 85),
    ],
)
def test_ambiguous_values_stay_errors(field: str, given: object) -> None:
    with pytest.raises(ReplyError, match=field):
        read(json.dumps({**DIGEST, field: given}, ensure_ascii=False), DigestContent)


def test_omitted_lists_and_extra_keys_are_fine() -> None:
    short = {k: v for k, v in DIGEST.items() if not isinstance(v, list)}
    digest = read(json.dumps({**short, "tags": ["x"]}), DigestContent)
    assert digest.risks == digest.related_prs == digest.design_decisions == []
    notes = read('{"summary": "改了采样"}', ChunkNotes)
    assert notes.key_files == notes.identifiers == notes.risks == []
    weekly = read(
        '{"summary": "本周", "key_prs": [{"number": "#7", "topic": "t", "note": "n"}]}',
        WeeklyNarrative,
    )
    assert weekly.key_prs[0].number == 7 and weekly.trends == []


def test_a_copied_example_is_not_a_reply() -> None:
    copied = {**DIGEST, "title": example(DigestContent)["title"]}
    with pytest.raises(ReplyError, match="placeholder was copied"):
        read(json.dumps(copied, ensure_ascii=False), DigestContent)


def test_reply_models_ignore_keys_they_do_not_know() -> None:
    for module, name in [
        (model, "DigestContent"),
        (model, "ChunkNotes"),
        (model, "WeeklyNarrative"),
        (model, "Trend"),
        (model, "KeyPRNote"),
    ]:
        assert getattr(module, name).model_config["extra"] == "ignore"


# Corrections through the stand-in


def test_a_wrapped_reply_costs_no_extra_call(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([("content", f"<think>嗯</think>好的：\n```json\n{VALID}\n```")])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert rating.score == 2 and usage.calls == 1


def test_invalid_json_once_is_corrected(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([("content", "not json"), ("content", VALID)])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert rating.score == 2
    assert usage.calls == 2
    assert usage.tokens_in > 0 and usage.tokens_out > 0
    first, second = llm.bodies
    assert second["messages"][: len(MESSAGES)] == MESSAGES
    assert second["messages"][-2] == {"role": "assistant", "content": "not json"}
    last = second["messages"][-1]
    assert last["role"] == "user" and "Invalid JSON" in last["content"]


def test_a_schema_violation_names_the_field_in_the_correction(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    llm.script([("content", '{"verdict": "精读", "score": 42}'), ("content", VALID)])
    rating, _ = make_llm().complete(MESSAGES, Rating)
    assert rating.score == 2
    correction = llm.bodies[1]["messages"][-1]["content"]
    assert "score" in correction and "10" in correction


@pytest.mark.parametrize(("mode", "advised"), [(None, True), ("json_object", False)])
def test_invalid_twice_is_an_invalid_reply(
    mode: str | None, advised: bool, make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    llm.script([("content", "not json"), ("content", "still not json")])
    with pytest.raises(LLMInvalidReply, match="failed validation twice") as error:
        make_llm(mode=mode).complete(MESSAGES, Rating)
    assert ("--response-mode json_object" in str(error.value)) is advised
    assert len(llm.bodies) == 2


def test_verbose_logs_the_rejected_reply_and_the_whole_problem(
    make_llm: MakeLLM, llm: LLMStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    long = '{"verdict": 3, "score": 42, "note": "' + "长" * 3000 + '"}'
    llm.script([("content", long), ("content", VALID)])
    with caplog.at_level(logging.INFO, logger="prhub"):
        make_llm().complete(MESSAGES, Rating)
    [record] = [r for r in caplog.records if "rejected" in r.getMessage()]
    text = record.getMessage()
    assert "verdict" in text and "score" in text and "less than or equal to 10" in text
    assert long[:2000] in text and long[:2001] not in text


# The corpus


@pytest.mark.parametrize("path", sorted(REPLIES.glob("*.json")), ids=lambda p: p.stem)
def test_recorded_and_hand_written_replies(path: Path, make_llm: MakeLLM, llm: LLMStandIn) -> None:
    record = llm.replay(path)
    assert record["source"] in ("recorded", "hand-written")
    schema = {m.__name__: m for m in (DigestContent, ChunkNotes, WeeklyNarrative)}[record["schema"]]
    messages = [{"role": "system", "content": "Reply with one JSON object."}, MESSAGES[1]]
    client = make_llm(mode=record["mode"])
    reply, usage = client.complete(messages, schema)
    assert isinstance(reply, schema)
    assert client.mode == record.get("learns", client.mode if record["mode"] else "json_schema")
    assert len(llm.bodies) == record["requests"] == len(record["responses"])
    assert usage.calls == sum(r["status"] == 200 for r in record["responses"])


def test_an_example_item_left_in_a_list_means_none() -> None:
    """A 1.5B model, given a PR without discussion, left the example's item in `discussion`."""
    mark = example(DigestContent)["discussion"][0]
    reply = read(json.dumps({**DIGEST, "discussion": [mark]}, ensure_ascii=False), DigestContent)
    assert reply.discussion == []
    with pytest.raises(ReplyError, match="placeholder was copied"):  # a scalar still fails
        read(json.dumps({**DIGEST, "advice": example(DigestContent)["advice"]}), DigestContent)


# Echoes: what the local 1.5B model handed back instead of items (18 in 9 digests)
ECHOES = [
    "<无风险点>",
    "<无设计决策>",
    "阅读建议段落：值不值得读、读哪里、为什么",
    "＜无后续动作＞",
]
NONE_SAID = ["无", "暂无风险", "无后续动作", "None", "N/A", "无明显风险。", "No risks"]


@pytest.mark.parametrize("field", ["design_decisions", "risks", "follow_ups", "discussion"])
def test_echoes_and_nothing_said_are_no_items_in_every_digest_list(field: str) -> None:
    given = [*ECHOES, *NONE_SAID, "`sample_logits` 在温度为 0 时除零"]
    reply = read(json.dumps({**DIGEST, field: given}, ensure_ascii=False), DigestContent)
    assert getattr(reply, field) == ["`sample_logits` 在温度为 0 时除零"]


def test_echoes_are_no_items_in_chunk_notes_and_the_weekly_narrative() -> None:
    notes = read(
        json.dumps(
            {
                "summary": "改了采样",
                "risks": ["<无风险点>", "这一部分的风险", "无"],
                "key_files": ["<无>"],
            },
            ensure_ascii=False,
        ),
        ChunkNotes,
    )
    assert notes.risks == notes.key_files == []
    copied_row = example(WeeklyNarrative)["key_prs"][0]  # an example object, copied whole
    weekly = read(
        json.dumps(
            {
                "summary": "本周修复了采样。",
                "highlights": ["<3–6 条本周亮点>", "#7 修复采样除零"],
                "risks": NONE_SAID,
                "key_prs": [copied_row, {"number": 7, "topic": "采样", "note": "除零修复"}],
            },
            ensure_ascii=False,
        ),
        WeeklyNarrative,
    )
    assert weekly.highlights == ["#7 修复采样除零"] and weekly.risks == []
    assert [row.number for row in weekly.key_prs] == [7]


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("advice", "阅读建议段落：值不值得读、读哪里、为什么"),
        ("title", "<一行中文标题>"),
        ("importance_reason", "一句话说明重要性的理由。"),
    ],
)
def test_a_scalar_that_echoes_the_example_still_fails(field: str, text: str) -> None:
    with pytest.raises(ReplyError, match="placeholder was copied"):
        read(json.dumps({**DIGEST, field: text}, ensure_ascii=False), DigestContent)


def test_an_item_that_only_starts_like_nothing_is_kept() -> None:
    kept = ["无后续动作会破坏兼容，补测试即可", "风险点在 `sample_logits` 的除零分支"]
    reply = read(json.dumps({**DIGEST, "risks": kept}, ensure_ascii=False), DigestContent)
    assert reply.risks == kept


def test_every_item_read_as_none_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="prhub"):
        read(
            json.dumps({**DIGEST, "risks": ["<无风险点>", "无"]}, ensure_ascii=False), DigestContent
        )
    [record] = [r for r in caplog.records if "read as none" in r.getMessage()]
    assert "<无风险点> | 无" in record.getMessage()


def test_a_text_opening_with_the_examples_clause_goes_on_after_it():
    # The local 1.5B model began its advice with the example's own question.
    reply = dict(DIGEST)
    reply["advice"] = "值不值得读，因为这是一个微小的优化，对整体性能的影响较小。建议读 `a.py`。"
    got = read(json.dumps(reply, ensure_ascii=False), DigestContent)
    assert got.advice == "因为这是一个微小的优化，对整体性能的影响较小。建议读 `a.py`。"
    reply["advice"] = "值得精读，因为它改了默认行为。"  # an answer, not the example's words
    assert read(json.dumps(reply, ensure_ascii=False), DigestContent).advice == reply["advice"]
