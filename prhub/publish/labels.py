"""The labels view: a week's digests grouped by tag, in Markdown, JSON and HTML."""

from __future__ import annotations

from collections.abc import Mapping

from prhub.model import PRDigest, WeeklyReport
from prhub.publish.parts import DigestLink, Links, links
from prhub.publish.render import markdown
from prhub.publish.rows import KINDS, LabelsView, TaggedPR, TagGroup
from prhub.publish.view import tags_view, weekly_title
from prhub.tags import tag_name

__all__ = ["labels_json", "labels_markdown", "view"]


def view(
    r: WeeklyReport, tag: str | None = None, aliases: Mapping[str, str] | None = None
) -> LabelsView:
    """The week's digests by tag: modules, then types, then labels, each most PRs first; only
    `tag` (aliases folded) when given."""
    by_tag: dict[str, list[PRDigest]] = {}
    for d in r.digests:
        breaking = ["breaking"] if d.breaking else []  # `[BREAKING]` or `type!:` in its title
        for t in dict.fromkeys([*(tag_name(t, aliases) for t in d.tags), *breaking]):
            by_tag.setdefault(t, []).append(d)
    kinds = _kinds(r.digests, aliases)
    ranked = sorted(by_tag, key=lambda t: (-len(by_tag[t]), t))
    asked = tag_name(tag, aliases) if tag is not None else None
    order = list(KINDS)
    names = (
        [asked]
        if asked is not None
        else sorted(ranked, key=lambda t: order.index(kinds.get(t, "label")))
    )
    urls = links(r.facts.repo, {d.number: d.url for d in r.digests})
    groups = [
        TagGroup(tag=t, kind=kinds.get(t, "label"), prs=[_pr(d, urls) for d in by_tag.get(t, [])])
        for t in names
    ]
    missing = asked is not None and asked not in by_tag
    return LabelsView(
        repo=r.facts.repo,
        title=weekly_title(r),
        tag=asked,
        groups=groups,
        available={t: len(by_tag[t]) for t in ranked} if missing else {},
    )


def _kinds(digests: list[PRDigest], aliases: Mapping[str, str] | None) -> dict[str, str]:
    """What each tag names; one that is a module for some PR and a label for another is a module."""
    named: dict[str, str] = {}
    for kind, of in (
        ("module", lambda d: d.modules),
        ("type", lambda d: [*([d.kind] if d.kind else []), *(["breaking"] if d.breaking else [])]),
        ("label", lambda d: map(tag_name, d.labels)),  # as PRDigest.tags spells them
    ):
        for d in digests:
            for t in of(d):
                named.setdefault(tag_name(t, aliases), kind)
    return named


def _pr(d: PRDigest, urls: Links) -> TaggedPR:
    c = d.content
    return TaggedPR(
        number=d.number,
        url=urls.pr(d.number),
        title=c.title,
        verdict=c.verdict,
        minutes=c.minutes,
        importance=c.importance,
        advice=c.advice,
        failed_checks=d.meta.failed_checks,
    )


def labels_markdown(v: LabelsView, *, digest_link: DigestLink | None = None) -> str:
    """The labels view in Markdown."""
    return markdown("labels.md.j2", tags_view(v, digest_link=digest_link))


def labels_json(v: LabelsView) -> str:
    return v.model_dump_json(indent=2) + "\n"
