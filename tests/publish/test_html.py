"""HTML pages: the Markdown's content in its order, inert PR text, nothing external; in Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest
from markupsafe import escape

from prhub.model import BreakingChange, FailedPR, PRDigest, Revert, Risk, WeeklyReport
from prhub.publish import html, render, view
from prhub.publish.labels import view as labels_view
from tests.factories import (
    INJECT,
    INJECTED,
    MARKDOWN,
    check_golden,
    digest,
    empty_report,
    hostile_narrative_report,
    injected_digest,
    no_narrative_report,
    plain,
    report,
    revert_report,
    sparse_report,
    unchecked_report,
    unlinked,
)

EVIL = "<script>alert(1)</script> <img src=x onerror=alert(1)> a | b `x<y>&z` stray ` tick & c"
EVIL_TEXT = EVIL.replace("`x<y>&z`", "x<y>&z")  # as a reader sees it
EVIL_TAG = '<img src=x onerror=alert(1)> "good first" & co'
WEEKLY_HEADINGS = [
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


def hostile_digest() -> PRDigest:
    d = digest()
    content = d.content.model_copy(
        update={
            "title": EVIL,
            "advice": EVIL + "\n\n第二段。",
            "importance_reason": EVIL,
            "risks": [EVIL],
            "design_decisions": [EVIL],
        }
    )
    return d.model_copy(
        update={
            "original_title": EVIL,
            "labels": [EVIL_TAG],
            "content": content,
        }
    )


def hostile_report() -> WeeklyReport:
    r = report()
    assert r.narrative is not None
    n = r.narrative
    trends = [n.trends[0].model_copy(update={"theme": EVIL, "judgement": EVIL}), *n.trends[1:]]
    key_prs = [n.key_prs[0].model_copy(update={"topic": EVIL, "note": EVIL}), *n.key_prs[1:]]
    narrative = n.model_copy(
        update={
            "summary": EVIL,
            "highlights": [*n.highlights, EVIL],
            "risks": [Risk(headline=EVIL, text=EVIL)],
            "key_changes": [EVIL],
            "follow_ups": [EVIL],
            "trends": trends,
            "key_prs": key_prs,
        }
    )
    reverts = [Revert(number=105), Revert(number=106, reverted=101, delay_hours=5.5)]
    tags = {**r.facts.tags, html_tag(): 1}
    facts = r.facts.model_copy(update={"tags": tags, "reverts": reverts})
    return r.model_copy(
        update={
            "facts": facts,
            "narrative": narrative,
            "digests": [hostile_digest(), *r.digests[1:]],
            "failed": [FailedPR(number=107, error=EVIL)],
        }
    )


def html_tag() -> str:
    return hostile_digest().tags[-1]


LONG_PATH = "rocket/trainer/" + "very_long_module_name/" * 6 + "and_a_really_long_file_name.py"
LONG_WORD = "https://example.com/" + "averyveryverylongpathsegment" * 6
LONG = f"长文本 `{LONG_PATH}` 与 {LONG_WORD} 以及 `trainer.{'nested_key.' * 12}max_epochs`"


def code_tag_report() -> WeeklyReport:
    """A week with a label that holds a code span and a PR reference, counted by the facts."""
    r = report()
    tag = "`x` #12 a_b"
    digests = [r.digests[0].model_copy(update={"labels": [tag]}), *r.digests[1:]]
    facts = r.facts.model_copy(update={"tags": {tag: 3, **r.facts.tags}})
    return r.model_copy(update={"digests": digests, "facts": facts})


def long_report() -> WeeklyReport:
    """A week whose cells, code spans and fact lists are far longer than a phone is wide."""
    r = hostile_report()
    assert r.narrative is not None
    n = r.narrative
    trends = [t.model_copy(update={"prs": r.facts.prs * 3, "judgement": LONG}) for t in n.trends]
    key_prs = [k.model_copy(update={"note": LONG}) for k in n.key_prs]
    narrative = n.model_copy(update={"highlights": [LONG, *n.highlights], "trends": trends})
    narrative = narrative.model_copy(update={"key_prs": key_prs})
    facts = r.facts.model_copy(
        update={
            "breaking": [
                BreakingChange(number=106, reasons=[f"删除 {LONG_PATH} 第 {i} 项"])
                for i in range(12)
            ],
            "reverts": [Revert(number=105, reverted=101, delay_hours=i) for i in range(7)],
            "untested": r.facts.prs * 4,
            "hot_files": [h.model_copy(update={"path": LONG_PATH}) for h in r.facts.hot_files],
            "tags": {**r.facts.tags, "area/" + "long-label-name-" * 5: 1},
        }
    )
    digests = [
        d.model_copy(update={"content": d.content.model_copy(update={"title": LONG})})
        for d in r.digests
    ]
    failed = [FailedPR(number=107 + i, error=LONG) for i in range(6)]
    return r.model_copy(
        update={"facts": facts, "narrative": narrative, "digests": digests, "failed": failed}
    )


def long_digest() -> PRDigest:
    d = hostile_digest()
    c = d.content
    content = c.model_copy(
        update={"title": LONG, "advice": LONG * 3, "design_decisions": [LONG] * 3}
    )
    return d.model_copy(update={"original_title": LONG_WORD, "content": content})


class Page(HTMLParser):
    """A page as a reader sees it: block texts in order, visible text, tags, links, scripts."""

    VOID = {"meta", "link", "br", "img", "input", "hr", "wbr", "source"}
    BLOCKS = {"h1", "h2", "h3", "p", "li", "tr", "footer"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.visible: list[str] = []
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.rows: dict[int, bool] = {}  # data-pr -> visible
        self._stack: list[tuple[str, bool]] = []  # tag, hidden
        self._block: list[str] | None = None
        self._cells = 0
        self.feed(text)
        self.close()

    @property
    def hidden(self) -> bool:
        return any(h for _, h in self._stack)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.elements.append((tag, a))
        hidden = "hidden" in a or tag in {"head", "script", "style", "title"}
        if tag == "tr" and "data-pr" in a:
            self.rows[int(a["data-pr"] or 0)] = not (hidden or self.hidden)
        if tag in self.BLOCKS:
            self._block, self._cells = [], 0
        if tag in {"td", "th"} and self._block is not None:
            self._block.append(" | " if self._cells else "")
            self._cells += 1
        if tag not in self.VOID:
            self._stack.append((tag, hidden))

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop()[0] == tag:
                break
        if tag in self.BLOCKS and self._block is not None:
            self.blocks.append(" ".join("".join(self._block).split()))
            self._block = None

    def handle_data(self, data: str) -> None:
        if self._stack and self._stack[-1][0] == "script":
            self.scripts.append(data)
        if self._block is not None:
            self._block.append(data)
        if not self.hidden:
            self.visible.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.visible).split())


def md_blocks(text: str) -> list[str]:
    """The Markdown's blocks as plain text, as a CommonMark reader sees them, in order."""
    blocks: list[str] = []
    row: list[str] | None = None
    for token in MARKDOWN.parse(text):
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close" and row is not None:
            blocks.append(" | ".join(row))
            row = None
        elif token.type == "inline":
            (blocks if row is None else row).append(plain(token, ticks=False))
    return [" ".join(b.split()) for b in blocks]


