"""The site's search index: the words of every digest and weekly report, for the search page's
script to match offline, with no server. Chinese has no spaces between words, so the script
finds a query's words as substrings of these texts, or in pieces of two characters or more."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from prhub.model import PRDigest, WeeklyReport
from prhub.publish.footers import local_time
from prhub.publish.parts import one_line
from prhub.publish.view import weekly_title

__all__ = ["digest_entry", "index_json", "week_entry"]


def digest_entry(d: PRDigest, url: str, tz: str) -> dict[str, Any]:
    """A digest as the index holds it; `url` is its page, relative to the site's root."""
    c = d.content
    merged = local_time(d.merged_at, tz)[:10] if d.merged_at else "未合并"
    return {
        "u": url,
        "k": "pr",
        "r": d.repo,
        "t": one_line(c.title),
        "s": f"#{d.number} · {c.verdict} · 重要性 {c.importance:.1f} · {merged}",
        "x": _words(  # the advice first: a hit's excerpt shows the reader's text
            c.advice,
            c.importance_reason,
            *c.design_decisions,
            *c.risks,
            *c.follow_ups,
            d.original_title,
            *d.tags,
            f"@{d.author}",
            f"#{d.number}",
        ),
    }


def week_entry(r: WeeklyReport, url: str) -> dict[str, Any]:
    """A weekly report as the index holds it: its lead, highlights and summary."""
    n = r.narrative
    said = [n.lead, n.summary, *n.highlights, *n.key_changes] if n else []
    return {
        "u": url,
        "k": "week",
        "r": r.facts.repo,
        "t": weekly_title(r),
        "s": f"周报 · {r.facts.pr_count} 个 PR",
        "x": _words(*said),
    }


def _words(*texts: str) -> str:
    return " ".join(t for t in map(one_line, texts) if t)


def index_json(entries: Iterable[dict[str, Any]]) -> str:
    """The index as JSON (search.json), in the order given: the script ranks ties by it."""
    return json.dumps({"docs": list(entries)}, ensure_ascii=False, separators=(",", ":")) + "\n"
