"""The views: each report's sections in order, what they hold, and where its PRs link."""

from __future__ import annotations

from prhub.publish import render
from prhub.publish.labels import view as labels_view
from prhub.publish.parts import Flag, Items, Line, Link, Para, Refs, Section, Table, Words, links
from prhub.publish.view import check_marker, digest_view, tags_view, weekly_view
from prhub.weekly.prose import author_line, figures
from tests.factories import (
    digest,
    empty_report,
    no_narrative_report,
    report,
    revert_report,
    sparse_report,
    unchecked_report,
    unlinked,
)


def headings(sections: tuple[Section, ...]) -> list[str]:
    """The headings of sections and their subsections, in order, as Markdown shows them."""
    out = []
    for s in sections:
        out.append(render.md_text(s.heading))
        out += headings(s.sections)
    return out


def test_the_weekly_view_lists_its_sections_in_order():
    v = weekly_view(report())
    assert headings(v.sections) == [
        "本周亮点",
        "风险观察",
        "完整周报",
        "1. 执行摘要",
        "2. 本周重点变化",
        "3. 模块与主题趋势",
        "4. 风险观察",
        "5. 重点 PR 速览",
        "6. 后续建议",
        "本周数据",
        "全部 PR",
    ]
    assert [s.callout for s in v.sections[:2]] == ["highlights", "risks"]
    assert v.summary is None and v.empty == "" and v.footer.startswith("weekly@v1 · ")
    assert render.md_text(v.meta[-1]) == "生成于 2026-08-03 09:02"


def test_empty_sections_are_left_out_and_the_rest_numbered():
    v = weekly_view(sparse_report())
    assert headings(v.sections)[2:7] == [
        "完整周报",
        "1. 执行摘要",
        "2. 风险观察",
        "3. 重点 PR 速览",
        "4. 后续建议",
    ]
    assert len(v.meta) == 4  # no time it was made


def test_a_week_without_prs_says_so_and_shows_nothing_else():
    v = weekly_view(empty_report())
    assert v.empty == "本周没有合入任何 PR。"
    assert (v.sections, v.summary, v.footer, v.lead) == ((), None, "", "")


def test_a_week_without_narrative_shows_its_figures_then_its_data():
    r = no_narrative_report()
    v = weekly_view(r)
    assert v.summary is not None and render.md_text(v.summary) == figures(r.facts, render.md)
    assert headings(v.sections) == ["本周数据", "全部 PR", "未能生成导读的 PR"]
    [failed] = v.sections[-1].blocks
    assert isinstance(failed, Para)
    said = render.md_text(failed.text)
    assert "[#107](https://github.com/acme/rocket/pull/107)" in said
    assert "超时" not in said  # why it failed is the operator's, in the run's log
    assert v.notice == (
        "⚠ 本报告的 7 个 PR 中，1 个未能生成导读（#107），导读与行文只涵盖其余 6 个，名单见文末。"
    )


def test_texts_of_the_facts_keep_their_words_apart_from_the_data():
    r = report()
    data = next(s for s in weekly_view(r).sections if s.heading == Words("本周数据"))
    texts = [b.text for b in data.blocks if isinstance(b, Para)]
    authors = next(t for t in texts if render.md_text(t).startswith("作者"))
    assert isinstance(authors, Line)
    assert "marta-kowal" in authors.parts  # data, escaped where it is shown
    assert Words("作者 5 人，最多产的 ") in authors.parts
    assert render.md_text(authors) == author_line(r.facts, render.md)


def test_the_pr_table_carries_each_rows_pr_and_tags_for_the_filter():
    v = weekly_view(report())
    every = next(s for s in v.sections if s.heading == Words("全部 PR"))
    table = every.blocks[1]
    assert isinstance(table, Table) and table.columns[0] == "pr"
    assert [row.pr for row in table.rows] == report().facts.prs
    assert table.rows[-1].tags == ("trainer", "refactor", "breaking")
    first = table.rows[0].cells[0]
    assert first == Refs(((101, "https://github.com/acme/rocket/pull/101"),))