@pytest.mark.parametrize(
    "make",
    [
        report,
        no_narrative_report,
        empty_report,
        hostile_report,
        hostile_narrative_report,
        long_report,
        sparse_report,
        revert_report,
        code_tag_report,
        unchecked_report,
    ],
    ids=lambda f: f.__name__,
)
def test_weekly_page_mirrors_the_markdown(make):
    r = make()
    assert Page(html.weekly_html(r)).blocks == md_blocks(render.weekly_markdown(r))


@pytest.mark.parametrize(
    "make",
    [digest, hostile_digest, lambda: injected_digest(INJECT, INJECT), long_digest],
    ids=["plain", "hostile", "injected", "long"],
)
def test_digest_page_mirrors_the_markdown(make):
    d = make()
    meta = d.meta.model_copy(update={"redactions": {"github_token": 2}, "dropped_citations": 1})
    d = d.model_copy(update={"meta": meta})
    assert Page(html.digest_html(d, "UTC")).blocks == md_blocks(render.digest_markdown(d, "UTC"))


def test_weekly_page_has_title_sections_and_every_pr():
    r = report()
    page = html.weekly_html(r)
    parsed = Page(page)
    assert f"<title>{view.weekly_title(r)}</title>" in page
    assert [b for b in parsed.blocks if b in WEEKLY_HEADINGS] == WEEKLY_HEADINGS
    for number in r.facts.prs:
        assert f'href="https://github.com/acme/rocket/pull/{number}">#{number}</a>' in page
    assert sorted(parsed.rows) == r.facts.prs
    assert '<tr data-pr="106" data-tags="trainer refactor breaking">' in page
    chips = [a["data-tag"] for tag, a in parsed.elements if tag == "button"]
    assert chips == ["", *r.facts.tags]


