"""A digest's neighbours as its request shows them: the PRs it references or reverts and the
PRs of its period that changed the same files, a line each, within a small bound."""

from __future__ import annotations

from collections.abc import Sequence

from prhub.model import Neighbour
from prhub.prepare.tokens import count

MOST = 6  # neighbours a request names
TOKENS = 400  # their lines, at most
FILES_NAMED = 3  # shared files a line names; the rest are counted
# The order a request names them in, and what each is to the PR.
RELATIONS = {"reverted": "本 PR 回滚了它", "referenced": "本 PR 提到它", "same_files": "同期"}


def line(n: Neighbour) -> str:
    """One neighbour as the digest prompt shows it."""
    when = f"{n.merged_at:%Y-%m-%d} 合入" if n.merged_at else "未合并"
    why = RELATIONS[n.relation]
    if n.relation == "same_files":
        shown = "、".join(n.files[:FILES_NAMED])
        more = f" 等 {len(n.files)} 个文件" if len(n.files) > FILES_NAMED else ""
        why = f"同期也改了 {shown}{more}"
    text = f"#{n.number} {' '.join(n.title.split())}（{when}；{why}）"
    if n.digest_title:
        verdict = f"，{n.verdict}" if n.verdict else ""
        text += f" 导读：{' '.join(n.digest_title.split())}{verdict}"
    return text


def ranked(found: Sequence[Neighbour], number: int = 0) -> list[Neighbour]:
    """The neighbours a request may name: each PR once (not the PR `number` itself), by
    relation (reverted, referenced, same files) in the order found, at most MOST. A digest's
    key is made of these, without the tokenizer: a run the store answers whole never loads it."""
    order = list(RELATIONS)
    seen: set[int] = {number}
    kept = []
    for n in sorted(found, key=lambda n: order.index(n.relation)):  # stable: the order found
        if n.number not in seen:
            seen.add(n.number)
            kept.append(n)
    return kept[:MOST]


def bounded(ranked: Sequence[Neighbour], encoding: str) -> list[Neighbour]:
    """The ranked neighbours a request names: those whose lines fit TOKENS, in rank order."""
    kept: list[Neighbour] = []
    used = 0
    for n in ranked:
        size = count(line(n), encoding) + 1
        if used + size <= TOKENS:
            kept.append(n)
            used += size
    return kept


def lines(neighbours: Sequence[Neighbour]) -> list[str]:
    return [line(n) for n in neighbours]
