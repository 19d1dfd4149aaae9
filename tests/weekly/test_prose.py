"""Report types: dry-run totals, the texts made of facts alone, and the key-PR rows."""

from __future__ import annotations

from typing import Any

from prhub.model import AuthorCount, DryRun, PlannedPR, Revert, WeeklyReport
from prhub.publish import render
from prhub.publish.rows import key_rows
from prhub.weekly.prose import (
    author_highlight,
    author_line,
    author_unsaid,
    fact_headlines,
    fact_risks,
    lead,
    risks,
    top_authors,
)
from tests.factories import FIXTURES, LEAD


def test_dry_run_totals_include_the_narrative():
    plan = DryRun(
        repo="o/r",
        prs=[
            PlannedPR(number=1, cached=False, calls=3, tokens_in=9000),
            PlannedPR(number=2, cached=True, calls=0, tokens_in=0),
            PlannedPR(number=3, cached=False, calls=1, tokens_in=1500),
        ],
        narrative_calls=2,
        narrative_tokens_in=4000,
    )
    assert plan.calls == 6
    assert plan.tokens_in == 14_500
    assert DryRun(repo="o/r", prs=[]).calls == 0


# Texts of the facts and the key-PR rows


def fixture() -> WeeklyReport:
    return WeeklyReport.model_validate_json(
        (FIXTURES / "reports" / "acme-rocket-2026-W31.json").read_text()
    )


def with_facts(r: WeeklyReport, **facts: Any) -> WeeklyReport:
    return r.model_copy(update={"facts": r.facts.model_copy(update=facts)})


def authors(*counts: int) -> list[AuthorCount]:
    numbers = iter(range(101, 200))
    return [
        AuthorCount(author=f"dev{i}", prs=[next(numbers) for _ in range(n)])
        for i, n in enumerate(counts)
    ]


def test_key_rows_are_ranked_by_importance_not_by_number():
    r = with_facts(fixture(), key_prs=[101, 102, 103, 106])  # as listed by number
    rows = key_rows(r)
    assert [row.numbers for row in rows] == [[102], [106], [103], [101]]
    assert [row.importance for row in rows] == [8.2, 7.4, 6.8, 5.5]


def test_a_revert_and_the_pr_it_reverts_share_one_row():
    rev = Revert(number=104, reverted=103, delay_hours=20.5)  # both in the week
    r = with_facts(fixture(), reverts=[rev], key_prs=[102, 106, 103, 101, 104])
    rows = key_rows(r)
    assert [row.numbers for row in rows] == [[102], [106], [103, 104], [101]]
    pair = rows[2]
    assert pair.importance == 6.8  # the higher of the two
    # The model's note on either PR, or what the facts say of the revert.
    assert pair.note == "正确性修复，但缺少自动化测试。"
    bare = r.model_copy(update={"narrative": None})
    note = key_rows(bare)[2].note
    assert note.startswith("#104 在 #103 合入 20.5 小时后撤销了 #103。")


def test_a_revert_of_an_older_pr_names_both_in_its_row():
    rev = Revert(number=106, reverted=90)  # #90 merged before the week
    rows = key_rows(with_facts(fixture(), reverts=[rev]))
    assert [90, 106] in [row.numbers for row in rows]
    assert next(row for row in rows if row.numbers == [90, 106]).importance == 7.4
    md = render.weekly_markdown(with_facts(fixture(), reverts=[rev]))
    assert (
        "| [#90](https://github.com/acme/rocket/pull/90)/"
        "[#106](https://github.com/acme/rocket/pull/106) | 轮数配置改名 | 7.4 |"
    ) in md


def test_author_concentration_is_a_highlight_when_one_author_stands_out():
    f = fixture().facts
    standout = f.model_copy(
        update={"authors": authors(4, 2, *[1] * 12), "pr_count": 18, "top_author_share": 4 / 18}
    )
    assert author_highlight(standout) == (
        "作者集中度较高：dev0 本周贡献 4 个 PR（22%：#101、#102、#103、#104），"
        "单点知识风险需要关注。"
    )
    # Added only when none of the model's highlights names that author already.
    assert author_unsaid(["别的亮点"], standout)
    assert not author_unsaid(["作者集中度较高：DEV0 贡献 4 个"], standout)
    three = f.model_copy(update={"authors": authors(3, 1, 1, 1), "top_author_share": 3 / 6})
    assert author_highlight(three).startswith("作者集中度较高：dev0 本周贡献 3 个 PR")


