"""The labels view: grouping, tag aliases, the tags a missing one points to, and its formats."""

from __future__ import annotations

import itertools
import json

from prhub.publish import html, labels
from prhub.publish.labels import labels_markdown, view
from prhub.publish.parts import one_line
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
)


def test_labels_view_matches_golden():
    check_golden("labels-acme-rocket-2026-W31.md", labels_markdown(view(report())))


def test_labels_view_for_one_tag_lists_only_it():
    text = labels_markdown(view(report(), "Rollout"))
    assert "## rollout（2）" in text
    assert "#101" in text and "#103" in text and "#102" not in text
    assert "本周有 PR 的标签" not in text


def test_a_tag_is_found_by_any_of_its_aliases():
    assert "## docs（1）" in labels_markdown(view(report(), "doc"))
    assert "## docs（1）" in labels_markdown(view(report(), "Documentation"))
    # The repository's own alias, then ours.
    assert "## rollout（2）" in labels_markdown(view(report(), "sampling", {"sampling": "rollout"}))


def test_a_tag_without_prs_lists_the_tags_the_week_has():
    v = view(report(), "nope")
    assert [g.tag for g in v.groups] == ["nope"] and v.groups[0].prs == []
    assert list(v.available.items())[:3] == [("bugfix", 2), ("rollout", 2), ("trainer", 2)]
    text = labels_markdown(v)
    assert "## nope（0）" in text and "本周没有这个标签的 PR。" in text
    assert "本周有 PR 的标签：bugfix（2）、rollout（2）、trainer（2）、algo（1）" in text


def test_groups_are_counted_as_the_facts_count_tags():
    v = view(report())
    assert {g.tag: len(g.prs) for g in v.groups} == report().facts.tags
    assert [g.tag for g in v.groups][:3] == ["bugfix", "rollout", "trainer"]  # most PRs first


def test_labels_json_is_the_view():
    v = view(report(), "doc")
    data = json.loads(labels.labels_json(v))
    assert data["tag"] == "docs" and data["available"] == {}
    [group] = data["groups"]
    assert [pr["number"] for pr in group["prs"]] == [104]
    assert group["prs"][0]["url"] == "https://github.com/acme/rocket/pull/104"


def test_labels_html_is_a_page_with_the_groups():
    page = html.labels_html(view(report(), "nope"))
    assert page.startswith("<!doctype html>")
    assert "<h2>nope（0）</h2>" in page and "本周有 PR 的标签：<code>bugfix</code>（2）" in page
    page = html.labels_html(view(report(), "rollout"))
    assert '<a href="https://github.com/acme/rocket/pull/103">#103</a>' in page


def test_model_and_label_text_stay_in_their_headings_in_the_labels_view():
    hostile = hostile_narrative_report()
    text = labels_markdown(view(hostile))
    tokens = MARKDOWN.parse(text)
    headings = [plain(t) for up, t in itertools.pairwise(tokens) if up.type == "heading_open"]
    assert f"{one_line(tag_name(INJECT))}（1）" in headings
    assert headings.count(f"#101 {INJECTED}") == 3  # under rollout, bugfix and the label
    before = shape(labels_markdown(view(report())))["heading_open"]
    assert shape(text)["heading_open"] == before + 2  # the label's group and #101 under it
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
    assert f"## breaking（{len(flagged)}）" in text
    assert all(f"#{d.number}" in text for d in flagged)
