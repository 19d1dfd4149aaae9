"""The short form of a week that its discussion and chat message say: title, lead, highlights,
the top risks in short, the report's and the discussion's pages; as Markdown within a size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prhub.config import Settings
from prhub.model import WeeklyReport
from prhub.publish.formats import Format
from prhub.publish.output import report_path
from prhub.publish.parts import CODE_SPAN, Links, linked_pr, links, one_line
from prhub.publish.render import md
from prhub.publish.view import period, weekly_title
from prhub.text import PR_REF, sentences
from prhub.weekly.prose import author_highlight, fact_risks, lead, period_word, short_risk

RISKS = 3  # the top risks a post names
SHORT = 60  # characters of a risk's short form, as a chat shows it on a phone
# `#123` that is a PR reference, not part of a word, a URL or an entity.


@dataclass(frozen=True)
class Brief:
    """What a post says of a week: the report's texts as they are, prhub's words apart."""

    title: str
    lead: str
    highlights: tuple[str, ...]
    risks: tuple[str, ...]  # each in short
    missing: str  # a partial week's note; "" for a whole one
    figures: str  # the meta line
    report: str  # the report's page, "" when not known
    discussion: str  # the week's discussion, "" when none
    links: Links  # each PR's page, for the #N the texts cite


def brief_of(report: WeeklyReport, settings: Settings, discussion: str = "") -> Brief:
    """The short form of a week's report."""
    f, n = report.facts, report.narrative
    highlights = [*(n.highlights if n else []), author_highlight(f)]
    risks = [short_risk(r) for r in n.risks] if n and n.risks else fact_risks(f)
    first, last = period(report)
    failed = len(report.failed)
    return Brief(
        title=weekly_title(report),
        lead=(n.lead if n else "") or lead(f),
        highlights=tuple(one_line(h) for h in highlights if h),
        risks=tuple(short(r) for r in risks[:RISKS]),
        missing=f"{period_word(f)} {f.pr_count} 个 PR 中有 {failed} 个未能生成导读。"
        if failed
        else "",
        figures=f"{f.repo} · {first} 至 {last} · 来源 PR {f.pr_count} · 重点 PR {len(f.key_prs)}",
        report=report_url(report, settings),
        discussion=discussion,
        links=links(f.repo, {d.number: d.url for d in report.digests}),
    )


def short(text: str) -> str:
    """A risk in short: its first sentence, cut at SHORT characters (a headline the model
    kept short enough is whole)."""
    text = one_line(text)
    first = next(iter(sentences(text)), text).strip()
    return first if len(first) <= SHORT else first[: SHORT - 1].rstrip() + "…"


def report_url(report: WeeklyReport, settings: Settings) -> str:
    """The report's page by the settings' template; "" when none is set."""
    if not settings.report_url:
        return ""
    repo = report.facts.repo
    owner, name = repo.split("/")
    week = report_path(report, Format.markdown).stem
    return settings.report_url.format(repo=repo, owner=owner, name=name, week=week)


def pieces(text: str) -> list[str | int]:
    """`text` cut at its PR references (#N outside code spans): its text and the PRs' numbers."""
    out: list[str | int] = [""]
    last = 0
    for span in [*CODE_SPAN.finditer(text), None]:
        end = span.start() if span else len(text)
        plain, at = text[last:end], 0
        for ref in PR_REF.finditer(plain):
            if (number := linked_pr(ref)) is not None and not plain[: ref.start()].endswith("["):
                out[-1] = f"{out[-1]}{plain[at : ref.start()]}"
                out += [number, ""]
                at = ref.end()
        out[-1] = f"{out[-1]}{plain[at:]}"
        if span:
            out[-1], last = f"{out[-1]}{span[0]}", span.end()
    return [p for p in out if p != ""]


def linked(text: str, link: Callable[[int], str]) -> str:
    """`text` (escaped for where it goes) with each PR reference as `link(number)` makes it."""
    return "".join(p if isinstance(p, str) else link(p) for p in pieces(text))


def markdown(b: Brief, limit: int = 60_000, title: bool = False) -> str:
    """The brief as GitHub-flavoured Markdown within `limit` UTF-8 bytes: the last risks, then
    the last highlights, give way first; `title` puts the title on top, as a chat shows it."""
    highlights, risks = list(b.highlights), list(b.risks)
    while True:
        text = _markdown(b, highlights, risks, title)
        if len(text.encode()) <= limit or not (highlights or risks):
            return text
        (risks or highlights).pop()


def _markdown(b: Brief, highlights: list[str], risks: list[str], title: bool) -> str:
    def text(value: str) -> str:
        return linked(md(value), lambda n: f"[#{n}]({b.links.pr(n)})")

    blocks = [f"**{md(b.title)}**"] if title else []
    blocks.append(text(b.lead))
    if b.missing:
        blocks.append(f"> {b.missing}")
    for heading, items in (("本周亮点", highlights), ("风险观察", risks)):
        if items:
            blocks += [f"**{heading}**", "\n".join(f"- {text(i)}" for i in items)]
    shown = [("阅读完整周报", b.report), ("参与讨论", b.discussion)]
    if see := " · ".join(f"[{label}]({url})" for label, url in shown if url):
        blocks.append(see)
    blocks.append(f"<sub>{md(b.figures)} · 由 prhub 生成</sub>")
    return "\n\n".join(blocks) + "\n"