def test_no_concentration_for_a_tie_two_prs_or_a_small_share():
    f = fixture().facts
    tie = f.model_copy(  # the three-way tie at 2 of 13 PRs that fired
        update={"authors": authors(2, 2, 2, *[1] * 7), "pr_count": 13, "top_author_share": 2 / 13}
    )
    assert author_highlight(tie) == ""
    tie_of_four = f.model_copy(
        update={"authors": authors(4, 4, 1), "pr_count": 9, "top_author_share": 4 / 9}
    )
    assert author_highlight(tie_of_four) == ""  # two tied at the top: neither stands out
    assert author_highlight(f) == ""  # 2 of 6, alone at the top: two PRs are no pattern
    spread = f.model_copy(
        update={"authors": authors(3, *[1] * 27), "pr_count": 30, "top_author_share": 3 / 30}
    )
    assert author_highlight(spread) == ""  # 10 %
    one_each = f.model_copy(update={"authors": authors(1, 1, 1), "top_author_share": 1 / 3})
    assert author_highlight(one_each) == ""


def test_a_tie_names_everyone_in_it_and_crowns_no_one():
    f = fixture().facts.model_copy(
        update={"authors": authors(2, 2, 1, 1), "top_author_share": 2 / 6}
    )
    assert [a.author for a in top_authors(f)] == ["dev0", "dev1"]
    assert author_line(f) == "作者 4 人，dev0、dev1 并列最多，各贡献 2 个（各 33%）。"
    assert "最多产" not in author_line(f)
    assert "最多产的 marta-kowal 贡献 2 个（33%）" in author_line(fixture().facts)


# The computed facts in the model's risk list


def test_a_pr_the_models_risks_cite_gets_no_machine_line():
    f = fixture().facts  # #106 breaking and untested, #103 untested
    written = ["#106 的配置改名没有兼容读取。", "#103 改了缓存却没有补测试。"]
    assert risks(written, f) == written


def test_a_flagged_pr_the_model_left_out_gets_one_readable_line():
    f = fixture().facts.model_copy(
        update={"reverts": [Revert(number=104, reverted=103, delay_hours=24.0)]}
    )
    written = ["#103 改了缓存却没有补测试。"]
    assert risks(written, f) == [
        *written,
        "#104 撤销了 #103（合入后 24.0 小时）。",
        "#106 可能破坏现有用法：标题标注 [BREAKING]，配置项改名 trainer.total_epochs → "
        "trainer.max_epochs（rocket/config/ppo.yaml）；改了代码但没有改测试。",
    ]
    assert fact_risks(f) == [
        "#103 改了代码但没有改测试。",
        *risks(written, f)[1:],
    ]  # one line per PR, every fact of that PR in it


def test_a_computed_lead_is_never_empty():
    f = fixture().facts
    assert lead(f) == LEAD
    bare = f.model_copy(update={"modules": {}, "tags": {}, "key_prs": []})
    assert lead(bare) == "本周 rocket 共合入 6 个 PR。"


def test_the_facts_risks_in_short_are_one_line_a_kind():
    facts = with_facts(
        fixture(),
        reverts=[Revert(number=104, reverted=103, delay_hours=2.0), Revert(number=105)],
        untested=list(range(101, 108)),
    ).facts
    assert fact_headlines(facts) == [
        "#104 撤销了 #103。",
        "#105 撤销了 一个未知 PR。",
        "#106 可能破坏现有用法。",
        "#101、#102、#103、#104、#105 等 7 个 PR 改了代码但没有改测试。",
    ]
    assert len(fact_risks(facts)) == 7  # the full list keeps one line a PR
    assert fact_headlines(with_facts(fixture(), reverts=[], breaking=[], untested=[]).facts) == []
