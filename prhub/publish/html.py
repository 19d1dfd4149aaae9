"""Self-contained HTML pages from the views: no fetching, no model calls, nothing external;
HTML escaping lives here."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable
from functools import cache
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape

from prhub.model import VERDICTS, PRDigest, WeeklyReport
from prhub.publish import parts
from prhub.publish.parts import CODE_SPAN, DigestLink, Links, Text, linked_pr, one_line, visible
from prhub.publish.render import TEMPLATES, environment
from prhub.publish.rows import LabelsView
from prhub.publish.view import digest_view, tags_view, weekly_view
from prhub.text import PR_REF

__all__ = ["digest_html", "labels_html", "weekly_html"]

# A code span as render.md() sees it, or a PR reference such as #123 (not part of a word or URL).
_INLINE = re.compile(rf"{CODE_SPAN.pattern}|{PR_REF.pattern}", re.ASCII)
_VERDICT_CLASS = dict(zip(VERDICTS, ("v-deep", "v-skim", "v-skip"), strict=True))


@cache
def _env() -> jinja2.Environment:
    env = environment(autoescape=True, finalize=_visible)  # every value a page shows
    env.filters.update(inline=_inline, line=one_line, quoted=_quoted)
    return env


def page_environment() -> jinja2.Environment:
    """The environment every page renders in, a site's too: HTML escaping and the filters."""
    return _env()


def _visible(value: object) -> object:
    if isinstance(value, Markup):
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


@cache
def _assets() -> dict[str, str]:
    css = (TEMPLATES / "page.css").read_text(encoding="utf-8")
    return assets(css, (TEMPLATES / "page.js").read_text(encoding="utf-8"))


def assets(css: str, js: str) -> dict[str, str]:
    """A page's inline style and script, and a CSP that lets only these two run and nothing load."""
    csp = (
        f"default-src 'none'; style-src '{_sha256(css)}'; script-src '{_sha256(js)}'; "
        "base-uri 'none'; form-action 'none'"
    )
    return {"css": Markup(css), "js": Markup(js), "csp": Markup(csp)}


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def inline(text: str, pr_url: Callable[[int], str]) -> Markup:
    """Untrusted text as HTML on one line: escaped, `code` spans as <code>, #123 linked."""
    return _marked(one_line(text), pr_url)


def _marked(text: str, pr_url: Callable[[int], str] | None) -> Markup:
    """Text marked up; its #123 linked by `pr_url`, or left as text inside a link."""
    out, last = [], 0
    for match in _INLINE.finditer(text):
        out.append(escape(text[last : match.start()]))
        if match.group(3) is None:
            out.append(Markup("<code>%s</code>") % _breaks(match.group(2)))
        elif pr_url is None or (number := linked_pr(_reference(match))) is None:
            out.append(escape(match.group(0)))
        else:
            out.append(_link(number, pr_url(number)))
        last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def _reference(match: re.Match[str]) -> re.Match[str]:
    """The PR reference an inline match holds, as text.PR_REF reads it."""
    found = PR_REF.fullmatch(match.group(0))
    assert found is not None, match.group(0)
    return found


def _link(number: int, url: str) -> Markup:
    return Markup('<a href="%s">#%d</a>') % (url, number)


@jinja2.pass_context
def _inline(context: jinja2.runtime.Context, x: Text) -> Markup:
    return html_text(x, context["v"].links, context.get("tag_href"))


def html_text(x: Text, links: Links, tag_href: Callable[[str], str] | None = None) -> Markup:
    """A view's text as HTML: data escaped and marked up, prhub's words escaped, PRs linked,
    and each tag linked to its page where `tag_href` gives one."""
    match x:
        case str():
            return inline(x, links.pr)
        case parts.Words():
            return _marked(x.text, links.pr)
        case parts.TagCode() | parts.Tag():
            tag = Markup('<code class="tag">%s</code>') % _joints(one_line(x.text))
            if tag_href is None:
                return tag
            return Markup('<a class="tag" href="%s">%s</a>') % (tag_href(x.text), tag)
        case parts.Code():
            return Markup("<code>%s</code>") % _breaks(one_line(x.text))
        case parts.Strong():
            return Markup("<strong>%s</strong>") % x.text
        case parts.Verdict():
            badge = Markup('<span class="badge %s">%s</span>')
            return badge % (_VERDICT_CLASS.get(x.text, ""), x.text)
        case parts.Flag():
            return Markup('<span class="flag" title="%s">%s</span>') % (x.why, x.text)
        case parts.Link():
            text = x.text if isinstance(x.text, str) else x.text.text
            return Markup('<a href="%s">%s</a>') % (x.url, _marked(one_line(text), None))
        case parts.Refs():
            return Markup(x.sep).join(_link(n, url) for n, url in x.prs) or Markup("—")
        case parts.Line():
            return Markup("").join(html_text(p, links, tag_href) for p in x.parts)


# Where a tag may break: after a mark between its words (transfer_queue, area/rollout).
_JOINT = re.compile(r"(?<=[^\w\s]|_)(?=\S)")


# Where an identifier may break: after `/ _ . -` and between the humps of camelCase.
_BREAK = re.compile(r"(?<=[/_.\-])(?=\w)|(?<=[a-z])(?=[A-Z])")


def _breaks(code: str) -> Markup:
    """A code span that breaks only between an identifier's words, never inside one."""
    return Markup("<wbr>").join(escape(piece) for piece in _BREAK.split(code))


def _joints(tag: str) -> Markup:
    """A tag that breaks only after the marks between its words, never inside a word."""
    return Markup("<wbr>").join(escape(piece) for piece in _JOINT.split(tag))


def _quoted(tags: Iterable[str]) -> str:
    """Tags for a data attribute: quoted, since labels may hold spaces."""
    return " ".join(quote(t, safe="") for t in tags)


def _page(name: str, view: object) -> str:
    return _env().get_template(name).render(**_assets(), v=view)


def digest_html(d: PRDigest, tz: str = "Asia/Shanghai") -> str:
    """One digest as a standalone HTML page, with what digest_markdown shows."""
    return _page("digest.html", digest_view(d, tz))


def weekly_html(r: WeeklyReport, *, digest_link: DigestLink | None = None) -> str:
    """The weekly report as a standalone HTML page, with a tag filter over the PR table."""
    return _page("weekly.html", weekly_view(r, digest_link=digest_link))


def labels_html(v: LabelsView, *, digest_link: DigestLink | None = None) -> str:
    """The labels view as a standalone HTML page."""
    return _page("labels.html", tags_view(v, digest_link=digest_link))
