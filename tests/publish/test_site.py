"""`prhub site`: a static site from a store of the corpus weeks 31 and 32 of verl, made through
the real pipeline on the stand-ins: links that resolve, pages that fit a phone and a desktop, a
search that finds Chinese words, a valid feed, the same bytes on a rebuild, and a store that
`prhub import` rebuilds from it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from prhub.model import VERDICTS, PRDigest, WeeklyReport
from prhub.publish.pages import tag_file
from tests.factories import (
    GITHUB_TOKEN,
    OPENAI_KEY,
    ROOT,
    Links,
    assert_fails,
    assert_ok,
    cli_env,
    crawl,
    prhub,
)
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import default_responder, prompt_text

REPO = "verl-project/verl"
WEEKS = (31, 32)
# Each digest's title names one of these, so a search for one finds a known set of PRs.
TOPICS = ("采样", "调度", "检查点", "显存", "通信", "奖励", "日志")
TZ = ZoneInfo("Asia/Shanghai")


def topic(number: int) -> str:
    return TOPICS[number % len(TOPICS)]


def corpus() -> Path:
    path = ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.skip(f"shared corpus not found at {path}")
    return path


def week_prs(week: int) -> list[int]:
    """The corpus PRs merged in ISO week `week` of 2026, in Asia/Shanghai."""
    found = []
    for path in (corpus() / REPO / "pulls").glob("*.json"):
        if path.name.endswith(".files.json"):
            continue
        merged = datetime.fromisoformat(json.loads(path.read_text())["merged_at"])
        if merged.astimezone(TZ).isocalendar()[:2] == (2026, week):
            found.append(int(path.stem))
    return sorted(found)


def responder(failing: int):
    """Digests titled after their topic, every eleventh one too long (a failed check the
    digest keeps); `failing` never gets valid JSON, so its week is partial."""

    def answer(body: dict[str, Any]) -> str:
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if schema != "DigestContent":
            return default_responder(body)
        number = int(re.search(r"PR #(\d+)", prompt_text(body)).group(1))  # type: ignore[union-attr]
        if number == failing:
            return "这不是 JSON"
        content = json.loads(default_responder(body))
        title = f"{topic(number)}路径的第 {number} 号改动"
        if number % 11 == 0:
            title += "，同时整理了与之相关的配置说明、示例脚本和全部测试用例以及文档"
        verdict = VERDICTS[number % len(VERDICTS)]
        content.update(title=title, verdict=verdict, importance=float(number % 10), related_prs=[])
        return json.dumps(content, ensure_ascii=False)

    return answer


@dataclass
class Corpus:
    """A store holding weeks 31 and 32, and the environment that made it."""

    env: dict[str, str | None]
    store: Path
    failing: int
    llm: LLMStandIn

    def run(self, *args: str, **extra: str | None) -> Any:
        return prhub({**self.env, **extra}, *args)

    def reports(self) -> list[WeeklyReport]:
        from contextlib import closing

        from prhub.store.store import Store

        with closing(Store(self.store)) as s:
            return s.reports(REPO)

    def digests(self) -> list[PRDigest]:
        from contextlib import closing

        from prhub.store.store import Store

        with closing(Store(self.store)) as s:
            return s.digests(REPO)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    root = tmp_path_factory.mktemp("corpus")
    failing = week_prs(32)[-1]
    with (
        GitHubStandIn(corpus(), token=GITHUB_TOKEN) as github,
        LLMStandIn(api_key=OPENAI_KEY, responder=responder(failing)) as llm,
    ):
        env = cli_env(
            github, llm, root / "store.db", PRHUB_REPO=REPO, PRHUB_CACHE_DIR=str(root / "cache")
        )
        made = Corpus(env, root / "store.db", failing, llm)
        for week in WEEKS:
            out = str(root / f"W{week}.json")
            result = made.run("weekly", "--year", "2026", "--week", str(week), "--out", out, "-q")
            assert result.exit_code == (12 if week == 32 else 0), result.stderr
        yield made


def build(made: Corpus, out: Path, *args: str, **extra: str | None) -> Any:
    result = made.run("site", str(out), *args, **extra)
    assert_ok(result)
    return result


@pytest.fixture(scope="module")
def site(made: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of the corpus store, with PDFs when Chromium is there."""
    out = tmp_path_factory.mktemp("site") / "site"
    build(made, out)
    return out