def test_the_digest_view_lists_what_the_digest_holds():
    d = digest()
    v = digest_view(d, "UTC")
    assert [render.md_text(s.heading) for s in v.sections] == [
        "值得关注的设计决策",
        "风险",
        "后续跟进",
    ]
    first = v.sections[0].blocks[0]
    assert isinstance(first, Items) and first.numbered
    assert render.md_text(v.meta[2]) == "合并于 2026-07-27 03:12"
    assert v.title == f"#101 {d.content.title} · acme/rocket"
    bare = digest_view(d.model_copy(update={"labels": [], "modules": [], "kind": None}))
    assert unlinked(render.md_text(bare.tags)) == "标签：无 · 相关：#95 #102"


def test_the_labels_view_groups_prs_and_names_the_tags_a_missing_one_points_to():
    v = tags_view(labels_view(report(), "rollout"))
    [group] = v.sections
    # The heading is the tag alone, so its anchor stays the same from week to week.
    assert render.md_text(group.heading) == "rollout"
    assert group.anchor == "rollout" and group.blocks == (Para(Words("2 个 PR")),)
    assert [render.md_text(s.heading).split(" ")[0] for s in group.sections] == [
        "[#101](https://github.com/acme/rocket/pull/101)",
        "[#103](https://github.com/acme/rocket/pull/103)",
    ]
    assert v.available is None
    missing = tags_view(labels_view(report(), "nope"))
    assert missing.sections[0].empty == "本周没有这个标签的 PR。"
    assert missing.available is not None


def test_a_long_list_says_what_a_page_folds_away():
    assert Items(long=tuple("abcdefg"), label="条风险").folded == "另有 2 项条风险（共 7 项）"
    assert Items(long=tuple("abcde")).folded == ""


def test_links_follow_the_digests_host_and_drop_what_is_not_http():
    urls = links(
        "acme/rocket",
        {
            1: "https://ghe.example.com/acme/rocket/pull/1",
            2: "javascript:alert(1)",
            3: "http://[::1",  # not a URL at all
        },
    )
    assert urls.pr(1) == "https://ghe.example.com/acme/rocket/pull/1"
    assert urls.pr(2) == "https://ghe.example.com/acme/rocket/pull/2"
    assert urls.pr(3) == "https://ghe.example.com/acme/rocket/pull/3"
    assert urls.commit("abc123") == "https://ghe.example.com/acme/rocket/commit/abc123"
    assert links("acme/rocket", {}).pr(9) == "https://github.com/acme/rocket/pull/9"


def test_every_pr_row_links_to_its_digest_when_the_output_has_one():
    r = revert_report()
    to = {n: f"pr/{n}.html" for n in r.facts.prs if n != 102}.get
    v = weekly_view(r, digest_link=to)
    full = next(s for s in v.sections if s.heading == Words("完整周报"))
    [key] = next(s.blocks for s in full.sections if "重点 PR" in render.md_text(s.heading))
    assert isinstance(key, Table)
    pair = next(
        row
        for row in key.rows
        if row.cells[0] == Refs(((103, r.digests[2].url), (104, r.digests[3].url)), "/")
    )
    assert render.md_text(pair.cells[1], table=True).startswith("[")
    assert "pr/103.html" in render.md_text(
        pair.cells[1]
    ) and "[#104 导读](pr/104.html)" in render.md_text(pair.cells[1])
    every = next(s for s in v.sections if s.heading == Words("全部 PR")).blocks[1]
    assert isinstance(every, Table)
    titles = {row.pr: row.cells[1] for row in every.rows}
    assert titles[101] == Link(r.digests[0].content.title, "pr/101.html")
    assert titles[102] == r.digests[1].content.title  # no digest page for it: plain text
    tagged = tags_view(labels_view(r, "rollout"), digest_link=to)
    heading = tagged.sections[0].sections[0].heading
    assert isinstance(heading, Line) and heading.parts[-1] == Link(
        r.digests[0].content.title, "pr/101.html"
    )


def test_without_digest_links_rows_show_plain_titles():
    every = next(s for s in weekly_view(report()).sections if s.heading == Words("全部 PR"))
    assert not any(isinstance(c, Link) for row in every.blocks[1].rows for c in row.cells)  # type: ignore[union-attr]


