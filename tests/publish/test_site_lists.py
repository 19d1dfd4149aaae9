"""A repository's long lists (a tag's digests, a month of its stream) in pages counted from the
oldest digest: every digest on exactly one page, the pages linked in order, no page over 300 KB
however long its items, and a new digest rewriting only the newest pages."""

from __future__ import annotations

import re
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prhub.config import Settings
from prhub.publish import site, sitelists
from prhub.publish.sitelists import PAGE, chunks
from prhub.store.store import Store
from tests.factories import Links, crawl, numbered

ROCKET = Path("acme") / "rocket"
START = datetime(2026, 3, 2, 3, tzinfo=UTC)


def test_a_list_is_paged_from_its_oldest_digest_and_its_newest_page_holds_one_or_two_pages():
    assert chunks(0) == [sitelists.Chunk(0, 0, 0, 0)]
    assert chunks(2 * PAGE) == [sitelists.Chunk(0, 2 * PAGE, 0, 0)]
    pages = chunks(5 * PAGE + 3)
    # The newest page: the page begun last and the one before it, whole.
    assert [(c.number, c.size) for c in pages] == [
        (0, PAGE + 3),
        (4, PAGE),
        (3, PAGE),
        (2, PAGE),
        (1, PAGE),
    ]
    # Together they hold every digest once, the latest first.
    spans = [(c.at, c.at + c.size) for c in pages]
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert spans[-1][1] == 5 * PAGE + 3
    # One more digest: the older pages hold the same digests, each from the list's end.
    grown = chunks(5 * PAGE + 4)
    for old, new in zip(pages[1:], grown[1:], strict=True):
        assert (old.number, 5 * PAGE + 3 - old.at) == (new.number, 5 * PAGE + 4 - new.at)


def store_of(
    path: Path, count: int, long: bool = False, every: timedelta = timedelta(days=1)
) -> Path:
    """acme/rocket with `count` digests tagged `rollout`, merged `every` day, the newest last;
    `long`: each with a title, advice and tags as long as a list cuts them, marked up at every
    turn."""
    words = "`a/b_c.d` <&> 风险" * 40
    with closing(Store(path)) as s:
        for i in range(count):
            extra = (
                {"title": words, "advice": words + "。" + words}
                if long
                else {"title": f"第 {i} 个采样改动"}
            )
            d = numbered(1000 + i, START + i * every, **extra)
            if long:
                d = d.model_copy(update={"labels": [f"标签{k}-{'长' * 40}" for k in range(12)]})
            s.save_digest(d.model_copy(update={"modules": ["rollout"], "kind": None}))
    return path


def build(store: Path, out: Path) -> site.SiteResult:
    with closing(Store(store)) as s:
        return site.build(Settings(), s, out, None, False)


def numbers(page: Path) -> list[int]:
    return [int(n) for n in re.findall(r'href="(?:\.\./)+pr/(\d+)\.html"', page.read_text())]


def test_every_digest_of_a_long_tag_is_on_one_page_and_the_pages_link_in_order(tmp_path):
    count = 3 * PAGE + 7
    store = store_of(tmp_path / "s.db", count)
    out = tmp_path / "site"
    build(store, out)
    head = out / ROCKET / "tags" / "rollout.html"
    older = [out / ROCKET / "tags" / "rollout" / f"{k}.html" for k in (2, 1)]
    assert sorted(p.name for p in (out / ROCKET / "tags" / "rollout").iterdir()) == [
        "1.html",
        "2.html",
    ]
    shown = [numbers(p) for p in (head, *older)]
    assert [len(s) for s in shown] == [PAGE + 7, PAGE, PAGE]
    assert sum(shown, []) == list(range(1000 + count - 1, 999, -1))  # the latest merged first
    # Newest to oldest and back, every page reached from the home page.
    assert Links(head.read_text()).hrefs.count("rollout/2.html") == 1
    assert "1.html" in Links(older[0].read_text()).hrefs
    assert "../rollout.html" in Links(older[0].read_text()).hrefs
    assert "2.html" in Links(older[1].read_text()).hrefs
    pages = crawl(out)
    assert {p: bad for p, bad in pages.items() if bad} == {}
    assert {head.resolve(), *(p.resolve() for p in older)} <= set(pages)
    assert f"{count} 个 PR" in head.read_text()
    assert re.search(r"\d{4}-\d\d-\d\d 至 \d{4}-\d\d-\d\d 合并的 40 个 PR", older[1].read_text())


def test_a_new_digest_rewrites_only_the_newest_pages_of_its_lists(tmp_path, monkeypatch):
    count = 3 * PAGE
    store = store_of(tmp_path / "s.db", count)
    out = tmp_path / "site"
    build(store, out)
    rendered: list[tuple[object, int]] = []
    real = sitelists._render

    def counted(*args: object) -> str:
        rendered.append((args[4], args[5].number))  # type: ignore[attr-defined]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(sitelists, "_render", counted)
    newest = numbered(5000, START + timedelta(days=count))
    with closing(Store(store)) as s:
        s.save_digest(newest.model_copy(update={"modules": ["rollout"], "kind": None}))
    build(store, out)
    # The tag's newest page, the page it gives up (its own now) and the one before it (its
    # link to a newer page changed); the month's newest page. Nothing older.
    month = (START + timedelta(days=count)).strftime("%Y-%m")
    assert sorted(rendered, key=str) == sorted(
        [
            ((None, "rollout"), 0),
            ((None, "rollout"), 2),
            ((None, "rollout"), 1),
            ((month, None), 0),
        ],
        key=str,
    )


def test_no_page_of_a_list_passes_300_kb_however_long_its_items(tmp_path):
    store = store_of(tmp_path / "s.db", 2 * PAGE, long=True)
    out = tmp_path / "site"
    build(store, out)
    lists = [*(out / ROCKET / "tags").rglob("*.html"), *(out / ROCKET / "stream").rglob("*.html")]
    assert lists and max(p.stat().st_size for p in lists) <= 300_000
    # The newest page holds the most, with every item cut where a list cuts it.
    head = out / ROCKET / "tags" / "rollout.html"
    assert len(numbers(head)) == 2 * PAGE and "…" in head.read_text()


@pytest.mark.parametrize("count", [PAGE + 1, 3 * PAGE + 5])
def test_a_long_month_is_paged_and_its_filter_counts_its_page(tmp_path, count):
    store = store_of(tmp_path / "s.db", count, every=timedelta(hours=5))
    out = tmp_path / "site"
    build(store, out)
    pages = sorted((out / ROCKET / "stream").rglob("*.html"))
    months = {p.relative_to(out / ROCKET / "stream").parts[0].removesuffix(".html") for p in pages}
    found = [n for p in pages for n in numbers(p)]
    assert sorted(found) == list(range(1000, 1000 + count))  # each once
    for p in pages:
        text = p.read_text()
        assert f'aria-pressed="true">全部<span class="n">{len(numbers(p))}</span>' in text
    assert {p: bad for p, bad in crawl(out).items() if bad} == {}
    assert months == {"2026-03"}  # a month's pages are in its own folder
    assert len(pages) == 1 + max(0, -(-count // PAGE) - 2)
