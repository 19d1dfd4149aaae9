"""A week that remembers the last: the narrative of week 32 is told week 31's stored risks,
follow-ups and tag counts, and its report says which it took up (citing week 32's PRs) and
which stay open, and counts each tag against last week; a week with no stored last has none."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.factories import assert_ok, prhub
from tests.standins import LLMStandIn
from tests.standins.llm import default_responder, prompt_text

OPEN = "为 trainer 配置改名补迁移说明"


def remembering(body: dict[str, Any]) -> str:
    """A model that answers the narrative's look back when it is given the last week."""
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    reply = json.loads(default_responder(body))
    text = prompt_text(body)
    if name == "WeeklyNarrative":
        reply["risks"] = [
            {"headline": "#106 把配置项改名，旧配置会失效。", "text": "#106 改名未保留旧键。"}
        ]
        reply["follow_ups"] = [f"{OPEN}，避免旧配置静默失效。"]
        if re.search(r"^<last>$", text, re.MULTILINE):
            reply["carried_over"] = [
                {
                    "item": "#103 的 KV 缓存重置缺少测试",
                    "status": "已跟进",
                    "prs": [107],
                    "note": "#107 撤销了 #103，问题随之消失。",
                },
                {"item": OPEN, "status": "仍未跟进", "prs": [], "note": "还没有 PR 处理它。"},
            ]
    return json.dumps(reply, ensure_ascii=False)


def week(env: dict[str, str | None], number: int, fmt: str) -> str:
    out = f"w{number}.{fmt}"
    assert_ok(prhub(env, "weekly", "--week", str(number), "--year", "2026", "--out", out))
    return Path(out).read_text(encoding="utf-8")


def test_week_32_after_week_31_takes_up_its_follow_ups_and_counts_tags_against_it(env, llm):
    llm.responder = remembering
    first = week(env, 31, "md")
    assert "上周跟进" not in first and "\n<last>\n" not in prompt_text(llm.bodies[-1])
    report = json.loads(week(env, 32, "json"))
    asked = prompt_text(llm.bodies[-1])
    last = asked[asked.index("\n<last>\n") : asked.index("</last>")]
    assert f"上周后续建议：{OPEN}" in last and "上周风险：#106 改名未保留旧键。" in last
    assert "上周合入 PR 数：" in last and "（上周 " in last
    followed = report["narrative"]["carried_over"]
    assert [(f["status"], f["prs"]) for f in followed] == [("已跟进", [107]), ("仍未跟进", [])]
    assert report["facts"]["last"]["follow_ups"] == [f"{OPEN}，避免旧配置静默失效。"]
    assert set(report["facts"]["last"]["prs"]) == {101, 102, 103, 104, 105, 106}
    text = week(env, 32, "md")  # the same week again: from the store, in Markdown
    section = text[text.index("上周跟进") :]
    assert "| 上周事项 | 状态 | 跟进 PR | 说明 |" in section
    assert "已跟进" in section and "[#107](" in section and "仍未跟进" in section
    data = text[text.index("本周数据") :]
    assert "| 标签 | PR 数 | 上周 | 变化 |" in data
    assert "| data | 1 | 0 | +1 |" in data  # new this week
    assert "| rollout | 0 | 2 | -2 |" in data  # gone since last week, still counted


def test_a_look_back_without_a_last_week_is_dropped_and_recorded(env, llm):
    def inventing(body: dict[str, Any]) -> str:
        reply = json.loads(remembering(body))
        if "carried_over" in reply:
            reply["carried_over"] = [
                {"item": "上周的事", "status": "已跟进", "prs": [101], "note": "#101 做了。"}
            ]
        return json.dumps(reply, ensure_ascii=False)

    llm.responder = inventing
    report = json.loads(week(env, 31, "json"))
    assert report["narrative"]["carried_over"] == []
    assert {"field": "carried_over", "text": "上周的事", "reason": "no_previous"} in report["meta"][
        "dropped"
    ]


def test_a_window_is_this_period_and_looks_back_at_the_window_before(env, llm: LLMStandIn):
    llm.responder = remembering
    args = ["--since", "2026-07-27", "--until", "2026-07-29"]
    assert_ok(prhub(env, "weekly", *args, "--out", "a.md"))
    assert_ok(
        prhub(env, "weekly", "--since", "2026-07-30", "--until", "2026-08-01", "--out", "b.md")
    )
    text = Path("b.md").read_text(encoding="utf-8")
    assert "本期亮点" in text and "本期数据" in text and "上期跟进" in text
    assert "本周" not in text.split("##", 1)[1].replace("本周数据", "")
    assert "称呼：本期" in prompt_text(llm.bodies[-1])
