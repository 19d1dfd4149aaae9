"""The short form of a week that its discussion and chat message say, and its Markdown."""

from __future__ import annotations

from prhub.config import Settings
from prhub.model import FailedPR
from prhub.publish.brief import RISKS, SHORT, brief_of, linked, markdown, pieces, short
from prhub.weekly.prose import fact_risks
from tests.factories import MARKDOWN, no_narrative_report, report

PAGE = "https://acme.github.io/site/{repo}/{week}.html"


def test_a_week_in_short_takes_the_reports_texts():
    r = report()
    assert r.narrative is not None
    b = brief_of(r, Settings(report_url=PAGE), "https://github.com/acme/rocket/discussions/7")
    assert b.title == "rocket 仓库周报｜2026 年第 31 周（07-27 至 08-02）"
    assert b.lead == r.narrative.lead
    assert b.highlights[: len(r.narrative.highlights)] == tuple(r.narrative.highlights)
    assert len(b.risks) == min(RISKS, len(r.narrative.risks))
    assert all(len(risk) <= SHORT for risk in b.risks)
    assert b.report == "https://acme.github.io/site/acme/rocket/2026-W31.html"
    assert b.discussion.endswith("/discussions/7") and b.missing == ""
    assert b.figures == "acme/rocket · 2026-07-27 至 2026-08-02 · 来源 PR 6 · 重点 PR 4"


def test_a_week_without_narrative_says_its_computed_lead_and_risks():
    r = no_narrative_report()
    b = brief_of(r, Settings())
    assert b.lead.startswith("本周 rocket 共合入 6 个 PR")
    assert b.risks == tuple(short(x) for x in fact_risks(r.facts)[:RISKS])
    assert b.report == ""  # no page known: no link
    assert b.missing == "本周 6 个 PR 中有 1 个未能生成导读。"


def test_a_window_of_dates_or_another_timezone_names_its_report_as_its_file():
    r = report()
    facts = r.facts.model_copy(update={"week": None, "tz": "UTC"})
    b = brief_of(
        r.model_copy(update={"facts": facts}), Settings(report_url="https://x.io/{name}/{week}")
    )
    assert b.report.startswith("https://x.io/rocket/2026-07-2") and b.report.endswith(".UTC")


def test_a_risk_in_short_is_its_first_sentence_within_the_limit():
    assert short("回滚了 #12。其余无碍。") == "回滚了 #12。"
    long = "改动" * 50 + "。"
    assert short(long) == "改动" * 29 + "改…" and len(short(long)) == SHORT
    assert short("第一行\n第二行") == "第一行 第二行"  # one line, as the report prints it


def test_pieces_cut_at_pr_references_outside_code():
    assert pieces("修复 #12 与 `a#3`，见 #4") == ["修复 ", 12, " 与 `a#3`，见 ", 4]
    assert pieces("issue#5 and https://x/#6 and &#7;") == ["issue#5 and https://x/#6 and &#7;"]
    assert linked("见 #4。", lambda n: f"<{n}>") == "见 <4>。"


def test_markdown_keeps_the_reports_text_inert_and_links_its_prs():
    r = report()
    b = brief_of(r, Settings(report_url=PAGE))
    b = b.__class__(**{**b.__dict__, "lead": "**粗** [链](javascript:x) #101 `#102`"})
    text = markdown(b)
    assert text.startswith("\\*\\*粗\\*\\* \\[链](javascript:x) [#101](")
    assert "`#102`" in text  # a code span stays as it is
    links = [t for t in MARKDOWN.parseInline(text) if t.type == "inline"][0].children or []
    hrefs = [t.attrGet("href") for t in links if t.type == "link_open"]
    assert all(str(h).startswith("https://") for h in hrefs), hrefs
    assert "[阅读完整周报](https://acme.github.io/site/acme/rocket/2026-W31.html)" in text


def test_markdown_within_a_size_drops_the_last_items_first():
    r = report().model_copy(update={"failed": [FailedPR(number=107, error="超时")]})
    b = brief_of(r, Settings(report_url=PAGE))
    whole = markdown(b)
    small = markdown(b, limit=len(whole.encode()) - 1)
    items = [line for line in whole.splitlines() if line.startswith("- ")]
    kept = [line for line in small.splitlines() if line.startswith("- ")]
    assert kept == items[:-1]  # the last risk gave way, nothing else
    assert "阅读完整周报" in small and "<sub>" in small and "1 个未能生成导读" in small
    tiny = markdown(b, limit=10)  # nothing left to drop: the lead and links stay
    assert "本周亮点" not in tiny and "风险观察" not in tiny and "阅读完整周报" in tiny
