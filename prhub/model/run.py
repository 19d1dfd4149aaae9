"""What a run did and what a dry run would do: its figures, for the terminal and the store."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from prhub.model.digest import Usage
from prhub.model.week import FailedPR


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
