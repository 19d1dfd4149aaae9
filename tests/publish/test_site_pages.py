"""What the site's pages show: the latest week with PRs as the headline, one entry per ISO week
with its time zones inside, a page per tag under a name that never changes, a failed digest
with what it has, the whole text of each digest in search, a feed in plain text with absolute
links; and a rebuild that renders only the pages whose inputs changed."""

from __future__ import annotations

import json
import re
from contextlib import closing
from pathlib import Path
from xml.etree import ElementTree

from prhub.config import Settings
from prhub.publish import pages, search, site
from prhub.publish.search import excerpt, found
from prhub.store.store import Store
from tests.factories import Links, crawl, digest, report, site_store

ROCKET = Path("acme") / "rocket"


def build(store: Path, out: Path, **settings: str) -> site.SiteResult:
    with closing(Store(store)) as s:
        return site.build(Settings(**settings), s, out, None, False)


def built(tmp_path: Path) -> tuple[Path, Path]:
    store = site_store(tmp_path / "store.db")
    out = tmp_path / "site"
    build(store, out)
    return store, out


def test_the_headline_is_the_latest_week_with_prs_and_each_iso_week_is_one_entry(tmp_path):
    _, out = built(tmp_path)
    home = (out / "index.html").read_text()
    latest = re.search(r"最新一期（有 PR 的最近一期）：<a href=\"([^\"]+)\"", home)
    assert latest and latest.group(1) == "acme/rocket/2026-W31.html"  # not the empty week 32
    repo = (out / ROCKET / "index.html").read_text()
    weeks = repo.split('<ol class="weeks">')[1].split("</ol>")[0]
    entries = re.findall(r'<li><a href="([^"]+\.html)">', weeks)
    assert entries == ["2026-W32.html", "2026-W31.html", "2026-07-29_2026-08-02.html"]
    w31 = repo[repo.index('<li><a href="2026-W31.html">') :].split("</li>")[0]
    assert '其他时区：<a href="2026-W31.UTC.html">UTC</a>' in w31
    utc = Links((out / ROCKET / "2026-W31.UTC.html").read_text())
    assert "2026-W32.html" in utc.hrefs  # the weeks around its entry
    assert {p: bad for p, bad in crawl(out).items() if bad} == {}


def test_every_tag_links_to_its_own_page_whose_name_holds_no_count(tmp_path):
    store, out = built(tmp_path)
    d = report().digests[0]
    page = Links((out / ROCKET / "pr" / f"{d.number}.html").read_text())
    tagged = [h for h in page.hrefs if h.startswith("../tags/")]
    assert tagged == [f"../{pages.tag_file(t)}" for t in d.tags]
    for href in tagged:
        assert (out / ROCKET / "pr" / href).resolve().is_file()
        assert not re.search(r"\d", href), href  # no count: the same name every week
    tag = d.tags[0]
    before = (out / ROCKET / pages.tag_file(tag)).read_text()
    with closing(Store(store)) as s:
        more = digest(title="又一个同标签的改动，修复采样")
        s.save_digest(
            more.model_copy(
                update={
                    "number": 140,
                    "url": "https://github.com/acme/rocket/pull/140",
                    "modules": [tag],
                    "meta": more.meta.model_copy(update={"cache_key": "more-140"}),
                }
            )
        )
    build(store, out)
    after = (out / ROCKET / pages.tag_file(tag)).read_text()
    assert "#140" in after and "#140" not in before
    page = (out / ROCKET / "tags.html").read_text()
    assert pages.tag_file(tag) in Links(page).hrefs
    # The index of tags is the labels view's body: by what each tag names, with its count.
    assert "<h2>模块</h2>" in page and f'<code class="tag">{tag}</code></a>（4）' in page
    assert pages.tag_file("area/rollout") != pages.tag_file("area-rollout")


def test_a_failed_digest_without_a_body_shows_what_it_has_under_its_marker(tmp_path):
    _, out = built(tmp_path)
    page = (out / ROCKET / "pr" / "120.html").read_text()
    notice = page.index('class="notice"')
    assert "⚠ 这篇导读未通过检查" in page[notice:]
    assert "/10：" not in page and "重要性 <strong>2.3</strong>/10</p>" in page
    assert page.index('class="bare"') > notice
    assert "这篇导读没有正文" in page


