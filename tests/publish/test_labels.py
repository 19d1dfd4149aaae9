"""The labels view: grouping, tag aliases, the tags a missing one points to, and its formats."""

from __future__ import annotations

import itertools
import json
import re
from urllib.parse import quote

import pytest

from prhub.publish import html, labels
from prhub.publish.labels import labels_markdown, view
from prhub.publish.parts import anchor, one_line
from prhub.tags import tag_name
from tests.factories import (
    INJECT,
    INJECTED,
    MARKDOWN,
    check_golden,
    hostile_narrative_report,
    plain,
    report,
    shape,
    unchecked_report,
)


def test_labels_view_matches_golden():
    check_golden("labels-acme-rocket-2026-W31.md", labels_markdown(view(report())))


def test_labels_view_for_one_tag_lists_only_it():
    text = labels_markdown(view(report(), "Rollout"))
    assert "## rollout\n\n2 个 PR\n" in text
    assert "#101" in text and "#103" in text and "#102" not in text
    assert "本周有 PR 的标签" not in text


def test_a_tag_is_found_by_any_of_its_aliases():
    assert "## docs\n\n1 个 PR\n" in labels_markdown(view(report(), "doc"))
    assert "## docs\n\n1 个 PR\n" in labels_markdown(view(report(), "Documentation"))
    # The repository's own alias, then ours.
    rollout = labels_markdown(view(report(), "sampling", {"sampling": "rollout"}))
    assert "## rollout\n\n2 个 PR\n" in rollout


def test_a_tag_without_prs_lists_the_tags_the_week_has():
    v = view(report(), "nope")
    assert [g.tag for g in v.groups] == ["nope"] and v.groups[0].prs == []
    assert list(v.available.items())[:3] == [("bugfix", 2), ("rollout", 2), ("trainer", 2)]
    text = labels_markdown(v)
    assert "## nope\n\n本周没有这个标签的 PR。" in text
    assert "本周有 PR 的标签：bugfix（2）、rollout（2）、trainer（2）、algo（1）" in text


def test_groups_are_counted_as_the_facts_count_tags():
    v = view(report())
    assert {g.tag: len(g.prs) for g in v.groups} == report().facts.tags
    # Modules, then types, then labels; in each, most PRs first.
    assert [(g.kind, g.tag) for g in v.groups] == [
        ("module", "rollout"),
        ("module", "trainer"),
        ("module", "algo"),
        ("module", "ci"),
        ("module", "docs"),
        ("type", "bugfix"),
        ("type", "breaking"),
        ("type", "feature"),
        ("type", "refactor"),
    ]


def test_all_tags_come_grouped_by_kind_after_contents_that_link_to_each():
    text = labels_markdown(view(report()))
    headings = [
        plain(t)
        for up, t in itertools.pairwise(MARKDOWN.parse(text))
        if up.type == "heading_open" and up.tag == "h2"
    ]
    assert headings == ["目录", "模块", "类型"]
    contents = text.split("## 目录")[1].split("## 模块")[0].strip().split("\n")
    assert contents[0].startswith("- 模块：[rollout](#rollout)（2）、[trainer](#trainer)（2）")
    page = html.labels_html(view(report()))
    ids = re.findall(r'<h3 id="([^"]+)">', page)
    targets = re.findall(r'<a href="#([^"]+)">', page)
    assert targets == ids and len(ids) == 9  # every tag's group, each linked once


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        ("rollout（2）", "rollout2"),
        ("Good First Issue（1）", "good-first-issue1"),
        ("文档 / CI（3）", "文档--ci3"),
    ],
)
def test_anchors_are_the_ids_github_gives_markdown_headings(heading, slug):
    assert anchor(heading) == slug


def test_labels_json_is_the_view():
    v = view(report(), "doc")
    data = json.loads(labels.labels_json(v))
    assert data["tag"] == "docs" and data["available"] == {}
    [group] = data["groups"]
    assert [pr["number"] for pr in group["prs"]] == [104]
    assert group["prs"][0]["url"] == "https://github.com/acme/rocket/pull/104"