def test_digest_page_shows_the_digest():
    page = html.digest_html(digest())
    assert (
        "<title>#101 采样温度为 0 时改走 argmax，修复贪心评估的 NaN 崩溃 · acme/rocket</title>"
        in page
    )
    assert '<h1><a href="https://github.com/acme/rocket/pull/101">#101</a> ' in page
    for heading in ("值得关注的设计决策", "风险", "后续跟进"):
        assert f"<h2>{heading}</h2>" in page
    assert "<code>MIN_<wbr>TEMPERATURE</code>" in page  # it may break after its _ alone
    assert "合并于 2026-07-27 11:12" in page


def test_empty_week_page_is_short():
    page = html.weekly_html(empty_report())
    assert "本周没有合入任何 PR。" in page
    assert "<table" not in page and "本周亮点" not in page and "<button" not in page


@pytest.mark.parametrize(
    "page",
    [lambda: html.weekly_html(hostile_report()), lambda: html.digest_html(hostile_digest())],
    ids=["weekly", "digest"],
)
def test_pr_and_model_text_stays_text(page):
    text = page()
    parsed = Page(text)
    assert "<script>alert" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "<code>x&lt;y&gt;&amp;z</code> stray ` tick &amp; c" in text
    allowed = {"html", "head", "meta", "title", "style", "script", "body", "main", "header"}
    allowed |= {"article", "section", "footer", "h1", "h2", "h3", "p", "ul", "ol", "li", "a"}
    allowed |= {"div", "table", "thead", "tbody", "tr", "th", "td", "code", "span", "strong"}
    allowed |= {"button", "wbr", "h4"}
    assert {tag for tag, _ in parsed.elements} <= allowed
    assert not [name for _, a in parsed.elements for name in a if name.startswith("on")]
    assert len(parsed.scripts) == 1
    assert EVIL_TEXT in parsed.text


BREAKS = "[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]"


def one_line_elements(page: str) -> list[str]:
    """The text of every title, heading, list item and cell, as written in the page."""
    return re.findall(r"<(title|h1|h2|h3|li|td)\b[^>]*>(.*?)</\1>", page, re.DOTALL)


def test_model_text_stays_in_its_place_in_pages():
    page = html.digest_html(injected_digest(INJECT, INJECT))
    parsed = Page(page)
    assert f"<title>#101 {escape(INJECTED)} · acme/rocket</title>" in page
    assert parsed.blocks[0] == f"#101 {INJECTED}"
    assert parsed.blocks.count(INJECTED) == 3  # a design decision, a risk, a follow-up
    weekly = html.weekly_html(hostile_narrative_report())
    for text in (page, weekly):
        broken = [inner for _, inner in one_line_elements(text) if re.search(BREAKS, inner)]
        assert broken == []
        assert "<b>" not in text and "<table" not in text.split("<h2>", 1)[0]
    rows = [b for b in Page(weekly).blocks if INJECTED in b]
    assert f"#102 | {INJECTED} | 8.2 | {INJECTED}" in rows  # the key-PR table
    assert INJECTED in rows  # the bullets


def test_long_fact_lists_are_collapsed_after_five_with_a_count():
    r = long_report()  # flags #101..#106 (untested), #105 (7 reverts) and #106 (12 reasons)
    flagged = [200 + i for i in range(6)]
    r = r.model_copy(
        update={"facts": r.facts.model_copy(update={"untested": r.facts.untested + flagged})}
    )
    cited = {101, 102, 103, 104, 105, 106} & {
        int(x)
        for t in r.narrative.risks  # type: ignore[union-attr]
        for x in re.findall(r"#(\d+)", t.text)
    }
    page = html.weekly_html(r)
    details = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", page, re.DOTALL)
    added = 12 - len(cited)  # one line per flagged PR the model's risks do not cite
    assert [summary for summary, _ in details] == [
        f"另有 {added - 5} 项由数据标出的风险（共 {added} 项）",
    ]
    assert all(f'">#{x.number}</a>' in page.split("未能生成导读的 PR</h2>")[1] for x in r.failed)
    assert page.count("可能破坏现有用法：") == (106 not in cited)
    text = unlinked(render.weekly_markdown(r))
    assert "<details>" not in text  # Markdown lists them all
    assert all(f"- #{n} 改了代码但没有改测试。" in text for n in flagged)


