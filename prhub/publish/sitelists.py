"""A repository's long lists of digests, a page per month of its stream and per tag, each in
pages of a bounded size. Pages are counted from the oldest digest, so a new digest changes only
a list's newest page (and, each PAGE digests, the page before it): the newest page, under the
list's own name, holds the newest one or two pages' worth; the older ones are in a folder of
that name, `tags/rollout/1.html` the oldest."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from zoneinfo import ZoneInfo

from prhub.model import PRDigest
from prhub.publish.pages import Month, Pages, Paging, tag_file
from prhub.publish.sitedata import Sources
from prhub.publish.siteindex import Lists, Row

__all__ = ["PAGE", "Chunk", "chunks", "months", "tags"]

PAGE = 40  # digests an older page holds; the newest, up to twice as many
Put = Callable[..., str]  # a build's put: path, what makes it, its inputs


@dataclass(frozen=True)
class Chunk:
    """One page of a list of `count` digests: from the `at`-th, the latest first."""

    at: int
    size: int
    number: int  # 0: the newest page, under the list's name; k: the k-th oldest
    pages: int  # the list's older pages


def chunks(count: int) -> list[Chunk]:
    """The pages of a list of `count` digests, the newest first."""
    older = max(0, -(-count // PAGE) - 2)
    found = [Chunk(0, count - older * PAGE, 0, older)]
    found += [Chunk(count - k * PAGE, PAGE, k, older) for k in range(older, 0, -1)]
    return found


def _where(name: str, chunk: Chunk) -> tuple[str, int, Paging]:
    """A page's path in the repository's folder (`name` is its list's: tags/rollout), its
    depth under the site's root, and its links to the pages around it."""
    stem = name.rsplit("/", 1)[-1]
    if chunk.number == 0:
        older = f"{stem}/{chunk.pages}.html" if chunk.pages else None
        return f"{name}.html", 3, Paging(older=older)
    newer = "../" + f"{stem}.html" if chunk.number == chunk.pages else f"{chunk.number + 1}.html"
    older = f"{chunk.number - 1}.html" if chunk.number > 1 else None
    return f"{name}/{chunk.number}.html", 4, Paging(older=older, newer=newer)


def _span(notes: Sequence[Row], tz: str) -> str:
    """The days a page's PRs were merged (or their digests made)."""
    zone = ZoneInfo(tz)
    days = [_day(n.merged, zone) for n in (notes[-1], notes[0])] if notes else ["", ""]
    return days[0] if days[0] == days[1] else f"{days[0]} 至 {days[1]}"


def _day(micros: int, zone: ZoneInfo) -> str:
    moment = datetime(1970, 1, 1, tzinfo=ZoneInfo("UTC")) + timedelta(microseconds=micros)
    return moment.astimezone(zone).strftime("%Y-%m-%d")


def _paged(
    put: Put,
    at: str,
    name: str,
    lists: Lists,
    count: int,
    which: tuple[str | None, str | None],
    render: Callable[[Pages, list[PRDigest], Paging], str],
    src: Sources,
    tz: str,
    around: tuple[Month | None, Month | None] = (None, None),
) -> None:
    """Every page of one list: each made only when its digests or its neighbours changed."""
    for chunk in chunks(count):
        notes = lists.page(*which, chunk.at, chunk.size)
        path, depth, paging = _where(name, chunk)
        if chunk.number == 0:
            paging = Paging(older=paging.older, months=around, total=count)
        else:
            paging = Paging(older=paging.older, newer=paging.newer, span=_span(notes, tz))
        near = tuple(m.name if m else "" for m in around)
        put(
            f"{at}{path}",
            partial(_render, render, Pages(depth, tz, src.name), src, lists, which, chunk, paging),
            [n.fp for n in notes],
            paging.older,
            paging.newer,
            near if chunk.number == 0 else (),
            paging.total,
        )


def _render(
    render: Callable[[Pages, list[PRDigest], Paging], str],
    pages: Pages,
    src: Sources,
    lists: Lists,
    which: tuple[str | None, str | None],
    chunk: Chunk,
    paging: Paging,
) -> str:
    found = lists.page(*which, chunk.at, chunk.size)
    return render(pages, [src.digest(row.source) for row in found], paging)


def _month(name: str, month: str, at: Pages, digests: list[PRDigest], paging: Paging) -> str:
    return at.month(name, month, digests, paging)


def _tag(name: str, tag: str, at: Pages, digests: list[PRDigest], paging: Paging) -> str:
    return at.tag(name, tag, digests, paging)


def months(put: Put, at: str, lists: Lists, src: Sources, tz: str) -> list[Month]:
    """The stream's months, the latest first, each a list of pages; the months as the
    repository's page lists them."""
    stream = [Month(m, f"stream/{m}.html", n) for m, n in lists.months()]
    for i, month in enumerate(stream):
        around = (stream[i - 1] if i else None, stream[i + 1] if i + 1 < len(stream) else None)
        _paged(
            put,
            at,
            f"stream/{month.name}",
            lists,
            month.count,
            (month.name, None),
            partial(_month, src.name, month.name),
            src,
            tz,
            around,
        )
    return stream


def tags(put: Put, at: str, lists: Lists, src: Sources, tz: str) -> list[tuple[str, str, int]]:
    """A list of pages per tag; each tag, what it names and how many digests it has."""
    counts = lists.tags()
    for tag, _, count in counts:
        _paged(
            put,
            at,
            tag_file(tag)[: -len(".html")],
            lists,
            count,
            (None, tag),
            partial(_tag, src.name, tag),
            src,
            tz,
        )
    return counts
