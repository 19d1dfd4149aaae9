"""Types that cross stage lines. No I/O here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from prhub.reply import REPLY, Listed, Number, Numbers, Texts, one_of


class FileChange(BaseModel):
    """One changed file of a PR as GitHub reports it."""

    path: str
    previous_path: str | None = None
    status: str  # added, removed, modified, renamed, copied, changed, unchanged
    additions: int = 0
    deletions: int = 0
    # None when GitHub sent no patch: a binary file or a diff too large for the API.
    patch: str | None = None


class Review(BaseModel):
    author: str
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED


class PullRequest(BaseModel):
    """A pull request with everything prhub reads from GitHub."""

    repo: str
    number: int
    title: str
    body: str = ""
    author: str
    author_association: str | None = None
    labels: list[str] = []
    url: str = ""
    created_at: datetime
    merged_at: datetime | None = None
    merged: bool = False
    merge_commit_sha: str | None = None
    base_ref: str = ""
    head_ref: str = ""
    head_sha: str = ""
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    files: list[FileChange] = []
    reviews: list[Review] = []
    referenced_issues: list[int] = []
    # Secrets already replaced by markers before this PR was kept, per kind.
    redactions: dict[str, int] = {}

    @property
    def version(self) -> str:
        """What identifies this PR's content: the merge commit, else the head commit."""
        return self.merge_commit_sha or self.head_sha


View = Literal["full", "excerpt", "listed", "excluded"]


class FileView(BaseModel):
    """How much of one file the model was shown, and why."""

    path: str
    status: str
    additions: int = 0
    deletions: int = 0
    view: View
    reason: str = ""
    lines_seen: int = 0  # changed lines the model saw


class Coverage(BaseModel):
    """What part of the diff the model saw; the four lists partition the PR's files."""

    full: list[str] = []
    excerpt: list[str] = []
    listed: list[str] = []
    excluded: list[str] = []
    lines_seen: int = 0
    lines_total: int = 0
    unlisted: int = 0  # files GitHub counted but did not list (it lists at most 3,000)

    @property
    def share_seen(self) -> float:
        return self.lines_seen / self.lines_total if self.lines_total else 1.0


class PreparedPR(BaseModel):
    """A PR ready for prompts: redacted text, ranked files and diff chunks within budget."""

    repo: str
    number: int
    title: str  # redacted
    body: str  # redacted, truncated to its budget
    author: str
    labels: list[str] = []
    base_ref: str = ""
    head_ref: str = ""
    additions: int = 0
    deletions: int = 0
    reviews: list[Review] = []
    referenced_issues: list[int] = []
    files: list[FileView]
    # Each chunk is the diff text of one call; a PR that fits one call has exactly one.
    chunks: list[str]
    # A compact list of every file with its view, for the final call after map-reduce.
    index: str
    coverage: Coverage
    redactions: dict[str, int] = {}
    facts: list[str] = []  # what prhub computed, told to the model as fact (prepare.facts)


class Usage(BaseModel):
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
        )


Verdict = Literal["精读", "快速浏览", "可跳过"]


class DigestContent(BaseModel):
    """What the model writes about one PR (the structured-output schema)."""

    model_config = REPLY

    title: str = Field(description="一行中文标题：改了什么、为什么重要，不超过 40 个汉字")
    verdict: Annotated[Verdict, one_of(Verdict)] = Field(
        description="阅读建议：精读 / 快速浏览 / 可跳过"
    )
    minutes: Annotated[int, Number] = Field(ge=1, le=120, description="读懂这个 PR 需要的分钟数")
    advice: str = Field(description="阅读建议段落：值不值得读、读哪里、为什么")
    design_decisions: Texts = Field([], description="值得细读的设计决策，每条点名具体文件或标识符")
    risks: Texts = Field([], description="风险点，每条一句")
    follow_ups: Texts = Field([], description="具体的后续动作")
    importance: Annotated[float, Number] = Field(ge=0, le=10, description="重要性 0–10")
    importance_reason: str = Field(description="一句话说明重要性的理由")
    related_prs: Numbers = Field([], description="输入中提到的相关 PR 编号")