def test_hostile_tag_is_quoted_in_rows_and_chips():
    text = html.weekly_html(hostile_report())
    tag = html_tag()
    assert f'data-tags="rollout bugfix {quote(tag, safe="")}"' in text
    assert f'data-tag="{escape(tag)}"' in text


@pytest.mark.parametrize(
    "page", [lambda: html.weekly_html(report()), lambda: html.digest_html(digest())]
)
def test_page_loads_nothing_from_outside(page):
    text = page()
    parsed = Page(text)
    links = [a.get("href") for tag, a in parsed.elements if tag == "a"]
    assert links and all(
        re.fullmatch(r"https://github\.com/acme/rocket/pull/\d+", h or "") for h in links
    )
    assert not [a for _, a in parsed.elements if "src" in a or "srcset" in a]
    assert "<link" not in text and "@import" not in text and "url(" not in text
    assert "default-src 'none'" in text
    assert '<html lang="zh-CN">' in text and '<meta charset="utf-8">' in text
    assert '<meta name="viewport"' in text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a `<b>` & c", "a <code>&lt;b&gt;</code> &amp; c"),
        ("见 #12、#3", '见 <a href="u/12">#12</a>、<a href="u/3">#3</a>'),
        ("x#12 and `#12`", "x#12 and <code>#12</code>"),
        ("stray ` tick", "stray ` tick"),
        ("&#12;", "&amp;#12;"),
    ],
)
def test_inline_escapes_and_marks_up(raw, expected):
    assert html.inline(raw, lambda n: f"u/{n}") == expected


def test_a_pr_url_that_is_not_http_is_not_linked():
    page = html.digest_html(digest().model_copy(update={"url": "javascript:alert(1)"}))
    assert "javascript:" not in page
    assert '<h1><a href="https://github.com/acme/rocket/pull/101">#101</a>' in page


def test_links_follow_the_digests_host():
    d = digest().model_copy(update={"url": "https://ghe.example.com/acme/rocket/pull/101"})
    page = html.digest_html(d)
    assert 'href="https://ghe.example.com/acme/rocket/pull/102">#102</a>' in page


def test_digest_html_matches_golden():
    check_golden("digest-101.html", html.digest_html(digest()))


def test_weekly_html_matches_golden():
    check_golden("weekly-acme-rocket-2026-W31.html", html.weekly_html(report()))


CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium)"
)
# Chromium logs each console message as INFO:CONSOLE:<line>] (older builds: CONSOLE(<line>)).
CONSOLE = re.compile(r"CONSOLE[(:]\d+\)?\].*")


def chromium(tmp_path: Path, url: str, *args: str) -> tuple[str, list[str]]:
    """Chromium's output for a page and the console messages it logged."""
    assert CHROMIUM is not None
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp_path)
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, CONSOLE.findall(done.stderr) + re.findall(r".*Uncaught.*", done.stderr)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path.as_uri()


def errors_of(dom: str) -> str | None:
    return next((a.get("data-errors") for tag, a in Page(dom).elements if tag == "body"), None)


@needs_chromium
def test_weekly_page_runs_clean_and_filters_by_tag_in_chromium(tmp_path):
    r = report()
    url = write(tmp_path, "weekly.html", html.weekly_html(r))
    dom, console = chromium(tmp_path, url + "#tag=rollout", "--dump-dom")
    page = Page(dom)
    assert errors_of(dom) == "0" and console == []
    assert view.weekly_title(r) in page.text
    assert all(f"#{n}" in page.text for n in r.facts.prs)
    assert page.rows == {101: True, 102: False, 103: True, 104: False, 105: False, 106: False}
    assert "显示 2 / 6" in page.text
    pressed = [a["data-tag"] for t, a in page.elements if a.get("aria-pressed") == "true"]
    assert pressed == ["rollout"]