def month(d: PRDigest) -> str:
    """The month of a digest's stream page."""
    return (d.merged_at or d.meta.created_at).astimezone(TZ).strftime("%Y-%m")


def stream_pages(site: Path) -> str:
    """Every month of the repository's stream, one after another."""
    return "".join(p.read_text() for p in sorted((site / REPO / "stream").glob("*.html")))


def test_every_internal_link_resolves_and_every_file_is_reached(site, made):
    pages = crawl(site)
    assert {p: bad for p, bad in pages.items() if bad} == {}
    reports, digests = made.reports(), made.digests()
    repo = site / REPO
    assert len(reports) == 2 and len(digests) == sum(map(len, map(week_prs, WEEKS))) - 1
    expected = {site / "index.html", site / "search.html", repo / "index.html", repo / "tags.html"}
    expected |= {repo / f"2026-W{w}.html" for w in WEEKS}
    expected |= {repo / "pr" / f"{d.number}.html" for d in digests}
    expected |= {repo / tag_file(t) for d in digests for t in d.tags}
    expected |= {repo / "stream" / f"{month(d)}.html" for d in digests}
    assert {p.relative_to(site.resolve()) for p in pages} == {p.relative_to(site) for p in expected}
    for week in WEEKS:
        for suffix in ("md", "json"):
            assert (repo / f"2026-W{week}.{suffix}").is_file()


# In Chromium: every kind of page at a phone's width and a desktop's

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


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
    """A page at a phone's width whose console errors are kept in `page.errors`."""
    context = browser.new_context(viewport={"width": 390, "height": 900})
    opened = context.new_page()
    opened.errors = []
    opened.on("console", lambda m: m.type == "error" and opened.errors.append(m.text))
    opened.on("pageerror", lambda e: opened.errors.append(str(e)))
    yield opened
    context.close()


def open_page(page: Any, site: Path, path: str, fragment: str = "") -> None:
    page.goto((site / path).as_uri() + fragment)
    assert page.evaluate("document.body.getAttribute('data-errors')") == "0"


KINDS = {
    "home": "index.html",
    "repository": f"{REPO}/index.html",
    "tags": f"{REPO}/tags.html",
    "week": f"{REPO}/2026-W32.html",
    "search": "search.html",
}
# How wide the page is, the window's width, and how many tables scroll sideways in their box.
MEASURE = """() => [document.documentElement.scrollWidth, window.innerWidth,
  [...document.querySelectorAll('.table-wrap')]
    .filter(e => e.scrollWidth > e.clientWidth).length]"""


@pytest.mark.parametrize("width", [390, 1200])
def test_no_page_scrolls_sideways_and_each_runs_clean(site, made, page, width, tmp_path):
    page.set_viewport_size({"width": width, "height": 900})
    kinds = {**KINDS, "pr": f"{REPO}/pr/{made.digests()[0].number}.html"}
    for kind, path in kinds.items():
        open_page(page, site, path, "#q=" + TOPICS[0] if kind == "search" else "")
        scroll, inner, wide_tables = page.evaluate(MEASURE)
        assert (kind, scroll, wide_tables) == (kind, inner, 0)
        page.screenshot(path=str(tmp_path / f"{kind}-{width}.png"), full_page=True)
    assert page.errors == []


def digest_pages(site: Path, hrefs: list[str], at: Path) -> set[int]:
    """The PR numbers of the digest pages among `hrefs`, resolved from the page at `at`."""
    found = set()
    for href in hrefs:
        target = (at.parent / href).resolve()
        assert target.is_file(), href
        if target.parent.name == "pr":
            found.add(int(target.stem))
    return found


def shown_results(page: Any) -> list[str]:
    page.wait_for_selector("#search-count:not(:empty)")  # no evaluated string: the policy
    return page.eval_on_selector_all(
        "#results a", "links => links.map(a => a.getAttribute('href'))"
    )


def test_typing_a_chinese_word_finds_the_prs_whose_digest_holds_it(site, made, page):
    word = topic(made.digests()[0].number)
    titled = {d.number for d in made.digests() if word in d.content.title}
    assert titled and len(titled) < len(made.digests())
    open_page(page, site, f"{REPO}/index.html")
    page.fill("#site-search", word)  # the header's box, on any page
    page.press("#site-search", "Enter")
    page.wait_for_url("**/search.html#q=*")
    at = site / "search.html"
    assert digest_pages(site, shown_results(page), at) == titled
    # Two words run together are found in their pieces; a word no digest has finds nothing.
    page.fill("#q", f"{word}改动")
    assert digest_pages(site, shown_results(page), at) == titled
    page.fill("#q", "量子纠缠")
    assert shown_results(page) == [] and page.text_content("#search-count") == "没有找到"
    assert page.errors == []


