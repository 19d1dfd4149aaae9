"""Types of a week's report and of dry runs, and the texts made of its facts alone. No I/O."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from prhub.fields import REPLY, Listed, Number, Numbers, Texts
from prhub.model import PRDigest, Usage
from prhub.text import NUMBER


class HotPath(BaseModel):
    path: str
    prs: list[int]


class AuthorCount(BaseModel):
    author: str
    prs: list[int]


class Revert(BaseModel):
    number: int  # the reverting PR
    reverted: int | None = None  # the PR it reverts, when the data names it
    delay_hours: float | None = None  # from the reverted PR's merge to the revert's merge


class BreakingChange(BaseModel):
    number: int
    reasons: list[str]  # "[BREAKING] in title", "config key removed: a.b (conf/x.yaml)", ...


class WeeklyFacts(BaseModel):
    """Figures of a week computed from data alone; the narrative must agree with them."""

    repo: str
    year: int
    week: int | None = None  # None for a --since/--until window
    start: datetime
    end: datetime  # exclusive
    tz: str
    prs: list[int]  # merged in the window, ascending
    pr_count: int
    additions: int = 0
    deletions: int = 0
    tags: dict[str, int] = {}  # every tag (module, readable type, label) -> PRs, most first
    modules: dict[str, int] = {}
    kinds: dict[str, int] = {}
    hot_files: list[HotPath] = []  # files touched by >= 2 PRs, most first
    hot_dirs: list[HotPath] = []  # directories touched by >= 2 PRs, most first
    authors: list[AuthorCount] = []  # most PRs first
    top_author_share: float = 0.0
    reverts: list[Revert] = []
    untested: list[int] = []  # PRs changing code without touching tests
    breaking: list[BreakingChange] = []
    first_time: list[AuthorCount] = []  # first-time contributors, where the data says so
    mean_importance: float | None = None
    key_prs: list[int] = []  # by importance, most important first


# Texts of the facts alone, which the report prints around the model's prose.

# One author stands out with at least this many PRs and this share of the week, alone at the top.
CONCENTRATION = 0.15
CONCENTRATION_PRS = 3


def top_authors(f: WeeklyFacts) -> list[AuthorCount]:
    """The authors with the most PRs: one, or all who tie for the most."""
    if not f.authors:
        return []
    most = len(f.authors[0].prs)
    return [a for a in f.authors if len(a.prs) == most]


def concentrated(f: WeeklyFacts) -> bool:
    """True when one author stands out: 3 or more PRs, >= 15 % of the week, and no tie."""
    top = top_authors(f)
    return (
        len(top) == 1
        and len(top[0].prs) >= CONCENTRATION_PRS
        and f.top_author_share >= CONCENTRATION
    )


def figures(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """The executive summary's figures, computed, never written by the model."""
    name = escape(f.repo.split("/")[-1])
    text = f"本周 {name} 共合入 {f.pr_count} 个 PR（+{f.additions:,} / −{f.deletions:,} 行）"
    top = [f"{escape(tag)}（{n}）" for tag, n in list(f.tags.items())[:4]]
    if top:
        text += "，标签分布集中在 " + "、".join(top)
    if f.mean_importance is not None:
        text += f"，平均重要性 {f.mean_importance:.2f}"
    return text + "。"