@needs_chromium
def test_hostile_pages_run_no_injected_code_in_chromium(tmp_path):
    url = write(tmp_path, "weekly.html", html.weekly_html(hostile_report()))
    dom, console = chromium(tmp_path, f"{url}#tag={quote(html_tag(), safe='')}", "--dump-dom")
    page = Page(dom)
    assert errors_of(dom) == "0" and console == []
    assert not [t for t, a in page.elements if t == "img" or any(n.startswith("on") for n in a)]
    assert EVIL_TEXT in page.text
    assert page.rows == {101: True, 102: False, 103: False, 104: False, 105: False, 106: False}
    dom, console = chromium(
        tmp_path, write(tmp_path, "d.html", html.digest_html(hostile_digest())), "--dump-dom"
    )
    assert errors_of(dom) == "0" and console == [] and EVIL_TEXT in Page(dom).text


@needs_chromium
def test_digest_page_runs_clean_in_chromium(tmp_path):
    d = digest()
    dom, console = chromium(tmp_path, write(tmp_path, "d.html", html.digest_html(d)), "--dump-dom")
    assert errors_of(dom) == "0" and console == []
    assert f"#101 {d.content.title}" in Page(dom).text


@needs_chromium
def test_markup_that_slipped_through_would_be_blocked_and_counted(tmp_path):
    page = html.weekly_html(report()).replace("<main>", "<main><img src=x onerror=alert(1)>")
    dom, console = chromium(tmp_path, write(tmp_path, "bad.html", page), "--dump-dom")
    assert errors_of(dom) not in (None, "0")
    assert any("Content Security Policy" in line for line in console)


# A frame as wide as the reader's window (Chromium's own windows are at least 500 px wide); once
# the page in it has loaded, the frame writes how wide the page is, the window's width and how
# many tables scroll sideways in their own box.
MEASURE = (
    "var d = this.contentDocument, wide = 0;"
    "d.querySelectorAll('.table-wrap').forEach(function (e) {"
    "  if (e.scrollWidth > e.clientWidth) wide++;"
    "});"
    # Tags broken inside a word: a tag of one word (letters and digits) on two lines, a chip
    # taller than the first. A tag such as transfer_queue may break after its `_`.
    "var broken = 0, chips = d.querySelectorAll('.chip');"
    "d.querySelectorAll('code.tag').forEach(function (e) {"
    "  if (/^[A-Za-z0-9]+$/.test(e.textContent) && e.getClientRects().length > 1) broken++;"
    "});"
    "chips.forEach(function (e) {"
    "  if (e.getBoundingClientRect().height > chips[0].getBoundingClientRect().height) broken++;"
    "});"
    "var seen = [d.documentElement.scrollWidth, this.contentWindow.innerWidth, wide, broken];"
    "document.body.setAttribute('data-width', seen.join(' '));"
)
FRAME = (
    '<!doctype html><body><iframe src="{src}" onload="{measure}"'
    ' style="border: 0; width: {width}px; height: 900px"></iframe></body>'
)


def tagged_report() -> WeeklyReport:
    """A week whose PRs carry many one-word tags, as a busy repository's do."""
    r = unchecked_report()
    words = ["megatron", "transfer_queue", "hardware", "rollout", "vllm", "checkpoint"]
    digests = [d.model_copy(update={"labels": [*d.labels, *words]}) for d in r.digests]
    tags = {**r.facts.tags, **dict.fromkeys(words, len(digests))}
    return r.model_copy(
        update={"digests": digests, "facts": r.facts.model_copy(update={"tags": tags})}
    )


PAGES = {
    "weekly": lambda: html.weekly_html(long_report()),
    "digest": lambda: html.digest_html(long_digest()),
    "tagged": lambda: html.weekly_html(tagged_report(), digest_link=lambda n: f"pr/{n}.html"),
    "labels": lambda: html.labels_html(labels_view(tagged_report())),
}