def test_the_stream_filters_by_verdict_and_tag(site, made, page):
    first = made.digests()[0]
    digests = [d for d in made.digests() if month(d) == month(first)]
    verdict = first.content.verdict
    tag = first.tags[0]
    open_page(page, site, f"{REPO}/stream/{month(first)}.html")

    def shown() -> set[int]:
        heads = page.eval_on_selector_all(
            "article.digest:not([hidden]) h2 a[href^='../pr/']", "as => as.map(a => a.textContent)"
        )
        return {int(t.split()[0].lstrip("#")) for t in heads}  # "#7227 the title"

    assert shown() == {d.number for d in digests}
    page.click(f"button[data-facet=verdict][data-value='{verdict}']")
    assert shown() == {d.number for d in digests if d.content.verdict == verdict}
    page.click(f"button[data-facet=tag][data-value='{tag}']")
    both = {d.number for d in digests if d.content.verdict == verdict and tag in d.tags}
    assert shown() == both and digests[0].number in both
    assert f"显示 {len(both)} / {len(digests)}" in page.text_content("#stream-shown")
    page.reload()  # the filter is in the address: a link keeps it
    assert shown() == both
    assert page.errors == []


# The feed


def test_the_feed_is_valid_atom_with_the_weeks_and_the_latest_digests(site, made):
    feedparser = pytest.importorskip("feedparser")
    path = site / REPO / "feed.xml"
    parsed = feedparser.parse(path.read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    reports, digests = made.reports(), made.digests()
    ids = [e.id for e in parsed.entries]
    assert len(ids) == len(set(ids)) == len(reports) + min(len(digests), 50)
    by_id = {e.id: e for e in parsed.entries}
    latest = sorted(digests, key=lambda d: (d.merged_at, d.number), reverse=True)[:50]
    for d in latest:
        entry = by_id[d.url]
        assert entry.updated_parsed[:6] == d.meta.created_at.utctimetuple()[:6]
        assert (path.parent / entry.link).is_file() and entry.title.startswith(f"#{d.number} ")
    weekly = [e for e in parsed.entries if "#prhub-weekly-" in e.id]
    assert sorted(e.link for e in weekly) == [f"2026-W{w}.html" for w in WEEKS]
    made_at = {r.meta.generated_at for r in reports}
    assert {datetime(*e.updated_parsed[:6]) for e in weekly} == {
        m.replace(tzinfo=None) - m.utcoffset() for m in made_at if m is not None
    }
    newest = max(max(d.meta.created_at for d in digests), *(m for m in made_at if m))
    assert parsed.feed.updated_parsed[:6] == newest.utctimetuple()[:6]


# Rebuilds


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_rebuild_with_nothing_new_leaves_every_byte_and_a_fresh_build_matches(
    site, made, tmp_path
):
    again = tmp_path / "again"
    shutil.copytree(site, again)
    before = files_of(again)
    times = {p: p.stat().st_mtime_ns for p in again.rglob("*") if p.is_file()}
    # No Chromium to print with: the PDFs of unchanged pages are the last build's.
    result = build(made, again, PRHUB_CHROMIUM=str(tmp_path / "no-such-browser"))
    assert f"; 0 written, {len(before) - 1} unchanged, 0 removed" in result.stderr
    assert files_of(again) == before
    assert {p: p.stat().st_mtime_ns for p in again.rglob("*") if p.is_file()} == times
    fresh = tmp_path / "fresh"
    build(made, fresh)
    assert files_of(fresh) == before


def test_files_prhub_no_longer_makes_go_and_every_other_file_stays(site, made, tmp_path, caplog):
    out = tmp_path / "site"
    shutil.copytree(site, out)
    week = out / REPO / "2026-W31.html"
    (out / "CNAME").write_text("docs.example.org\n")  # the host's, not prhub's
    (out / REPO / "notes.md").write_text("我们自己的笔记\n")
    had_pdf = (out / REPO / "2026-W31.pdf").is_file()
    edited = out / REPO / "2026-W32.pdf"
    if had_pdf:
        edited.write_bytes(edited.read_bytes() + b"%% changed by hand\n")
    result = build(made, out, "--no-pdf")
    assert not (out / REPO / "2026-W31.pdf").exists()  # prhub's, and no longer made
    assert edited.is_file() == had_pdf  # changed since prhub wrote it: kept, and said so
    assert ("changed since prhub wrote it" in caplog.text) == had_pdf
    assert (out / "CNAME").read_text() == "docs.example.org\n"
    assert (out / REPO / "notes.md").read_text() == "我们自己的笔记\n"
    assert "2026-W31.pdf" not in week.read_text() and crawl(out)[out / "index.html"] == []
    assert f"{int(had_pdf)} removed" in result.stderr


def test_a_folder_of_other_files_keeps_them_and_one_in_the_way_stops_the_build(made, tmp_path):
    out = tmp_path / "docs"
    (out / "guide").mkdir(parents=True)
    (out / "guide" / "start.md").write_text("# 上手\n")
    build(made, out, "--no-pdf")
    assert (out / "guide" / "start.md").read_text() == "# 上手\n"
    assert (out / "index.html").is_file()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "index.html").write_text("<p>我们的首页</p>\n")
    result = made.run("site", str(theirs), "--no-pdf")
    assert_fails(result, 14, f"{theirs / 'index.html'} exists and prhub did not write it")
    assert [p.name for p in theirs.iterdir()] == ["index.html"]  # nothing written
    assert (theirs / "index.html").read_text() == "<p>我们的首页</p>\n"


