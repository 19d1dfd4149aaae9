"""The weekly report's sections: risks in short at the top, in full in the report."""

from __future__ import annotations

import pytest

from prhub.publish.weekly_view import SHORT, headline


@pytest.mark.parametrize(
    ("risk", "short"),
    [
        # A head before a colon names the risk; the PRs the rest cites follow it.
        ("回滚风险：#7106 合入后次日被 #7786 revert，原因未明。", "回滚风险（#7106、#7786）。"),
        # Else the first clause, with the PRs it cites.
        ("#106 的配置改名没有保留旧键，升级后旧配置会静默失效。", "#106 的配置改名没有保留旧键。"),
        (
            "#103 未测，#104 也未测试，回归难。",
            "#103 未测，#104 也未测试。",
        ),  # a first clause too short
        ("短", "短。"),
        # A colon far in is no head; a colon inside code is no boundary.
        ("改了 `a：b，c` 的解析规则，下游需要同步。", "改了 `a：b，c` 的解析规则。"),
    ],
)
def test_a_risk_in_short_is_its_head_or_first_clause_with_its_prs(risk, short):
    assert headline(risk) == short


def test_a_long_clause_is_cut_between_words_never_inside_code_or_a_number():
    words = "这条风险说得很长" * 7
    cut = headline(words + "，后面还有。")
    assert cut.endswith("…") and len(cut) == SHORT + 1
    path = "`verl/trainer/config/ppo_trainer.yaml`"
    long = "一" * (SHORT - 10) + f" {path} 被改动 #7162"
    assert headline(long) == "一" * (SHORT - 10) + "…（#7162）。"  # the path left out whole
    assert headline("一" * 10 + f" {path} 被改动很久很久很久很久很久很久了") == (
        "一" * 10 + f" {path}…"  # a path that starts early is kept whole
    )