@needs_chromium
@pytest.mark.parametrize("width", [390, 1200])
@pytest.mark.parametrize("which", list(PAGES))
def test_long_text_wraps_without_scrolling_the_page_in_chromium(tmp_path, which, width):
    text = PAGES[which]()
    src = write(tmp_path, f"{which}.html", text)
    frame = write(tmp_path, "frame.html", FRAME.format(src=src, width=width, measure=MEASURE))
    dom, console = chromium(
        tmp_path, frame, "--dump-dom", "--allow-file-access-from-files", "--window-size=1300,1000"
    )
    body = next(a for tag, a in Page(dom).elements if tag == "body")
    scroll, inner, wide_tables, broken = map(int, (body.get("data-width") or "0 0 0 0").split())
    assert console == [] and inner == width
    assert scroll <= inner and wide_tables == 0 and broken == 0


@needs_chromium
@pytest.mark.parametrize("which", ["weekly", "digest"])
def test_screenshot_in_chromium(tmp_path, which):
    text = html.weekly_html(report()) if which == "weekly" else html.digest_html(digest())
    png = tmp_path / f"{which}.png"
    chromium(
        tmp_path,
        write(tmp_path, f"{which}.html", text),
        f"--screenshot={png}",
        "--window-size=1280,2400",
    )
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1280, 2400)
    assert len(data) > 30_000  # a blank page of this size is a few kilobytes


def test_weekly_page_opens_with_the_lead_and_pairs_a_revert_in_one_row():
    page = html.weekly_html(revert_report())
    lead = report().narrative.lead  # type: ignore[union-attr]
    assert f'</h1>\n<p class="lead">{lead}</p>\n<p class="meta">' in page
    assert (
        '<td class="nowrap"><a href="https://github.com/acme/rocket/pull/103">#103</a>/'
        '<a href="https://github.com/acme/rocket/pull/104">#104</a></td>'
    ) in page
    sparse = html.weekly_html(sparse_report())
    assert "模块与主题趋势" not in sparse and "<th>主题</th>" not in sparse
    assert "最多产" not in sparse and "生成于" not in sparse


def test_pr_rows_link_to_digests_without_a_link_inside_a_link():
    r = hostile_report()
    titled = r.digests[1].content.model_copy(update={"title": "修复 #12 的 `x<y>` 问题"})
    r = r.model_copy(
        update={
            "digests": [
                r.digests[0],
                r.digests[1].model_copy(update={"content": titled}),
                *r.digests[2:],
            ]
        }
    )
    to = {n: f"pr/{n} (a).html" for n in r.facts.prs}.get
    page = html.weekly_html(r, digest_link=to)
    assert '<a href="pr/102 (a).html">修复 #12 的 <code>x&lt;y&gt;</code> 问题</a>' in page
    assert Page(page).blocks == md_blocks(render.weekly_markdown(r, digest_link=to))
    assert "[修复 #12 的 `x<y>` 问题](pr/102%20%28a%29.html)" in render.weekly_markdown(
        r, digest_link=to
    )
    anchors = re.findall(r"<a [^>]*>(.*?)</a>", page)
    assert not any("<a " in a for a in anchors)


def test_a_partial_week_says_so_at_the_top_and_marks_failed_digests_in_every_format():
    r = unchecked_report()
    page, text = html.weekly_html(r), unlinked(render.weekly_markdown(r))
    notice = view.weekly_view(r).notice
    banner = (
        f'<p class="notice" role="note">{html.inline(notice, view.weekly_view(r).links.pr)}</p>'
    )
    assert banner in page and page.index(banner) < page.index("<h2>本周亮点</h2>")
    assert f"\n\n> {notice}\n\n## 本周亮点" in text
    why = "未通过检查：文档改动评分偏高、建议未点名文件"
    flag = f'<span class="flag" title="{why}">⚠ 未通过检查</span>'
    assert page.count(flag) == 2  # its key row and its row in the PR list
    d = r.digests[1]
    digest_page = html.digest_html(d)
    assert digest_page.index('<p class="notice"') < digest_page.index('class="badge')
    assert render.digest_markdown(d).count("> ⚠ 这篇导读未通过检查") == 1
    assert Page(digest_page).blocks == md_blocks(render.digest_markdown(d))


def test_bidi_and_zero_width_controls_are_shown_not_obeyed_in_html():
    from tests.factories import HIDDEN, SPOOFED

    d = injected_digest(SPOOFED, SPOOFED)
    r = report()
    r = r.model_copy(update={"digests": [d, *r.digests[1:]]})
    for page in (html.digest_html(d), html.weekly_html(r)):
        assert not any(c in page for c in HIDDEN)
        assert "‹U+202E›" in page and "gnp.exe" in page