def test_an_empty_or_missing_store_is_one_line_and_its_own_exit_code(made, tmp_path):
    missing = tmp_path / "none.db"
    out = tmp_path / "site"
    assert_fails(made.run("site", str(out), PRHUB_STORE=str(missing)), 18, "no store at")
    assert not missing.exists() and not out.exists()
    from prhub.store.store import Store

    Store(tmp_path / "empty.db").close()
    result = made.run("site", str(out), PRHUB_STORE=str(tmp_path / "empty.db"))
    assert_fails(result, 18, "holds no weekly report or digest to publish")
    assert_fails(made.run("site", str(out), "--repo", "acme/rocket"), 18, "for acme/rocket")
    assert not out.exists()


def test_a_folder_that_cannot_be_written_is_an_output_error(made, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert_fails(made.run("site", str(blocker), "--no-pdf"), 14, "it is a file, not a folder")
    assert_fails(made.run("site", str(blocker / "site"), "--no-pdf"), 14, "cannot write")


def test_a_repository_named_in_another_spelling_is_found(made, tmp_path):
    out = tmp_path / "site"
    build(made, out, "--no-pdf", "--repo", "https://github.com/VERL-Project/Verl")
    assert (out / REPO / "index.html").is_file()


def test_without_chromium_the_site_has_no_pdf_and_says_so_unless_pdf_is_asked(made, tmp_path):
    out = tmp_path / "site"
    nothing = str(tmp_path / "no-such-browser")
    result = build(made, out, PRHUB_CHROMIUM=nothing)
    assert "prhub: warning: no PDFs in the site: PRHUB_CHROMIUM=" in result.stderr
    assert not list(out.rglob("*.pdf")) and crawl(out)[out / "index.html"] == []
    assert all(">PDF<" not in p.read_text() for p in (out / REPO).glob("*.html"))
    result = made.run("site", str(tmp_path / "other"), "--pdf", PRHUB_CHROMIUM=nothing)
    assert_fails(result, 15, "PRHUB_CHROMIUM=")
    assert not (tmp_path / "other").exists()


def test_the_week_page_offers_its_markdown_pdf_and_json_and_the_weeks_around_it(site):
    pdf = (site / REPO / "2026-W32.pdf").is_file()
    links = Links((site / REPO / "2026-W32.html").read_text())
    shown = [h for h in links.hrefs if h.startswith("2026-W")]
    assert shown == [
        "2026-W32.md",
        *(["2026-W32.pdf"] if pdf else []),
        "2026-W32.json",
        "2026-W31.html",
    ]
    if pdf:
        assert (site / REPO / "2026-W32.pdf").read_bytes().startswith(b"%PDF-")
    older = Links((site / REPO / "2026-W31.html").read_text())
    assert "2026-W32.html" in older.hrefs and "2026-W30.html" not in older.hrefs


def test_a_pr_page_names_the_weeks_it_appears_in(site, made):
    for d in made.digests()[:5]:
        links = Links((site / REPO / "pr" / f"{d.number}.html").read_text())
        weeks = [h for h in links.hrefs if h.startswith("../2026-W") and h.endswith(".html")]
        holding = [r for r in made.reports() if any(x.number == d.number for x in r.digests)]
        assert weeks == [f"../2026-W{r.facts.week}.html" for r in holding] and len(weeks) == 1
        # Its JSON: the week's that holds it as it is.
        assert d.url in links.hrefs and f"../2026-W{holding[0].facts.week}.json" in links.hrefs


@pytest.mark.slow
def test_importing_the_site_restores_a_store_whose_weekly_rerun_makes_no_call(site, made, tmp_path):
    new = {"PRHUB_STORE": str(tmp_path / "new.db")}
    result = made.run("import", str(site), **new)
    assert_ok(result)
    assert f"and {len(WEEKS)} weeks from {site}" in result.stderr
    for week in WEEKS:
        calls = len(made.llm.bodies)
        out = tmp_path / f"W{week}.json"
        rerun = made.run("weekly", "--year", "2026", "--week", str(week), "--out", str(out), **new)
        assert rerun.exit_code == (12 if week == 32 else 0), rerun.stderr
        asked = {re.search(r"PR #(\d+)", prompt_text(b)) for b in made.llm.bodies[calls:]}
        # Only the PR that failed its digest is asked for again.
        assert {m.group(1) for m in asked if m} == ({str(made.failing)} if week == 32 else set())
        assert all(m for m in asked)  # no narrative made again
        # The same report: the site's JSON is what --format json writes, without indentation.
        published = (site / REPO / f"2026-W{week}.json").read_text()
        assert json.loads(out.read_text()) == json.loads(published)
        assert (
            published
            == json.dumps(json.loads(out.read_text()), ensure_ascii=False, separators=(",", ":"))
            + "\n"
        )


def test_failed_checks_and_a_partial_week_show_where_a_reader_looks(site, made):
    digests = made.digests()
    failed = {d.number for d in digests if d.meta.failed_checks}
    assert failed and len(failed) < len(digests)
    stream = (site / REPO / "index.html").read_text()
    items = re.findall(r'<article class="digest".*?</article>', stream_pages(site), re.S)
    flagged = {
        int(m)
        for item in items
        if 'class="flag"' in item
        for m in re.findall(r'href="\.\./pr/(\d+)\.html"', item)
    }
    assert flagged == failed
    for d in digests:
        page = (site / REPO / "pr" / f"{d.number}.html").read_text()
        assert ('class="notice"' in page) == (d.number in failed)
    week = (site / REPO / "2026-W32.html").read_text()
    assert week.index('class="notice"') < week.index("本周亮点")
    assert f"#{made.failing}" in week[week.index('class="notice"') :][:400]
    rows = re.findall(r'<li><a href="(2026-W\d+)\.html">.*?</li>', stream, re.S)
    assert rows == ["2026-W32", "2026-W31"]
    row32 = re.search(r'<li><a href="2026-W32\.html">.*?</li>', stream, re.S)
    assert row32 and "⚠ 不完整" in row32.group()


def test_a_damaged_record_makes_every_file_anothers_and_none_outside_is_removed(
    site, made, tmp_path, caplog
):
    out = tmp_path / "site"
    shutil.copytree(site, out)
    before = files_of(out)
    (out / ".prhub-site").write_text("{not json")
    build(made, out)  # what is there is what it makes: taken as its own again
    assert "is no record prhub can read" in caplog.text
    assert files_of(out) == before
    outside = tmp_path / "precious.txt"
    outside.write_text("保留\n")
    import sqlite3

    from prhub.publish.manifest import digest

    with closing(sqlite3.connect(out / ".prhub-site")) as record, record:
        sha = digest(outside.read_bytes())
        record.execute("INSERT INTO files VALUES ('../precious.txt', ?, '', 4, '', '')", (sha,))
    build(made, out)
    assert outside.read_text() == "保留\n" and files_of(out) == before


@pytest.fixture
def hosted(site: Path, tmp_path: Path) -> Iterator[str]:
    """The site served over HTTP from a subpath, as GitHub Pages serves /REPO/."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    shutil.copytree(site, tmp_path / "www" / "docs")
    handler = functools.partial(Quiet, directory=str(tmp_path / "www"))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}/docs/"
        server.shutdown()
        thread.join()


def test_from_a_subpath_of_a_web_host_a_reader_goes_from_home_to_a_week_a_pr_and_back(
    hosted, made, page
):
    d = made.reports()[0].digests[0]  # of week 32, the latest
    page.goto(hosted + "index.html")
    page.click(f"a[href='{REPO}/index.html']")
    page.click("a[href='2026-W32.html']")
    assert page.url == f"{hosted}{REPO}/2026-W32.html"
    page.click(f"a[href='pr/{d.number}.html'] >> nth=0")
    assert page.url == f"{hosted}{REPO}/pr/{d.number}.html"
    page.click("a.brand")
    assert page.url == hosted + "index.html"
    page.fill("#site-search", topic(d.number))
    page.press("#site-search", "Enter")
    page.wait_for_url("**/docs/search.html#q=*")
    page.click(f"#results a[href='{REPO}/pr/{d.number}.html']")
    assert page.url == f"{hosted}{REPO}/pr/{d.number}.html"
    assert page.errors == []


# Stores of other shapes: digests alone, an empty week, text that tries to be markup

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(1)> 采样 & `x<y>`"


def odd_store(path: Path) -> None:
    """acme/rocket with its week 31 and a week without PRs; other/tool with one digest alone,
    whose title and tag try to be markup."""
    from prhub.store.store import Store
    from tests.factories import digest, report

    week = report()
    f = week.facts
    empty = week.model_copy(
        update={
            "facts": f.model_copy(
                update={
                    "week": 32,
                    "start": f.start + timedelta(days=7),
                    "end": f.end + timedelta(days=7),
                    "prs": [],
                    "pr_count": 0,
                    "tags": {},
                    "key_prs": [],
                }
            ),
            "narrative": None,
            "digests": [],
        }
    )
    alone = digest(title=HOSTILE, advice=HOSTILE).model_copy(
        update={"repo": "other/tool", "url": "https://github.com/other/tool/pull/5", "number": 5}
    )
    alone = alone.model_copy(update={"labels": [HOSTILE]})
    s = Store(path)
    try:
        for r in (week, empty):
            s.save_report(r)
        for d in week.digests:
            s.save_digest(d)
        s.save_digest(alone)
    finally:
        s.close()


def test_digests_alone_and_an_empty_week_make_a_whole_site(tmp_path, page):
    odd_store(tmp_path / "odd.db")
    out = tmp_path / "site"
    env = cli_env("http://127.0.0.1:9", "http://127.0.0.1:9/v1", tmp_path / "odd.db")
    result = prhub(env, "site", str(out), "--no-pdf")
    assert_ok(result)
    assert "2 repositories, 2 weeks, 7 digests" in result.stderr
    assert {p: bad for p, bad in crawl(out).items() if bad} == {}
    assert (out / "other" / "tool" / "pr" / "5.html").is_file()
    assert "本周没有合入任何 PR。" in (out / "acme" / "rocket" / "2026-W32.html").read_text()
    for path in ("other/tool/index.html", "other/tool/tags.html", "search.html"):
        open_page(page, out, path, "#q=onerror" if path == "search.html" else "")
        assert page.query_selector("img") is None
    # As text: markup shown, not run; the Markdown code span as the reader sees it.
    shown = HOSTILE.replace("`", "")
    assert page.eval_on_selector_all("#results a", "as => as.map(a => a.textContent)") == [shown]
    assert page.errors == []


def test_a_week_with_a_discussion_links_it_at_the_end_of_its_page(tmp_path):
    from prhub.store.store import Store
    from tests.factories import report

    week = report()
    page = "https://github.com/acme/rocket/discussions/7"
    posted = week.model_copy(update={"meta": week.meta.model_copy(update={"discussion_url": page})})
    s = Store(tmp_path / "s.db")
    try:
        s.save_report(posted)
    finally:
        s.close()
    out = tmp_path / "site"
    env = cli_env("http://127.0.0.1:9", "http://127.0.0.1:9/v1", tmp_path / "s.db")
    assert_ok(prhub(env, "site", str(out), "--no-pdf"))
    html = (out / "acme" / "rocket" / f"2026-W{week.facts.week:02d}.html").read_text()
    assert f'<a href="{page}">参与讨论</a>' in html
    assert html.index("参与讨论") > html.index("完整周报")
