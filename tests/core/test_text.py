"""Tests for prhub.text: the sentence splitter and the PR-count pattern every stage shares."""

import pytest

from prhub.text import PR_COUNT, sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("修复了 A。补了测试！", ["修复了 A。", "补了测试！"]),
        ("第一行\n第二行。", ["第一行\n", "第二行。"]),
        ("没有句号", ["没有句号"]),
        ("", []),
        ("问？！然后", ["问？！", "然后"]),
        ("要 `x>=5.5.3,!=5.6.0` 了。", ["要 `x>=5.5.3,!=5.6.0` 了。"]),
        ("Done! Then more", ["Done!", " Then more"]),
    ],
)
def test_sentences_split_at_end_marks_and_give_the_text_back(text, expected):
    assert sentences(text) == expected
    assert "".join(sentences(text)) == text


@pytest.mark.parametrize(
    ("text", "count"),
    [("本周 12 个 PR 合入", 12), ("共 3 项合并请求", 3), ("7 PR", 7), ("版本 1.5 个 PR", None)],
)
def test_pr_count_reads_the_number_of_prs_a_sentence_states(text, count):
    found = PR_COUNT.search(text)
    assert (int(found[1]) if found else None) == count