def test_tag_anchors_hold_no_count_and_stay_the_same_as_a_tag_grows():
    r = report()
    more = r.model_copy(
        update={"digests": [*r.digests, r.digests[0].model_copy(update={"number": 199})]}
    )
    for v in (view(r), view(more)):
        assert [s.anchor for kind in v_sections(v) for s in kind.sections][:2] == [
            "rollout",
            "trainer",
        ]
    assert "(#rollout)（3）" in labels_markdown(view(more))


def test_a_label_named_as_a_kind_links_to_its_own_group():
    r = report()
    named = [d.model_copy(update={"labels": [*d.labels, "模块"]}) for d in r.digests[:1]]
    text = labels_markdown(view(r.model_copy(update={"digests": [*named, *r.digests[1:]]})))
    # GitHub names the second heading 模块 "模块-1": the contents link there, not to the kind.
    assert f"[模块](#{quote('模块')}-1)（1）" in text and "\n### 模块\n" in text
    page = html.labels_html(view(r.model_copy(update={"digests": [*named, *r.digests[1:]]})))
    assert '<h3 id="模块-1">模块</h3>' in page


def v_sections(v):
    from prhub.publish.view import tags_view

    return tags_view(v).sections[1:]


def test_labels_html_is_a_page_with_the_groups():
    page = html.labels_html(view(report(), "nope"))
    assert page.startswith("<!doctype html>")
    assert (
        '<h2 id="nope">nope</h2>' in page
        and '本周有 PR 的标签：<code class="tag">bugfix</code>（2）' in page
    )
    page = html.labels_html(view(report(), "rollout"))
    assert '<a href="https://github.com/acme/rocket/pull/103">#103</a>' in page


def test_model_and_label_text_stay_in_their_headings_in_the_labels_view():
    hostile = hostile_narrative_report()
    text = labels_markdown(view(hostile))
    tokens = MARKDOWN.parse(text)
    headings = [plain(t) for up, t in itertools.pairwise(tokens) if up.type == "heading_open"]
    assert one_line(tag_name(INJECT)) in headings
    assert headings.count(f"#101 {INJECTED}") == 3  # under rollout, bugfix and the label
    before = shape(labels_markdown(view(report())))["heading_open"]
    # The labels' kind, the label's group and #101 under it.
    assert shape(text)["heading_open"] == before + 3
    assert "table_open" not in shape(text) and "blockquote_open" not in shape(text)
    assert "<b>粗" not in html.labels_html(view(hostile))


def test_a_breaking_title_without_a_breaking_label_is_tagged_breaking():
    r = report()
    digests = [
        d.model_copy(update={"labels": [x for x in d.labels if x != "breaking"]}) for d in r.digests
    ]
    flagged = [d for d in digests if d.breaking]  # `[BREAKING]` or `type!:` in the title
    assert flagged and not any("breaking" in d.tags for d in flagged)
    text = labels_markdown(view(r.model_copy(update={"digests": digests}), "breaking"))
    assert f"## breaking\n\n{len(flagged)} 个 PR\n" in text
    assert all(f"#{d.number}" in text for d in flagged)


def test_a_digest_that_failed_its_checks_is_marked_in_every_group_it_is_in():
    v = view(unchecked_report())
    assert [pr.failed_checks for g in v.groups for pr in g.prs if pr.number == 102][0]
    text = labels_markdown(v)
    marked = [line for line in text.split("\n") if "⚠ 未通过检查" in line]
    assert len(marked) == 3 and all("[#102]" in line for line in marked)  # trainer, algo, feature
    page = html.labels_html(v)
    assert (
        page.count('<span class="flag" title="未通过检查：文档改动评分偏高、建议未点名文件">') == 3
    )
