"""Self-contained HTML pages from models only: no fetching, no model calls, nothing external."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from urllib.parse import quote, urlsplit

import jinja2
from markupsafe import Markup, escape

from prhub.model import VERDICTS, PRDigest
from prhub.publish.labels import LabelsView
from prhub.publish.render import (
    CODE_SPAN,
    digest_footer,
    local_time,
    one_line,
    paragraphs,
    period,
    visible,
    weekly_footer,
    weekly_title,
)
from prhub.tags import tag_name
from prhub.weekly.report import (
    WeeklyReport,
    author_highlight,
    author_line,
    fact_risks,
    figures,
    key_rows,
    lead,
    risks,
)

__all__ = ["digest_html", "labels_html", "weekly_html"]

_TEMPLATES = Path(__file__).parent / "templates"
# A code span as render.md() sees it, or a PR reference such as #123 (not part of a word or URL).
_INLINE = re.compile(rf"{CODE_SPAN.pattern}|(?<![A-Za-z0-9_/&#])#(\d+)(?!\d)")
_VERDICT_CLASS = dict(zip(VERDICTS, ("v-deep", "v-skim", "v-skip"), strict=True))


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_visible,  # every value a page shows, escaped or not
    )


def _visible(value: object) -> object:
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


@cache
def _assets() -> dict[str, str]:
    """The inline style and script, and a CSP that lets only these two run and nothing load."""
    css = (_TEMPLATES / "page.css").read_text(encoding="utf-8")
    js = (_TEMPLATES / "page.js").read_text(encoding="utf-8")
    csp = (
        f"default-src 'none'; style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; "
        "base-uri 'none'; form-action 'none'"
    )
    return {"css": Markup(css), "js": Markup(js), "csp": Markup(csp)}


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def inline(text: str, pr_url: Callable[[int], str]) -> Markup:
    """Untrusted text as HTML on one line: escaped, `code` spans as <code>, #123 linked."""
    text = one_line(text)
    out, last = [], 0
    for match in _INLINE.finditer(text):
        out.append(escape(text[last : match.start()]))
        if match.group(3) is None:
            out.append(Markup("<code>%s</code>") % match.group(2))
        else:
            number = int(match.group(3))
            out.append(Markup('<a href="%s">#%d</a>') % (pr_url(number), number))
        last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def _safe_url(url: str) -> str | None:
    """A PR's URL when it is plain http(s), so no PR data can become a javascript: link."""
    try:
        return url if urlsplit(url).scheme in ("http", "https") else None
    except ValueError:
        return None


def _pr_urls(repo: str, digests: list[PRDigest]) -> Callable[[int], str]:
    known = {d.number: u for d in digests if (u := _safe_url(d.url))}
    # GitHub Enterprise digests carry their host; PRs without a digest link next to them.
    base = next(
        (u.rsplit("/pull/", 1)[0] for u in known.values() if "/pull/" in u),
        f"https://github.com/{quote(repo, safe='/')}",
    )
    return lambda number: known.get(number, f"{base}/pull/{number}")


def _page(name: str, pr_url: Callable[[int], str], **variables: object) -> str:
    template = _env().get_template(name)
    return template.render(
        **_assets(),
        pr_url=pr_url,
        inline=lambda text: inline(text, pr_url),
        paragraphs=paragraphs,
        line=one_line,
        verdict_class=lambda verdict: _VERDICT_CLASS.get(verdict, ""),
        **variables,
    )


def digest_html(d: PRDigest, tz: str = "Asia/Shanghai") -> str:
    """One digest as a standalone HTML page, with what digest_markdown shows."""
    return _page(
        "digest.html",
        _pr_urls(d.repo, [d]),
        title=f"#{d.number} {one_line(d.content.title)} · {d.repo}",
        d=d,
        c=d.content,
        merged=local_time(d.merged_at, tz),
        footer=digest_footer(d),
    )


def weekly_html(r: WeeklyReport) -> str:
    """The weekly report as a standalone HTML page, with a tag filter over the PR table."""
    f, n = r.facts, r.narrative
    first, last = period(r)
    # Rows carry tags as the facts count them, so each chip matches the rows it counts; quoted,
    # since labels may hold spaces.
    all_rows = [
        (d, " ".join(quote(t, safe="") for t in dict.fromkeys(map(tag_name, d.tags))))
        for d in r.digests
    ]
    moment = r.meta.generated_at
    return _page(
        "weekly.html",
        _pr_urls(f.repo, r.digests),
        title=weekly_title(r),
        r=r,
        f=f,
        n=n,
        first=first,
        last=last,
        lead=(n.lead or lead(f)) if n else "",
        generated=local_time(moment, f.tz) if moment else "",
        figures=figures(f),  # plain text: the template escapes it
        concentration=author_highlight(f),
        fact_risks=fact_risks(f),
        added_risks=risks(n.risks, f)[len(n.risks) :] if n else [],
        authors=author_line(f),
        key_rows=key_rows(r),
        all_rows=all_rows,
        footer=weekly_footer(r),
    )


def labels_html(v: LabelsView, r: WeeklyReport) -> str:
    """The labels view as a standalone HTML page."""
    return _page("labels.html", _pr_urls(v.repo, r.digests), title=f"{v.repo} · 标签视图", v=v)
