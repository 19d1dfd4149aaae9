"""What the model writes about a PR, and the digest prhub publishes of it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, model_validator

from prhub.fields import REPLY, Number, Numbers, Texts, one_of
from prhub.model.pr import Coverage
from prhub.tags import tag_name


class Usage(BaseModel):
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0  # of tokens_in, served from the provider's prompt cache

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls + other.calls,
            tokens_in=self.tokens_in + other.tokens_in,
            tokens_out=self.tokens_out + other.tokens_out,
            tokens_cached=self.tokens_cached + other.tokens_cached,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            calls=self.calls - other.calls,
            tokens_in=self.tokens_in - other.tokens_in,
            tokens_out=self.tokens_out - other.tokens_out,
            tokens_cached=self.tokens_cached - other.tokens_cached,
        )


Verdict = Literal["精读", "快速浏览", "可跳过"]
VERDICTS: tuple[str, ...] = get_args(Verdict)


class DigestContent(BaseModel):
    """What the model writes about one PR (the structured-output schema)."""

    model_config = REPLY

    title: str = Field(
        description="一行中文标题：改了什么、为什么重要，"
        "不超过 40 字（英文词、标识符、数字各算 1 字）"
    )
    verdict: Annotated[Verdict, one_of(VERDICTS)] = Field(
        description="阅读建议：精读 / 快速浏览 / 可跳过"
    )
    minutes: Annotated[int, Number] = Field(ge=1, le=120, description="读懂这个 PR 需要的分钟数")
    advice: str = Field(description="阅读建议段落：值不值得读、读哪里、为什么")
    design_decisions: Texts = Field([], description="值得细读的设计决策，每条点名具体文件或标识符")
    risks: Texts = Field([], description="风险点，每条一句")
    follow_ups: Texts = Field([], description="具体的后续动作")
    discussion: Texts = Field(
        [],
        description="评审讨论要点：未解决的疑虑、未采纳的建议、承诺的后续 PR、谁批准；写明是谁说的",
    )
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

    title: str = Field(
        description="一句中文标题，不超过 40 字（英文词、标识符、数字各算 1 字），"
        "代码标识符保留原文"
    )


# Why grounding removed a piece of a digest (prhub.digest.ground).
DropReason = Literal[
    "unknown_path",
    "unknown_identifier",
    "mentioned_as_changed",
    "unknown_number",
    "echoed_prompt",
    "unverified_span",  # a shorthand or plain word in code marks: kept, its marks removed
    "no_previous",  # a follow-up of a last period there is no report of
    "not_taken_up",  # said to be taken up, citing no PR of the period
]


class Drop(BaseModel):
    """One piece of a digest grounding removed: the field, its text and why."""

    field: str
    text: str
    reason: DropReason


class DigestMeta(BaseModel):
    prompt: str  # task@version
    model: str
    usage: Usage
    coverage: Coverage
    redactions: dict[str, int] = {}
    # What grounding removed from the published content; the count is its length (digests
    # stored before the list was recorded keep their count alone).
    dropped: list[Drop] = []
    dropped_citations: int = 0
    # Code spans grounding kept as plain text (it could not verify them, and no claim rests
    # on them): each recorded, as drops are.
    unmarked: list[Drop] = []
    # Content checks the published digest still fails after its corrective call (digest.checks).
    failed_checks: list[str] = []
    cache_key: str = ""
    created_at: datetime

    @model_validator(mode="after")
    def _counted(self) -> DigestMeta:
        if self.dropped:
            self.dropped_citations = len(self.dropped)
        return self


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
