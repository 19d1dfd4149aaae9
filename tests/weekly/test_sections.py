"""A narrative grounding changes is never published as if whole: a section it emptied says so
where it stands and on the operator's warning line; one it emptied entirely fails the report
(exit 12) with a banner; a window that is not an ISO week is called 本期."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from prhub.model import Drop, Risk, WeeklyNarrative
from prhub.publish import render
from prhub.weekly.ground import emptied, hollow
from tests.factories import assert_ok, prhub, report, unlinked
from tests.standins.llm import default_responder


def elsewhere(body: dict[str, Any]) -> str:
    """A narrative citing only PRs of another week: grounding can keep none of it."""
    reply = json.loads(default_responder(body))
    if "highlights" not in reply:
        return json.dumps(reply, ensure_ascii=False)
    said = "#999 重写了调度器。"
    reply.update(
        lead="",
        summary=said,
        highlights=[said],
        key_changes=[said],
        trends=[{"theme": "调度", "prs": [999], "judgement": said}],
        risks=[{"headline": said, "text": said}],
        key_prs=[{"number": 999, "topic": "调度", "note": said}],
        follow_ups=[said],
    )
    return json.dumps(reply, ensure_ascii=False)


def test_a_narrative_grounding_emptied_fails_the_report_and_says_so(env, llm, caplog):
    llm.responder = elsewhere
    caplog.set_level(logging.WARNING, logger="prhub")
    result = prhub(env, "weekly", "--week", "31", "--year", "2026", "--out", "w.md")
    assert result.exit_code == 12
    [line] = [x for x in result.stderr.splitlines() if x.startswith("prhub: error: ")]
    assert "grounding removed all of the weekly narrative" in line
    assert any("removed the whole weekly narrative" in m for m in caplog.messages)
    text = Path("w.md").read_text(encoding="utf-8")
    assert "> ⚠ 模型为本周写的亮点、风险、摘要等行文都无法与数据核实，已全部删去" in text
    assert "本节原有 1 条内容，因无法与输入的数据核实已全部删去" in text


def one_section_elsewhere(body: dict[str, Any]) -> str:
    """A narrative whose follow-ups alone cite a PR of another week."""
    reply = json.loads(default_responder(body))
    if "highlights" in reply:
        reply["follow_ups"] = ["为 #999 补上调度器的文档。"]
    return json.dumps(reply, ensure_ascii=False)


def test_a_section_grounding_emptied_is_said_once_on_the_operators_warning_line(env, llm, caplog):
    llm.responder = one_section_elsewhere
    caplog.set_level(logging.WARNING, logger="prhub")
    result = prhub(env, "weekly", "--week", "31", "--year", "2026", "--out", "w.md")
    assert_ok(result)
    [said] = [m for m in caplog.messages if "grounding emptied" in m]
    assert said.startswith("grounding emptied the narrative's ")  # the handler says "prhub: "
    assert said.endswith("后续建议; --verbose logs each drop")


def test_a_section_grounding_emptied_says_so_where_it_stands():
    r = report()
    n = r.narrative
    assert n is not None
    lost = [Drop(field="follow_ups", text="为 #999 补文档。", reason="unknown_number")]
    gone = n.model_copy(update={"follow_ups": []})
    meta = r.meta.model_copy(update={"dropped": lost})
    shown = r.model_copy(update={"narrative": gone, "meta": meta})
    assert emptied(gone, lost) == ["follow_ups"] and not hollow(gone)
    text = unlinked(render.weekly_markdown(shown))
    section = text.split("后续建议", 1)[1].split("###", 1)[0]
    assert "（本节原有 1 条内容，因无法与输入的数据核实已全部删去。）" in section
    assert "⚠ 模型为" not in text  # the rest stands: no banner
    untouched = unlinked(render.weekly_markdown(r))
    assert "本节原有" not in untouched


def test_a_section_the_model_left_empty_is_not_said_to_be_emptied():
    n = WeeklyNarrative(summary="摘要。", risks=[Risk(text="#101 风险。")])
    assert emptied(n, []) == []
    assert emptied(n, [Drop(field="risks", text="#999", reason="unknown_number")]) == []


def test_a_window_is_this_period_not_this_week():
    r = report()
    window = r.model_copy(update={"facts": r.facts.model_copy(update={"week": None})})
    text = render.weekly_markdown(window)
    assert "本期亮点" in text and "本期数据" in text and "本期 rocket 共合入" in text
    # prhub's own words; the model's text says what it says
    assert not any(w in text for w in ("本周亮点", "本周数据", "本周 rocket 共", "本周重点变化"))


def test_the_week_keeps_its_word(env, llm):
    assert_ok(prhub(env, "weekly", "--week", "31", "--year", "2026", "--out", "w.md"))
    text = Path("w.md").read_text(encoding="utf-8")
    assert "本周亮点" in text and "本期" not in text
