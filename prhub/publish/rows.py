"""The rows views are made of: a week's key PRs (a PR, or a PR and the revert of it), and
the week's digests grouped by tag."""

from __future__ import annotations

from pydantic import BaseModel

from prhub.model import WeeklyReport


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


# What a tag names, as the labels view heads its groups.
KINDS = {"module": "模块", "type": "类型", "label": "标签"}


class TaggedPR(BaseModel):
    number: int
    url: str
    title: str
    verdict: str
    minutes: int
    importance: float
    advice: str
    failed_checks: list[str] = []  # the checks its digest failed


class TagGroup(BaseModel):
    tag: str
    kind: str = "label"  # what the tag names: a key of KINDS
    prs: list[TaggedPR]


class LabelsView(BaseModel):
    """The groups shown; when a tag was asked for and has no PR, the tags the week has."""

    repo: str
    title: str
    tag: str | None  # the tag asked for, as reports spell it
    groups: list[TagGroup]
    available: dict[str, int] = {}  # tag -> PRs, most first
