"""The site in headless Chromium at a desktop's and a phone's width: a week's page (its key-PR
table as cards on the phone), a tag's page, a failed digest and search. No identifier breaks
inside a word, nothing is wider than the window, every link resolves, and a search loads only
the parts of the index its words need, pages past the first results and shows plain text.
PRHUB_SITE_SHOTS=FOLDER keeps the screenshots there."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from prhub.config import Settings
from prhub.publish import site
from prhub.publish.pages import tag_file
from prhub.publish.search import PAGE, needed
from prhub.store.store import Store
from tests.factories import crawl, digest, report, site_store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROCKET = "acme/rocket"
LONG = "`verl/workers/rollout/sglang_rollout/async_sglang_server.py` 中 `AsyncSGLangServer.wake_up`"
RARE = "显存碎片"  # only in the risks of the extra digests
EXTRA = PAGE + 5
PAGES = {
    "week": f"{ROCKET}/2026-W31.html",
    "tag": f"{ROCKET}/{tag_file('rollout')}",
    "failed": f"{ROCKET}/pr/120.html",
    "search": "search.html",
}
# How wide the page is, the window's width, and how many tables scroll sideways in their box.
MEASURE = """() => [document.documentElement.scrollWidth, window.innerWidth,
  [...document.querySelectorAll('.table-wrap')]
    .filter(e => e.scrollWidth > e.clientWidth).length]"""
# Code whose line breaks fall inside a word: a break is fine after / _ . - or a space, and
# between camelCase humps.
BROKEN = """() => {
  const bad = [];
  for (const code of document.querySelectorAll('main code')) {
    const seen = [];
    const walk = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rects = range.getClientRects();
        if (rects.length) seen.push([node.data[i], rects[0].top]);
      }
    }
    for (let i = 1; i < seen.length; i++) {
      if (seen[i][1] <= seen[i - 1][1] + 2) continue;
      const a = seen[i - 1][0], b = seen[i][0];
      if (!(/[\\/_.\\-\\s]/.test(a) || /\\s/.test(b) || (/[a-z]/.test(a) && /[A-Z]/.test(b))))
        bad.push(code.textContent);
    }
  }
  return bad;
}"""


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site whose week holds a long identifier in a key PR's title, and more digests holding
    RARE than a page of results shows."""
    root = tmp_path_factory.mktemp("chromium")
    store = site_store(root / "store.db")
    r = report()
    digests = [
        d.model_copy(update={"content": d.content.model_copy(update={"title": f"修复 {LONG}"})})
        if d.number == 102
        else d
        for d in r.digests
    ]
    with closing(Store(store)) as s:
        s.save_report(r.model_copy(update={"digests": digests}))
        for n in range(200, 200 + EXTRA):
            d = digest(
                title=f"第 {n} 号：采样路径的改动", risks=[f"可能留下{RARE}，见 `alloc_{n}`。"]
            )
            s.save_digest(
                d.model_copy(
                    update={
                        "number": n,
                        "url": f"https://github.com/acme/rocket/pull/{n}",
                        "meta": d.meta.model_copy(update={"cache_key": f"extra-{n}"}),
                    }
                )
            )
        site.build(Settings(), s, root / "site", None, False)
    return root / "site"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Playwright (the system's Chromium: nothing is downloaded)."""
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 390, "height": 900})
    opened = context.new_page()
    opened.errors = []
    opened.loaded = []
    opened.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
    opened.on("pageerror", lambda e: opened.errors.append(str(e)))
    opened.on("request", lambda r: opened.loaded.append(r.url))
    yield opened
    context.close()


def shots(tmp_path: Path) -> Path:
    kept = os.environ.get("PRHUB_SITE_SHOTS")
    folder = Path(kept) if kept else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def results(page: Any) -> list[str]:
    # A selector, not a script: the site's policy lets no evaluated string run.
    page.wait_for_selector("#search-count:not(:empty)")
    return page.eval_on_selector_all("#results a", "as => as.map(a => a.getAttribute('href'))")


@pytest.mark.parametrize("width", [1280, 390])
def test_each_page_fits_breaks_no_identifier_and_runs_clean(out, page, width, tmp_path):
    assert {p: bad for p, bad in crawl(out).items() if bad} == {}
    page.set_viewport_size({"width": width, "height": 900})
    for kind, path in PAGES.items():
        page.goto((out / path).as_uri() + (f"#q={RARE}" if kind == "search" else ""))
        if kind == "search":
            assert len(results(page)) == PAGE
        assert page.evaluate("document.body.getAttribute('data-errors')") == "0"
        scroll, inner, wide = page.evaluate(MEASURE)
        assert (kind, scroll, wide) == (kind, inner, 0)
        assert page.evaluate(BROKEN) == [], kind
        page.screenshot(path=str(shots(tmp_path) / f"{kind}-{width}.png"), full_page=True)
    week = (out / PAGES["week"]).as_uri()
    page.goto(week)
    for table in ("table.prs", "table.keys"):  # every PR, and the key PRs: cards on a phone
        shown = page.eval_on_selector_all(
            f"{table} tr", "rows => rows.map(r => getComputedStyle(r).display)"
        )
        assert shown and set(shown) == ({"grid"} if width == 390 else {"table-row"}), table
    assert page.errors == []


def test_a_search_loads_only_what_its_words_need_and_pages_past_the_first_results(out, page):
    page.goto((out / "search.html").as_uri() + f"#q={RARE}")
    first = results(page)
    assert len(first) == PAGE and page.is_visible("#more")
    assert page.text_content("#search-count") == f"找到 {EXTRA} 条，显示 1–{PAGE} 条"
    loaded = {unquote(urlsplit(u).path) for u in page.loaded}
    searched = {str(out / f) for f in needed(out, RARE)}
    part = "/search.index/"
    assert {u for u in loaded if part in u} == {f for f in searched if part in f}
    page.click("#more")
    page.wait_for_selector(f"#results li:nth-child({EXTRA})")
    hrefs = page.eval_on_selector_all("#results a", "as => as.map(a => a.getAttribute('href'))")
    assert len(set(hrefs)) == EXTRA and page.is_hidden("#more")
    assert all((out / h).is_file() for h in hrefs)
    snippets = page.eval_on_selector_all("#results .hit", "ps => ps.map(p => p.textContent)")
    assert all(RARE in s and "`" not in s for s in snippets)
    # A word typed in pieces, and a word nothing holds.
    page.fill("#q", "采样改动")
    assert len(results(page)) == PAGE
    page.fill("#q", "量子纠缠")
    assert results(page) == [] and page.text_content("#search-count") == "没有找到"
    assert page.errors == []
