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


def test_a_strong_models_headlines_hold_nouns_their_words_share():
    """Two headlines a strong model wrote for a real week: a Chinese word anywhere in a run
    of characters, and the name inside an identifier (`bypass` in `bypass_mode`), count."""
    assert holds_noun(
        "依赖和配置约束收紧，旧环境和自定义配置可能直接启动失败。",
        "#7101 的 `-no-build-isolation` 可能导致构建失败；#7162 把 `transfer_queue` 移到配置组",
    )
    assert holds_noun(
        "#7188 让 separate_async 不再强制 bypass，开销和失败恢复都有隐患。",
        "关闭 `bypass_mode` 时，每个 mini-batch 都会多一次 old log prob 前向",
    )


def test_the_full_list_keeps_a_citation_only_the_headline_makes():
    from prhub.weekly.prose import full_risk

    only_head = Risk(
        headline="#7188 默认不再 bypass，开销翻倍", text="关闭 `bypass_mode` 后多一次前向。"
    )
    assert (
        full_risk(only_head) == "#7188 默认不再 bypass，开销翻倍。关闭 `bypass_mode` 后多一次前向。"
    )
    both = Risk(headline="#7 有风险。", text="#7 改了默认值。")
    assert full_risk(both) == "#7 改了默认值。"
