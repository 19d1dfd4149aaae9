"""A week's computed facts, the narrative the model writes around them, and the report."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, Field, model_validator

from prhub.fields import REPLY, Listed, Number, Numbers, Texts, one_of
from prhub.model.digest import Drop, PRDigest, Usage


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


class LastPeriod(BaseModel):
    """The previous period's stored report as the next one is told it: what it flagged, what
    it advised and how it counted its tags."""

    start: datetime
    end: datetime
    year: int
    week: int | None = None  # None for a --since/--until window
    prs: list[int] = []
    tags: dict[str, int] = {}
    risks: list[str] = []
    follow_ups: list[str] = []


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
    last: LastPeriod | None = None  # the previous period's stored report, when there is one


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


class Risk(BaseModel):
    """A risk of the week: a short headline for the top of the report, and its full text."""

    model_config = REPLY

    headline: str = Field(
        "",
        description="一句完整的短句（不超过 60 字），点明风险在哪、会怎样，可引用 PR 编号；"
        "用于周报开头的风险列表",
    )
    text: str = Field(description="风险观察全文，引用 PR 编号")

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, value: Any) -> Any:
        """A risk written as a text alone (and as reports stored one) has no headline."""
        return {"text": value} if isinstance(value, str) else value


FollowStatus = Literal["已跟进", "部分跟进", "仍未跟进"]
FOLLOW_STATES: tuple[str, ...] = get_args(FollowStatus)


class Followed(BaseModel):
    """How this period took up one follow-up or risk of the last."""

    model_config = REPLY

    item: str = Field(description="上周的一条后续建议或风险，简述")
    status: Annotated[FollowStatus, one_of(FOLLOW_STATES)] = Field(
        description="已跟进 / 部分跟进 / 仍未跟进"
    )
    prs: Numbers = Field([], description="本周跟进它的 PR 编号；仍未跟进写 []")
    note: str = Field(description="一句说明：本周哪个 PR 做了什么，或为什么仍待跟进")


class WeeklyNarrative(BaseModel):
    """What the model writes around the computed facts of a week."""

    model_config = REPLY

    lead: str = Field("", description="标题下的一两句导语：本周合入多少 PR、有哪几条主线")
    summary: str = Field(description="两三句执行摘要：本周主线和整体判断，不重复程序印出的统计")
    highlights: Texts = Field([], description="3–6 条本周亮点，每条引用 PR 编号如 #123")
    key_changes: Texts = Field([], description="本周重点变化，每条引用 PR 编号")
    trends: Annotated[list[Trend], Listed] = Field([], description="模块与主题趋势")
    risks: Annotated[list[Risk], Listed] = Field([], description="风险观察，每条引用 PR 编号")
    key_prs: Annotated[list[KeyPRNote], Listed] = Field([], description="重点 PR 的关键观察")
    follow_ups: Texts = Field([], description="可执行的后续建议")
    carried_over: Annotated[list[Followed], Listed] = Field(
        [], description="上周跟进：逐条对照 <last> 里上周的后续建议和风险；没有 <last> 就写 []"
    )


class FailedPR(BaseModel):
    number: int
    error: str


class WeeklyMeta(BaseModel):
    """Where the report's content came from; the same content gives the same meta."""

    prompt: str
    model: str
    usage: Usage  # what made the report's digests and narrative, whichever run made them
    dropped_citations: int = 0
    # What grounding removed from the narrative, each with its field; the count is its length
    # (reports stored before the list was recorded keep their count alone).
    dropped: list[Drop] = []
    # When the narrative was first made; else the newest digest; None for a week with neither.
    generated_at: datetime | None = None
    narrative_key: str = ""  # the store's key of the narrative: what `prhub import` restores it by
    discussion_url: str | None = None  # the week's discussion (参与讨论), once one is posted

    @model_validator(mode="after")
    def _counted(self) -> WeeklyMeta:
        if self.dropped:
            self.dropped_citations = len(self.dropped)
        return self


class WeeklyReport(BaseModel):
    facts: WeeklyFacts
    narrative: WeeklyNarrative | None  # None for an empty week
    digests: list[PRDigest]  # ascending PR number
    failed: list[FailedPR] = []
    meta: WeeklyMeta
