"""The weekly report's sections: risks in short at the top, whole sentences, in full below."""

from __future__ import annotations

import pytest

from prhub.model import Risk
from prhub.weekly.prose import holds_noun, short_risk


@pytest.mark.parametrize(
    ("risk", "short"),
    [
        # The model's headline, when it names something of its risk.
        (
            Risk(headline="R2 路由回放被快速回滚", text="R2 路由回放 #7106 次日被 #7786 revert。"),
            "R2 路由回放被快速回滚。",
        ),
        # Else the risk's first sentence, whole: never its first clause alone, no PRs added.
        (
            Risk(text="#106 的配置改名没有保留旧键，升级后旧配置会静默失效。其余无碍。"),
            "#106 的配置改名没有保留旧键，升级后旧配置会静默失效。",
        ),
        (Risk(text="#7347 把 D2H 改为异步后，采样偶发读到旧值；见 #7350。"), None),
        (Risk(text="短"), "短。"),
        # A headline that names nothing of its risk is not used.
        (
            Risk(headline="值得关注", text="改了 `a：b，c` 的解析规则。"),
            "改了 `a：b，c` 的解析规则。",
        ),
    ],
)
def test_a_risk_in_short_is_its_headline_or_its_first_sentence_whole(risk, short):
    got = short_risk(risk)
    if short is None:  # a first sentence that ends at a semicolon ends with a full stop
        assert got == "#7347 把 D2H 改为异步后，采样偶发读到旧值。"
    else:
        assert got == short


def test_a_short_risk_never_gains_numbers_its_risk_does_not_say_first():
    risk = Risk(text="回滚风险：#7106 合入后次日被 #7786 revert，原因未明。")
    assert short_risk(risk) == "回滚风险：#7106 合入后次日被 #7786 revert，原因未明。"
    assert "（#" not in short_risk(Risk(text="一" * 80 + "，#1 与 #2 相关。"))


def test_a_headline_holds_a_noun_of_its_risk():
    assert holds_noun("LoRA 同步不完整", "回滚后 LoRA 按 bucket 同步")
    assert holds_noun("配置改名会让旧配置失效", "#106 把配置项改名，旧配置静默失效")
    assert not holds_noun("值得关注的问题", "#106 把配置项改名")