def lead(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """A lead paragraph from the facts, for a week whose model wrote none."""
    name = escape(f.repo.split("/")[-1])
    text = f"本周 {name} 共合入 {f.pr_count} 个 PR"
    themes = [escape(t) for t in list(f.modules or f.tags)[:3]]
    if themes:
        text += "，主要涉及 " + "、".join(themes)
    if f.key_prs:
        text += f"，其中重点 PR {len(f.key_prs)} 个"
    if f.reverts:
        text += f"，revert {len(f.reverts)} 个"
    return text + "。"


def author_line(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """Who made the most PRs; a tie names everyone in it and calls none of them the top."""
    top = top_authors(f)
    if not top:
        return ""
    share = f"{f.top_author_share:.0%}"
    count, people = len(top[0].prs), f"作者 {len(f.authors)} 人"
    if len(top) == 1:
        return f"{people}，最多产的 {escape(top[0].author)} 贡献 {count} 个（{share}）。"
    names = "、".join(escape(a.author) for a in top)
    return f"{people}，{names} 并列最多，各贡献 {count} 个（各 {share}）。"


def author_highlight(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """The highlight on author concentration, when one author stands out."""
    if not concentrated(f):
        return ""
    [top] = top_authors(f)
    refs = "、".join(f"#{n}" for n in top.prs)
    return (
        f"作者集中度较高：{escape(top.author)} 本周贡献 {len(top.prs)} 个 PR"
        f"（{f.top_author_share:.0%}：{refs}），单点知识风险需要关注。"
    )


REVERTS = "撤销了"
BREAKS = "可能破坏现有用法"
UNTESTED = "改了代码但没有改测试"


def fact_risks(f: WeeklyFacts, cited: Collection[int] = ()) -> list[str]:
    """One risk line per PR the facts flag (a revert, a breaking change, code without tests),
    in PR order, for the PRs not in `cited`."""
    said: defaultdict[int, list[str]] = defaultdict(list)
    for rev in f.reverts:
        delay = f"（合入后 {rev.delay_hours} 小时）" if rev.delay_hours is not None else ""
        said[rev.number].append(f"{REVERTS} {_reverted(rev)}{delay}")
    breaks: defaultdict[int, list[str]] = defaultdict(list)
    for b in f.breaking:
        # A reason's own colon ("配置项删除：a.b") would nest inside the line's.
        breaks[b.number] += [r.replace("：", " ", 1) for r in b.reasons]
    for number, reasons in breaks.items():
        said[number].append(f"{BREAKS}：" + "，".join(dict.fromkeys(reasons)))
    for number in f.untested:
        said[number].append(UNTESTED)
    return [
        f"#{n} {'；'.join(dict.fromkeys(parts))}。"
        for n, parts in sorted(said.items())
        if n not in cited
    ]


def fact_headlines(f: WeeklyFacts) -> list[str]:
    """The risks the facts flag in short, one line for each revert, one for the breaking
    changes and one for the code without tests: the top of a report, before the full list."""
    lines = [f"#{rev.number} {REVERTS} {_reverted(rev)}。" for rev in f.reverts]
    if f.breaking:
        lines.append(f"{_few([b.number for b in f.breaking])} {BREAKS}。")
    if f.untested:
        lines.append(f"{_few(f.untested)} {UNTESTED}。")
    return lines


def _reverted(rev: Revert) -> str:
    return f"#{rev.reverted}" if rev.reverted else "一个未知 PR"


def _few(numbers: list[int], most: int = 5) -> str:
    """PRs by number, the first `most` of them and how many in all."""
    shown = "、".join(f"#{n}" for n in numbers[:most])
    return shown + (f" 等 {len(numbers)} 个 PR" if len(numbers) > most else "")


def risks(written: list[str], f: WeeklyFacts) -> list[str]:
    """The model's risks, then the facts' line for each flagged PR none of them cites."""
    cited = {int(n) for text in written for n in NUMBER.findall(text)}
    return [*written, *fact_risks(f, cited)]


class Trend(BaseModel):
    model_config = REPLY

    theme: str = Field(description="模块或主题名")
    prs: Numbers = Field([], description="代表 PR 编号，必须是本周的 PR")
    judgement: str = Field(description="一句趋势判断")


class KeyPRNote(BaseModel):
    model_config = REPLY

    number: Annotated[int, Number] = Field(description="本周的 PR 编号")
    topic: str = Field(description="几个字的标题或主题")
    note: str = Field(description="一句关键观察")


class WeeklyNarrative(BaseModel):
    """What the model writes around the computed facts of a week."""

    model_config = REPLY

    lead: str = Field("", description="标题下的一两句导语：本周合入多少 PR、有哪几条主线")
    summary: str = Field(description="两三句执行摘要：本周主线和整体判断，不重复程序印出的统计")
    highlights: Texts = Field([], description="3–6 条本周亮点，每条引用 PR 编号如 #123")
    key_changes: Texts = Field([], description="本周重点变化，每条引用 PR 编号")
    trends: Annotated[list[Trend], Listed] = Field([], description="模块与主题趋势")
    risks: Texts = Field([], description="风险观察，每条引用 PR 编号")
    key_prs: Annotated[list[KeyPRNote], Listed] = Field([], description="重点 PR 的关键观察")
    follow_ups: Texts = Field([], description="可执行的后续建议")


class FailedPR(BaseModel):
    number: int
    error: str


class WeeklyMeta(BaseModel):
    """Where the report's content came from; the same content gives the same meta."""

    prompt: str
    model: str
    usage: Usage  # what made the report's digests and narrative, whichever run made them
    dropped_citations: int = 0
    # When the narrative was first made; else the newest digest; None for a week with neither.
    generated_at: datetime | None = None
    narrative_key: str = ""  # the store's key of the narrative: what `prhub import` restores it by
    discussion_url: str | None = None  # the week's discussion (参与讨论), once one is posted


class WeeklyReport(BaseModel):
    facts: WeeklyFacts
    narrative: WeeklyNarrative | None  # None for an empty week
    digests: list[PRDigest]  # ascending PR number
    failed: list[FailedPR] = []
    meta: WeeklyMeta


class PlannedPR(BaseModel):
    """What digesting one PR would send, from a dry run."""

    number: int
    cached: bool  # a stored digest would be reused: no call
    calls: int
    tokens_in: int


class DryRun(BaseModel):
    """The calls and tokens a run would send, and nothing sent."""

    repo: str
    prs: list[PlannedPR]
    narrative_calls: int = 0
    narrative_tokens_in: int = 0
    output_tokens_max: int = 0  # the reply budget of every call

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.prs) + self.narrative_calls

    @property
    def tokens_in(self) -> int:
        return sum(p.tokens_in for p in self.prs) + self.narrative_tokens_in


class KeyRow(BaseModel):
    """One row of the key-PR table: a PR, or a PR and the revert of it (`numbers` A, B)."""

    numbers: list[int]
    topic: str
    importance: float | None  # the highest of the row's PRs that have a digest
    note: str


def key_rows(r: WeeklyReport) -> list[KeyRow]:
    """The key PRs, most important first; a revert shares its row with the PR it reverts."""
    f = r.facts
    by_number = {d.number: d for d in r.digests}
    notes = {k.number: k for k in r.narrative.key_prs} if r.narrative else {}
    pairs: dict[int, tuple[list[int], str]] = {}
    for rev in f.reverts:
        if rev.reverted is not None:
            hours = rev.delay_hours
            when = f"在 #{rev.reverted} 合入 {hours} 小时后" if hours is not None else ""
            told = f"#{rev.number} {when}撤销了 #{rev.reverted}。"
            pairs[rev.number] = pairs[rev.reverted] = ([rev.reverted, rev.number], told)
    rows: list[KeyRow] = []
    shown: set[int] = set()
    for number in f.key_prs:
        numbers, told = pairs.get(number, ([number], ""))
        if shown & set(numbers):
            continue
        shown.update(numbers)
        digests = [by_number[n] for n in numbers if n in by_number]
        note = next((notes[n] for n in numbers if n in notes), None)
        rows.append(
            KeyRow(
                numbers=numbers,
                topic=note.topic if note else digests[0].content.title,
                importance=max((d.content.importance for d in digests), default=None),
                note=note.note if note else told + digests[0].content.importance_reason,
            )
        )
    return sorted(rows, key=lambda row: (-(row.importance or 0.0), row.numbers[0]))


@dataclass
class RunStats:
    """What a run did, for its closing summary and its record in the store."""

    prs: int = 0
    cached: int = 0
    failed: int = 0
    usage: Usage = field(default_factory=Usage)
    retries: int = 0
    errors: list[FailedPR] = field(default_factory=list)
    unchecked: int = 0  # digests published although they still fail a content check
    batch_usage: Usage = field(default_factory=Usage)  # the part of `usage` sent in a batch
