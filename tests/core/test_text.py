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


@pytest.mark.parametrize(
    ("text", "refs"),
    [
        ("see #12 and #13.", [("#12", None), ("#13", None)]),
        ("修复#7227（见 #7232）", [("#7227", None), ("#7232", None)]),
        ("volcengine/verl#7227", [("volcengine/verl#7227", "volcengine/verl")]),
        ("https://github.com/o/r/pull/55/files", [("https://github.com/o/r/pull/55", "o/r")]),
        (
            "https://ghe.example:8443/o/r/issues/9",
            [("https://ghe.example:8443/o/r/issues/9", "o/r")],
        ),
        ("C#12, a#1, &#123; docs/#12 ##4 v1.2#3", []),
    ],
)
def test_one_rule_says_what_a_pr_reference_is(text, refs):
    from prhub.text import PR_REF, ref_repo

    assert [(m.group(0), ref_repo(m)) for m in PR_REF.finditer(text)] == refs


def test_grounding_rendering_and_the_brief_read_references_alike():
    """A qualified reference is cited for grounding and left as text by the renderers; `C#12`
    is neither; a bare #N is both."""
    from prhub.publish.brief import pieces
    from prhub.publish.html import html_text
    from prhub.publish.parts import links
    from prhub.publish.render import md
    from prhub.text import cited

    text = "与 #7 和 volcengine/verl#8 有关，C#12 不算。"
    assert cited(text) == [7, 8]
    assert md(text, pr_url=lambda n: f"u/{n}") == (
        "与 [#7](u/7) 和 volcengine/verl#8 有关，C#12 不算。"
    )
    page = str(html_text(text, links("o/r", {})))
    assert page.count("<a ") == 1 and 'href="https://github.com/o/r/pull/7"' in page
    assert [p for p in pieces(text) if isinstance(p, int)] == [7]


def test_refs_reads_a_repositorys_references_and_those_a_keyword_leads():
    import re

    from prhub.text import refs

    text = "Reverts #12 (see o/r#13, x/y#14 and https://github.com/o/r/pull/15); fixes #16, #12"
    assert refs(text) == [12, 13, 14, 15, 16]
    assert refs(text, "O/R") == [12, 13, 15, 16]
    assert refs(text, "o/r", after=re.compile(r"\bfix(?:es)?\s+$", re.I)) == [16]
    assert refs(text, "o/r", after=re.compile(r"\breverts?\s+$", re.I)) == [12]


def test_a_requests_neighbours_are_ranked_without_the_tokenizer_and_bounded_with_it():
    from datetime import UTC, datetime

    from prhub.digest.related import MOST, TOKENS, bounded, line, ranked
    from prhub.model import Neighbour
    from prhub.prepare.tokens import count

    def near(number: int, title: str, relation: str = "same_files") -> Neighbour:
        at = datetime(2026, 7, 28, tzinfo=UTC)
        return Neighbour(number=number, title=title, merged_at=at, relation=relation, files=["a"])

    many = [near(n, f"PR {n}") for n in range(1, 20)]
    assert [n.number for n in ranked(many, number=3)] == [1, 2, 4, 5, 6, 7][:MOST]
    long = ranked([near(1, "长" * 480), near(2, "x y " * 60), near(9, "y", "reverted")])
    kept = bounded(long, "o200k_base")
    assert [n.number for n in kept] == [9, 2]  # the revert first; the long one left out
    assert sum(count(line(n), "o200k_base") + 1 for n in kept) <= TOKENS