def test_search_finds_each_digests_whole_text_and_shows_its_opening_as_plain_text(tmp_path):
    _, out = built(tmp_path)
    docs = []
    for chunk in sorted((out / "search.index" / "d").glob("*.js")):
        body = re.match(r"prhubSearch\.docs\(\d+,(.*)\);\s*$", chunk.read_text(), re.S)
        assert body
        docs += json.loads(body.group(1))
    d = report().digests[0]
    page = f"acme/rocket/pr/{d.number}.html"
    # A word of its risks, of its follow-ups, of a design decision: each finds it.
    for word in ("top_p", "GRPO 评估路径", "MIN_TEMPERATURE"):
        assert page in found(out, word), word
    # A result shows the opening of each part: the advice's, then each decision's, risk's...
    mine = next(x for x in docs if x["u"] == page)
    c = d.content
    parts = [c.advice, *c.design_decisions, *c.risks, *c.follow_ups]
    opened = [excerpt(search.plain(t), search.PART) for t in parts]
    opened[0] = excerpt(search.plain(c.advice), search.FIRST)
    assert mine["x"] == " ".join(opened) and "…" in mine["x"]
    assert len(mine["x"]) < len(search.plain(c.advice)) + 100
    assert all("`" not in x["t"] + x["x"] for x in docs)
    assert len(docs) == 7 + 4  # the digests and the reports


def test_the_feed_is_plain_text_and_links_absolutely_where_the_sites_address_is_known(tmp_path):
    store = site_store(tmp_path / "store.db")
    out = tmp_path / "site"
    build(store, out, report_url="https://docs.example.org/prhub/{repo}/{week}.html")
    feed = ElementTree.parse(out / ROCKET / "feed.xml").getroot()
    ns = {"a": "http://www.w3.org/2005/Atom"}
    hrefs = [link.get("href") or "" for link in feed.iter(f"{{{ns['a']}}}link")]
    assert hrefs and all(h.startswith("https://") for h in hrefs)
    assert "https://docs.example.org/prhub/acme/rocket/2026-W31.html" in hrefs
    assert "https://docs.example.org/prhub/acme/rocket/pr/101.html" in hrefs
    summaries = [s.text or "" for s in feed.iter(f"{{{ns['a']}}}summary")]
    assert summaries and all("`" not in s and "**" not in s for s in summaries)


def test_a_rebuild_renders_only_the_pages_whose_inputs_changed(tmp_path, monkeypatch):
    store, out = built(tmp_path)
    rendered: list[str] = []
    real = pages.Pages._page

    def counted(self: pages.Pages, template: str, v: object, **values: object) -> str:
        rendered.append(template)
        return real(self, template, v, **values)

    monkeypatch.setattr(pages.Pages, "_page", counted)
    again = build(store, out)
    assert rendered == [] and again.wrote == 0
    with closing(Store(store)) as s:
        d = digest(title="一个新合入的改动，修复采样")
        s.save_digest(
            d.model_copy(
                update={
                    "number": 150,
                    "url": "https://github.com/acme/rocket/pull/150",
                    "meta": d.meta.model_copy(update={"cache_key": "new-150"}),
                }
            )
        )
    changed = build(store, out)
    # Its page, its month, its tags' pages and the index of tags, the repository's page, the
    # search page; no week page, no other digest's page.
    assert "week.html" not in rendered and rendered.count("pr.html") == 1
    assert set(rendered) <= {
        "pr.html",
        "month.html",
        "tag.html",
        "tags.html",
        "repo.html",
        "search.html",
        "home.html",
    }
    assert changed.wrote < 20


def test_a_site_near_github_pages_limit_says_so(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(site, "PAGES_LIMIT", 1000)
    result = built(tmp_path)
    assert "near GitHub Pages' 1 GB: publish a site per repository" in caplog.text
    assert result
