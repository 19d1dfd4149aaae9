"""What a search result shows of a text: its opening, never cut inside an identifier."""

from prhub.publish.search import PART, excerpt, keys

PATH = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"


def test_a_short_text_is_shown_whole() -> None:
    assert excerpt("改了默认值", 40) == "改了默认值"


def test_a_path_the_cut_falls_in_is_shown_whole() -> None:
    text = f"这个 PR 改了 {PATH} 里的调度，并补了测试和文档，还顺手修了日志"
    shown = excerpt(text, PART)
    assert shown == f"这个 PR 改了 {PATH}…"
    assert shown.removesuffix("…").endswith(".py")


def test_a_name_too_long_to_finish_is_left_out_rather_than_cut() -> None:
    name = "a_" * PART + "tail"
    shown = excerpt(f"把默认的 {name} 改了", 12)
    assert shown == "把默认的…"


def test_an_identifier_that_alone_fills_the_opening_is_cut_at_the_limit() -> None:
    name = "x" * 200
    assert excerpt(f"{name} 的逻辑", 40) == "x" * 40 + "…"


def test_chinese_text_is_cut_at_the_limit() -> None:
    text = "这一段是很长的中文说明" * 10
    assert excerpt(text, 40) == text[:40] + "…"


def test_the_keys_of_a_path_find_each_of_its_parts() -> None:
    found = keys(PATH)
    assert {"vll", "asy", "ser"} <= found and "rollout" not in found
    assert {"调度", "度逻"} <= keys("调度逻辑")