class ChunkNotes(BaseModel):
    """What the model writes about one chunk of a PR too large for one call."""

    model_config = REPLY

    summary: str = Field(description="这一部分改了什么")
    key_files: Texts = Field([], description="这一部分最重要的文件路径")
    identifiers: Texts = Field([], description="值得点名的函数、类、配置项")
    risks: Texts = Field([], description="这一部分的风险")


class ChineseTitle(BaseModel):
    """The title alone, asked again when the digest's title broke its rules."""

    model_config = REPLY

    title: str = Field(description="一句中文标题，不超过 40 个字，代码标识符保留原文")


class DigestMeta(BaseModel):
    prompt: str  # task@version
    model: str
    usage: Usage
    coverage: Coverage
    redactions: dict[str, int] = {}
    dropped_citations: int = 0
    # Content checks the published digest still fails after its corrective call (prhub.checks).
    failed_checks: list[str] = []
    cache_key: str = ""
    created_at: datetime


class PRDigest(BaseModel):
    """A validated digest of one PR, with the facts it was made from."""

    repo: str
    number: int
    url: str
    original_title: str
    author: str
    merged_at: datetime | None
    labels: list[str] = []
    modules: list[str] = []  # from the title convention, e.g. [rollout, vllm]
    kind: str | None = None  # type from the title convention, e.g. fix, feat
    breaking: bool = False
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    content: DigestContent
    meta: DigestMeta

    @property
    def tags(self) -> list[str]:
        """Module tags, then the type, then labels, without repeats."""
        seen: dict[str, None] = {}
        for tag in [
            *self.modules,
            *([self.kind] if self.kind else []),
            *map(tag_name, self.labels),
        ]:
            seen.setdefault(tag, None)
        return list(seen)


_TITLE = re.compile(r"^\s*((?:\[[^\]]*\]\s*)+)?\s*([A-Za-z]+)?(?:\([^)]*\))?(!)?\s*:\s*")
# Types in titles, as readers call them.
KIND_TAGS = {
    **dict.fromkeys(("feat", "feature"), "feature"),
    **dict.fromkeys(("fix", "bugfix", "hotfix"), "bugfix"),
    **dict.fromkeys(("refactor",), "refactor"),
    **dict.fromkeys(("perf",), "perf"),
    **dict.fromkeys(("doc", "docs"), "docs"),
    **dict.fromkeys(("test", "tests"), "test"),
    **dict.fromkeys(("ci",), "ci"),
    **dict.fromkeys(("chore", "misc"), "chore"),
    **dict.fromkeys(("build",), "build"),
    **dict.fromkeys(("style",), "style"),
    **dict.fromkeys(("revert",), "revert"),
}


# Tags that name the same thing, as repositories spell them in titles and labels.
TAG_ALIASES = {
    "doc": "docs",
    "documentation": "docs",
    "tests": "test",
    "bug": "bugfix",
    "enhancement": "feature",
}


def tag_name(raw: str, aliases: Mapping[str, str] | None = None) -> str:
    """A tag as reports count it: lower case, the repository's aliases then ours folded."""
    name = raw.strip().lower()
    name = (aliases or {}).get(name, name)
    return TAG_ALIASES.get(name, name)


def parse_title(title: str) -> tuple[list[str], str | None, bool]:
    """Module tags, readable type and breaking flag from `[mod, mod2] type: text` titles."""
    if title.lstrip().lower().startswith("revert"):
        return [], "revert", "[breaking]" in title.lower()
    match = _TITLE.match(title)
    if not match:
        return [], None, "[breaking]" in title.lower()
    modules: list[str] = []
    breaking = bool(match.group(3))
    for group in re.findall(r"\[([^\]]*)\]", match.group(1) or ""):
        for tag in group.split(","):
            tag = tag_name(tag)
            if tag == "breaking":
                breaking = True
            elif tag and tag not in modules:
                modules.append(tag)
    raw = (match.group(2) or "").lower()
    return modules, KIND_TAGS.get(raw, raw or None), breaking


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

    summary: str = Field(description="一段话的执行摘要，数字只用给出的统计")
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
    prompt: str
    model: str
    usage: Usage  # the whole run: digests made now plus the narrative
    cached_digests: int = 0
    dropped_citations: int = 0
    generated_at: datetime


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
