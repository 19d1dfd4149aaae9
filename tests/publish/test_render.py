"""Rendered Markdown against golden files a reviewer can read (PRHUB_UPDATE_GOLDEN=1 rewrites)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from prhub.model import AuthorCount, PRDigest, Risk
from prhub.publish import footers, render, view
from prhub.tags import parse_title, tag_name
from prhub.weekly.prose import short_risk
from tests.factories import (
    HIDDEN,
    INJECT,
    INJECTED,
    LEAD,
    MARKDOWN,
    SPOOFED,
    check_golden,
    digest,
    hostile_narrative_report,
    injected_digest,
    plain,
    report,
    revert_report,
    shape,
    sparse_report,
    unlinked,
)


def test_digest_markdown_matches_golden():
    check_golden("digest-101.md", render.digest_markdown(digest()))


def test_weekly_markdown_matches_golden():
    check_golden("weekly-acme-rocket-2026-W31.md", render.weekly_markdown(report()))


def test_json_round_trips():
    assert PRDigest.model_validate_json(render.digest_json(digest())) == digest()
    assert json.loads(render.weekly_json(report()))["facts"]["pr_count"] == 6


def test_digest_shows_merge_time_in_the_readers_timezone():
    assert "合并于 2026-07-27 11:12" in render.digest_markdown(digest(), "Asia/Shanghai")
    assert "合并于 2026-07-27 03:12" in render.digest_markdown(digest(), "UTC")


def test_empty_week_report_is_short():
    empty = report().model_copy(
        update={
            "facts": report().facts.model_copy(update={"prs": [], "pr_count": 0, "key_prs": []}),
            "narrative": None,
            "digests": [],
        }
    )
    text = render.weekly_markdown(empty)
    assert "本周没有合入任何 PR" in text
    assert "## 本周亮点" not in text


def test_report_fixture_is_one_the_pipeline_can_make():
    r = report()
    for d in r.digests:
        assert (d.modules, d.kind, d.breaking) == parse_title(d.original_title)[:3], d.number
        assert d.tags == list(dict.fromkeys(map(tag_name, d.tags))), d.number
    assert Counter(t for d in r.digests for t in d.tags) == Counter(r.facts.tags)


def test_footers_say_where_the_text_came_from():
    assert footers.digest_footer(digest()) == (
        "digest@v1 · gpt-4o-mini · 1 次调用 · 输入 1,227 / 输出 412 tokens · "
        "模型看到：全文 2、节选 0、仅列名 0、排除 0 个文件（变更行 100%）"
    )
    meta = report().meta.model_copy(update={"dropped_citations": 3})
    assert footers.weekly_footer(report().model_copy(update={"meta": meta})) == (
        "weekly@v1 · gpt-4o-mini · 导读与周报共调用 7 次 · 输入 12,000 / 输出 3,100 tokens · "
        "删去无据引用 3 处"
    )
    assert f"<sub>{footers.digest_footer(digest())}</sub>" in render.digest_markdown(digest())


# Untrusted text and its Markdown: every mark that could start markup where it stands is escaped,
# and nothing else, so Chinese prose and snake_case stay readable in the raw file.
HOSTILE = [
    ("a <script>x</script> & b", "a &lt;script>x&lt;/script> & b"),
    ("<https://a.example> <!-- c --> a < b", "&lt;https://a.example> &lt;!-- c --> a < b"),
    ("&amp; &#123; &#x1F; AT&T", "&amp;amp; &amp;#123; &amp;#x1F; AT&T"),
    ("keep `a<b>` code", "keep `a<b>` code"),
    ("stray ` tick", "stray \\` tick"),
    ("```python", "\\`\\`\\`python"),
    ("`````", "\\`\\`\\`\\`\\`"),
    ("``a`b`` and ``c", "``a`b`` and \\`\\`c"),
    ("__init__ 与 snake_case_name、a__b", "\\_\\_init\\_\\_ 与 snake_case_name、a__b"),
    ("中_文_字 _强调_ 尾_", "中_文_字 \\_强调\\_ 尾\\_"),
    (
        "**粗** *斜* ~~删~~ ~单~ 3~5 分钟",
        "\\*\\*粗\\*\\* \\*斜\\* \\~\\~删\\~\\~ \\~单\\~ 3\\~5 分钟",
    ),
    ("[链接](https://evil.example) ![](x.png)", "\\[链接](https://evil.example) !\\[](x.png)"),
    ("[ ] 任务 [^1] [x]: /url", "\\[ ] 任务 \\[^1] \\[x]: /url"),
    ("$x$ 与 $5", "\\$x\\$ 与 \\$5"),
    ("C:\\path\\to 与 \\* 与 行尾\\", "C:\\path\\to 与 \\\\\\* 与 行尾\\\\"),
    ("# 标题", "\\# 标题"),
    ("###### 六级", "\\###### 六级"),
    ("#102 修复 C# 与 F#", "#102 修复 C# 与 F#"),
    ("结尾 ##", "结尾 \\##"),
    ("> 引用 a > b a->b", "\\> 引用 a > b a->b"),
    ("- 列表", "\\- 列表"),
    ("+ 列表", "\\+ 列表"),
    ("* 列表", "\\* 列表"),
    ("---", "\\---"),
    ("- - -", "\\- - -"),
    ("___", "\\_\\_\\_"),
    ("-1 的情况与 +1", "-1 的情况与 +1"),
    ("1. 第一", "1\\. 第一"),
    ("1) 第一", "1\\) 第一"),
    ("2026.8 版本，第 3. 条", "2026.8 版本，第 3. 条"),
    ("    缩进的代码", "缩进的代码"),
    ("===", "==="),
    ("<div>\n\n块</div>", "&lt;div> 块&lt;/div>"),
    ("标题\n\n| a | b |\n|---|---|", "标题 | a | b | |---|---|"),
    ("行\u2028分隔\u2029段落\r回车\r\n\x85下一行\v\f", "行 分隔 段落 回车 下一行"),
    ("句中的点。a.b, (括号) 感叹!问号? 冒号: 引号\"' {x} 100% ^", None),
    ("合并 #101、@lin-yue 的修复：trainer.total_epochs → max_epochs", None),
]


@pytest.mark.parametrize(("raw", "expected"), HOSTILE)
def test_md_escapes_what_could_start_markup_and_nothing_else(raw, expected):
    assert render.md(raw) == (raw if expected is None else expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a | b", "a \\| b"),
        ("`x|y` z", "`x\\|y` z"),
        ("a\\|b", "a\\\\\\|b"),
        ("two\nlines | 或 \u2028 三", "two lines \\| 或 三"),
    ],
)
def test_md_in_a_table_cell_escapes_pipes_too(raw, expected):
    assert render.md(raw, table=True) == expected


TABLE = "| a |\n| - |\n| {} |"
CONTEXTS = {
    "heading": ("### 标题 {}", "标题 "),
    "bullet": ("- {}", ""),
    "numbered": ("1. {}", ""),
    "paragraph": ("{}", ""),
    "after text": ("原标题：{}", "原标题："),
    "table cell": ("| a | b |\n| --- | --- |\n| {} | x |", ""),
}


@pytest.mark.parametrize("raw", [raw for raw, _ in HOSTILE])
@pytest.mark.parametrize("context", CONTEXTS)
def test_escaped_text_reads_back_as_itself(raw, context):
    shape, prefix = CONTEXTS[context]
    table = context == "table cell"
    tokens = MARKDOWN.parse(shape.format(render.md(raw, table=table)))
    assert [t.type for t in tokens] == [t.type for t in MARKDOWN.parse(shape.format("x"))]
    inline = [t for t in tokens if t.type == "inline"][2 if table else 0]
    assert {c.type for c in inline.children or []} <= {"text", "code_inline"}
    assert plain(inline) == prefix + view.one_line(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("rocket/__init__.py", "`rocket/__init__.py`"),
        ("a`b", "``a`b``"),
        ("`x", "`` `x ``"),
        ("a``b`", "``` a``b` ```"),
        ("a\nb", "`a b`"),
        ("", ""),
    ],
)
def test_code_shows_its_text_exactly(raw, expected):
    assert render.code(raw) == expected
    if raw:
        table = render.code(raw + "|x", table=True)
        for doc, shown in ((render.code(raw), raw), (TABLE.format(table), raw + "|x")):
            cell = [t for t in MARKDOWN.parse(doc) if t.type == "inline"][-1]
            spans = [(c.type, c.content) for c in cell.children or []]
            assert spans == [("code_inline", view.one_line(shown))], doc


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("见 #12、#3", "见 [#12](u/12)、[#3](u/3)"),
        ("#12 开头", "[#12](u/12) 开头"),  # a link, not a heading
        ("x#12, a/#12, &#12;, ##12 and `#12`", "x#12, a/#12, &amp;#12;, ##12 and `#12`"),
        ("*#12*", "\\*[#12](u/12)\\*"),
        ("#12345678901234567890", "[#12345678901234567890](u/12345678901234567890)"),
    ],
)
def test_md_links_the_prs_prose_cites(raw, expected):
    assert render.md(raw, pr_url=lambda n: f"u/{n}") == expected


def test_prs_cited_in_markdown_link_to_the_digested_repository():
    text = render.weekly_markdown(report())
    hrefs = {
        t.attrs["href"]
        for token in MARKDOWN.parse(text)
        for t in token.children or []
        if t.type == "link_open"
    }
    assert len(hrefs) == 6 and all(
        h.startswith("https://github.com/acme/rocket/pull/") for h in hrefs
    )
    # No #N is left bare, in prose or tables, for a host to autolink to another repository.
    assert re.findall(r"(?<!\[)#\d+", text) == []


def test_paragraphs_split_at_blank_lines_and_separators():
    text = "一\n二\r\n\r\n三\u2029四\u2028五\n \n\n"
    assert view.paragraphs(text) == ["一 二", "三", "四 五"]
    assert view.paragraphs("") == []


def inline_texts(text: str) -> list[str]:
    return [plain(t) for t in MARKDOWN.parse(text) if t.type == "inline"]


def test_model_text_stays_in_its_place_in_a_digest():
    text = render.digest_markdown(injected_digest(INJECT, INJECT))
    benign = "\n\n".join("x" for _ in view.paragraphs(INJECT))
    assert shape(text) == shape(render.digest_markdown(injected_digest("x", benign)))
    texts = inline_texts(text)
    assert texts[0] == f"#101 {INJECTED}"
    assert texts[1].startswith(f"原标题：{INJECTED} · @lin-yue")
    assert texts[2].endswith(f"/10：{INJECTED}")
    assert texts[3:6] == view.paragraphs(INJECT)
    assert texts.count(INJECTED) == 3  # a design decision, a risk, a follow-up


def test_model_text_stays_in_its_place_in_a_weekly_report():
    hostile = hostile_narrative_report()
    text = render.weekly_markdown(hostile)
    # The injected risk cites no PR, so #106's computed risk gets its own line in both.
    n = report().narrative
    assert n is not None
    uncited = n.model_copy(update={"risks": [Risk(text="一条不引用 PR 的风险。"), *n.risks[1:]]})
    baseline = report().model_copy(update={"narrative": uncited})
    assert shape(text) == shape(render.weekly_markdown(baseline))
    texts = inline_texts(text)
    # the lead, a highlight, a risk, a key change, a follow-up, a trend row, three key-PR
    # cells, a title; the top shows the risk in short
    assert texts.count(INJECTED) == 11
    assert short_risk(Risk(text=INJECT)) in texts  # its first sentence, whole, never cut
    assert any(t.endswith(f"。{INJECTED}") for t in texts)  # the summary after the figures


def test_the_readme_example_is_the_golden_digest() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    start = readme.index("> ### [#101]")
    block = readme[start : readme.index("\n\n", readme.index("<sub>", start))]
    quoted = "\n".join(ln[2:] if ln.startswith("> ") else ln[1:] for ln in block.split("\n"))
    golden = (Path(__file__).parents[2] / "fixtures" / "golden" / "digest-101.md").read_text()
    assert quoted.strip() == golden.strip()


# The weekly's shape: lead, ranked key PRs, revert pairs, no empty sections, no crowned tie


def test_the_lead_sits_between_the_title_and_the_meta_line():
    lines = render.weekly_markdown(report()).split("\n")
    assert lines[0].startswith("# rocket 仓库周报")
    assert lines[2] == report().narrative.lead  # type: ignore[union-attr]
    assert lines[4].startswith("仓库：acme/rocket")


def test_a_missing_lead_is_computed_never_an_empty_paragraph():
    lines = render.weekly_markdown(sparse_report()).split("\n")
    assert lines[2] == LEAD
    assert lines[3] == "" and lines[4].startswith("仓库：")


def test_key_prs_are_ranked_by_importance_highest_first():
    text = render.weekly_markdown(sparse_report())  # its facts list the key PRs by number
    table = text.split("速览")[1].split("###")[0]
    assert [int(n) for n in re.findall(r"^\| \[#(\d+)\]", table, re.MULTILINE)] == [
        102,
        106,
        103,
        101,
    ]


def test_a_revert_shares_its_row_with_the_pr_it_reverts():
    text = render.weekly_markdown(revert_report())
    table = text.split("速览")[1].split("###")[0]
    assert (
        "| [#103](https://github.com/acme/rocket/pull/103)/"
        "[#104](https://github.com/acme/rocket/pull/104) | KV cache 重置 | 6.8 |"
    ) in table
    assert table.count("#103") == 1 and table.count("#104](") == 1


def test_empty_sections_are_left_out_and_the_rest_numbered_in_order():
    text = render.weekly_markdown(sparse_report())
    assert "模块与主题趋势" not in text and "| 主题 |" not in text
    assert "本周重点变化" not in text
    headings = re.findall(r"^### (\d)\. (.+)$", text, re.MULTILINE)
    assert headings == [
        ("1", "执行摘要"),
        ("2", "风险观察"),
        ("3", "重点 PR 速览"),
        ("4", "后续建议"),
    ]


def test_a_tie_is_not_called_the_most_productive():
    text = render.weekly_markdown(sparse_report())
    assert "最多产" not in text
    assert "作者 5 人，marta-kowal、lin-yue 并列最多，各贡献 2 个（各 33%）。" in text
    assert "作者集中度" not in text  # a tie: no author stands out


def test_author_concentration_is_the_last_highlight():
    r = report()
    standout = AuthorCount(author="marta-kowal", prs=[102, 104, 106])
    facts = r.facts.model_copy(update={"authors": [standout], "top_author_share": 0.5})
    text = unlinked(render.weekly_markdown(r.model_copy(update={"facts": facts})))
    highlights = text.split("## 本周亮点")[1].split("##")[0]
    assert highlights.strip().split("\n")[-1] == (
        "- 作者集中度较高：marta-kowal 本周贡献 3 个 PR（50%：#102、#104、#106），"
        "单点知识风险需要关注。"
    )
    assert "作者集中度" not in render.weekly_markdown(r)  # 2 of 6 PRs: no one stands out


def test_the_facts_join_the_models_risks_by_pr_never_a_second_copy():
    text = unlinked(render.weekly_markdown(report()))  # the model's risks cite #106 and #103
    full = text.split("### 4. 风险观察")[1].split("###")[0]
    risks = report().narrative.risks  # type: ignore[union-attr]
    assert full.strip().split("\n") == [f"- {render.md(x.text)}" for x in risks]
    assert "破坏性变更：#106" not in text and "改了代码但未改测试的 PR" not in text
    bare = report().model_copy(
        update={"narrative": report().narrative.model_copy(update={"risks": []})}  # type: ignore[union-attr]
    )
    top = unlinked(render.weekly_markdown(bare)).split("## 风险观察")[1].split("##")[0]
    assert top.strip().split("\n") == [
        "- #106 可能破坏现有用法。",
        "- #103、#106 改了代码但没有改测试。",
    ]
    full = unlinked(render.weekly_markdown(bare)).split("### 4. 风险观察")[1].split("###")[0]
    assert full.strip().split("\n") == [
        "- #103 改了代码但没有改测试。",
        "- #106 可能破坏现有用法：标题标注 \\[BREAKING]，配置项改名 trainer.total_epochs → "
        "trainer.max_epochs（rocket/config/ppo.yaml）；改了代码但没有改测试。",
    ]


def test_no_generated_time_leaves_it_out_of_the_meta_line():
    assert "生成于" not in render.weekly_markdown(sparse_report())
    assert "· 生成于 2026-08-03 09:02" in render.weekly_markdown(report())


# Invisible controls that reorder or hide text (Trojan Source) never reach a reader raw


def test_bidi_and_zero_width_controls_are_shown_not_obeyed_in_markdown():
    r = hostile_narrative_report()
    r = r.model_copy(
        update={
            "digests": [
                r.digests[0].model_copy(
                    update={
                        "original_title": SPOOFED,
                        "content": r.digests[0].content.model_copy(update={"title": SPOOFED}),
                    }
                ),
                *r.digests[1:],
            ]
        }
    )
    texts = [
        render.digest_markdown(injected_digest(SPOOFED, SPOOFED)),
        render.weekly_markdown(r),
    ]
    for text in texts:
        assert not any(c in text for c in HIDDEN)
        assert "‹U+202E›" in text and "‹U+FEFF›" in text and "gnp.exe" in text
    assert render.code(SPOOFED).count("‹U+") == len(HIDDEN)


def test_a_pr_without_an_http_url_links_next_to_the_others_of_its_week():
    r = report()
    ghe = [
        d.model_copy(update={"url": f"https://ghe.example.com/acme/rocket/pull/{d.number}"})
        for d in r.digests
    ]
    ghe[0] = ghe[0].model_copy(update={"url": "javascript:alert(1)"})
    text = render.weekly_markdown(r.model_copy(update={"digests": ghe}))
    assert "javascript:" not in text and "github.com" not in text
    assert "| [#101](https://ghe.example.com/acme/rocket/pull/101) |" in text


# Rendering loads neither SDK: a site or a CI job can render stored reports without them.


@pytest.mark.parametrize(
    "module",
    ["prhub.publish.render", "prhub.publish.view", "prhub.publish.html", "prhub.publish.output"],
)
def test_rendering_imports_neither_pygithub_nor_openai(module):
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [line.split("|") for line in done.stderr.splitlines()]
    loaded = {line[-1].strip() for line in lines if line[0].startswith("import time:")}
    assert module in loaded
    assert not loaded & {"github", "openai", "requests"}, sorted(loaded & {"github", "openai"})