def key_table(v) -> Table:
    full = next(s for s in v.sections if s.heading == Words("完整周报"))
    [table] = next(s.blocks for s in full.sections if "重点 PR" in render.md_text(s.heading))
    assert isinstance(table, Table)
    return table


def test_a_digest_that_failed_its_checks_is_marked_and_ranked_after_the_good_ones():
    r = unchecked_report()
    bad = next(d for d in r.digests if d.number == 102)
    assert check_marker(bad) == "⚠ 未通过检查" and check_marker(r.digests[0]) == ""
    before = [row.cells[0] for row in key_table(weekly_view(report())).rows]
    after = key_table(weekly_view(r)).rows
    assert [row.cells[0] for row in after] == [*before[1:], before[0]]  # #102 was first
    topic = after[-1].cells[1]
    assert isinstance(topic, Line)
    assert Flag("⚠ 未通过检查", "未通过检查：文档改动评分偏高、建议未点名文件") in topic.parts
    assert render.md_text(topic) == "GRPO 优势估计 ⚠ 未通过检查"
    every = next(s for s in weekly_view(r).sections if s.heading == Words("全部 PR")).blocks[1]
    assert isinstance(every, Table)
    marked = [row.pr for row in every.rows if "⚠" in render.md_text(row.cells[1])]
    assert marked == [102]


def test_a_pair_row_names_which_of_its_digests_failed():
    r = revert_report()
    digests = [
        d.model_copy(
            update={"meta": d.meta.model_copy(update={"failed_checks": ["revert_misread"]})}
        )
        if d.number == 104
        else d
        for d in r.digests
    ]
    rows = key_table(weekly_view(r.model_copy(update={"digests": digests}))).rows
    pair = next(row for row in rows if len(row.cells[0].prs) == 2)  # type: ignore[union-attr]
    assert isinstance(pair.cells[1], Line)
    assert Flag("⚠ 未通过检查", "未通过检查：#104 未说明是回滚") in pair.cells[1].parts
    assert [row.cells[0] for row in rows] == [
        row.cells[0] for row in key_table(weekly_view(r)).rows
    ]


def test_the_notice_says_what_the_week_lacks_and_is_empty_for_a_full_week():
    assert weekly_view(report()).notice == ""
    assert weekly_view(empty_report()).notice == ""
    assert weekly_view(unchecked_report()).notice == (
        "⚠ 本报告的 6 个 PR 中，1 篇导读未通过检查（#102），已在表中标出。"
    )
    r = no_narrative_report()
    both = r.model_copy(update={"digests": unchecked_report().digests})
    assert weekly_view(both).notice == (
        "⚠ 本报告的 7 个 PR 中，1 个未能生成导读（#107），导读与行文只涵盖其余 6 个，名单见文末；"
        "1 篇导读未通过检查（#102），已在表中标出。"
    )


def test_a_digest_that_failed_its_checks_says_so_before_its_verdict():
    d = unchecked_report().digests[1]
    assert digest_view(d).notice == (
        "⚠ 这篇导读未通过检查（文档改动评分偏高、建议未点名文件），阅读时请以原 PR 为准。"
    )
    assert digest_view(digest()).notice == ""


def test_a_weeks_discussion_is_linked_at_the_end_of_every_format():
    from prhub.publish.html import weekly_html

    r = report()
    page = "https://github.com/acme/rocket/discussions/7"
    posted = r.model_copy(update={"meta": r.meta.model_copy(update={"discussion_url": page})})
    assert weekly_view(r).discussion == "" and "参与讨论" not in render.weekly_markdown(r)
    assert weekly_view(posted).discussion == page
    text = render.weekly_markdown(posted)
    assert text.count(f"[参与讨论]({page})") == 1
    assert text.index("## 全部 PR") < text.index("参与讨论") < text.index("<sub>")
    assert f'<a href="{page}">参与讨论</a>' in weekly_html(posted)


def test_a_discussion_url_that_is_no_web_page_is_not_linked():
    r = report()
    for url in ("javascript:alert(1)", "https://x.example/a b", "https://x.example/(x)"):
        bad = r.model_copy(update={"meta": r.meta.model_copy(update={"discussion_url": url})})
        assert weekly_view(bad).discussion == ""
        assert "参与讨论" not in render.weekly_markdown(bad)
