"""The labels view: a week's digests grouped by tag, in Markdown, JSON and HTML."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel

from prhub.model import PRDigest
from prhub.publish.parts import Links, links
from prhub.publish.render import markdown
from prhub.publish.view import DigestLink, tags_view, weekly_title
from prhub.tags import tag_name
from prhub.weekly.report import WeeklyReport

__all__ = ["LabelsView", "labels_json", "labels_markdown", "view"]


class TaggedPR(BaseModel):
    number: int
    url: str
    title: str
    verdict: str
    minutes: int
    importance: float
    advice: str


class TagGroup(BaseModel):
    tag: str
    prs: list[TaggedPR]


class LabelsView(BaseModel):
    """The groups shown; when a tag was asked for and has no PR, the tags the week has."""

    repo: str
    title: str
    tag: str | None  # the tag asked for, as reports spell it
    groups: list[TagGroup]
    available: dict[str, int] = {}  # tag -> PRs, most first


def view(
    r: WeeklyReport, tag: str | None = None, aliases: Mapping[str, str] | None = None
) -> LabelsView:
    """The week's digests by tag, most PRs first; only `tag` (aliases folded) when given."""
    by_tag: dict[str, list[PRDigest]] = {}
    for d in r.digests:
        breaking = ["breaking"] if d.breaking else []  # `[BREAKING]` or `type!:` in its title
        for t in dict.fromkeys([*(tag_name(t, aliases) for t in d.tags), *breaking]):
            by_tag.setdefault(t, []).append(d)
    ranked = sorted(by_tag, key=lambda t: (-len(by_tag[t]), t))
    asked = tag_name(tag, aliases) if tag is not None else None
    names = ranked if asked is None else [asked]
    urls = links(r.facts.repo, {d.number: d.url for d in r.digests})
    groups = [TagGroup(tag=t, prs=[_pr(d, urls) for d in by_tag.get(t, [])]) for t in names]
    missing = asked is not None and asked not in by_tag
    return LabelsView(
        repo=r.facts.repo,
        title=weekly_title(r),
        tag=asked,
        groups=groups,
        available={t: len(by_tag[t]) for t in ranked} if missing else {},
    )


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
    )


def labels_markdown(v: LabelsView, *, digest_link: DigestLink | None = None) -> str:
    """The labels view in Markdown."""
    return markdown("labels.md.j2", tags_view(v, digest_link=digest_link))


def labels_json(v: LabelsView) -> str:
    return v.model_dump_json(indent=2) + "\n"
