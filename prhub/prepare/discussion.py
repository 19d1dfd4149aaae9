"""A PR's review discussion as prompt text: maintainers and the newest first, within a budget."""

from __future__ import annotations

import re
from typing import NamedTuple

from prhub.config import Settings
from prhub.model import Comment
from prhub.prepare.body import HTML_COMMENT
from prhub.prepare.redact import redact
from prhub.prepare.tokens import count, truncate

SHARE = 8  # the discussion takes at most an eighth of the input budget
MOST = 2000  # tokens, whatever the budget
EACH = 300  # tokens of one comment at most: a bot's long report must not crowd out the rest
MAINTAINERS = ("OWNER", "MEMBER", "COLLABORATOR")
KINDS = {"review": "评审", "inline": "行内评论", "conversation": "讨论"}
CUT = " …[截断]"
BOT = "，bot"
# An entry as `_entry` writes it: "[评审 APPROVED] @who（MEMBER）：text". WHERE finds its
# "[kind …] @" opening (the bracket may be lost), WHO its "@who（ASSOCIATION）：" label.
WHERE = re.compile(rf"\[?(?:{'|'.join(KINDS.values())})[^\]\n]*\]\s*@")
WHO = re.compile(rf"@\S+（[A-Z_]+(?:{BOT})?）：")


class Discussion(NamedTuple):
    text: str  # one entry a line group, oldest first
    shown: int
    total: int


def budget(settings: Settings) -> int:
    """Tokens the discussion may take in a digest prompt."""
    return min(MOST, settings.input_budget // SHARE)


def discussion(comments: list[Comment], settings: Settings) -> Discussion:
    """The comments that fit the budget, chosen maintainers first, then the newest; shown in
    the order they were written. Text hidden in HTML comments is left out."""
    enc = settings.encoding
    entries = [(i, _entry(c, enc)) for i, c in enumerate(comments)]
    entries = [(i, e) for i, e in entries if e]
    ranked = sorted(
        entries,
        key=lambda ie: (comments[ie[0]].association not in MAINTAINERS, -ie[0]),
    )
    left, kept = budget(settings), []
    for i, entry in ranked:
        cost = count(entry, enc) + 1
        if cost <= left:
            kept.append(i)
            left -= cost
    text = "\n".join(e for i, e in entries if i in set(kept))
    return Discussion(text, len(kept), len(entries))


def _entry(comment: Comment, encoding: str) -> str:
    body, _ = redact(HTML_COMMENT.sub("", comment.body))  # stored redacted already; kept so twice
    body = " ".join(body.split())
    if not body:
        return ""
    who = f"@{comment.author}（{comment.association}{BOT if comment.bot else ''}）"
    where = KINDS[comment.kind]
    if comment.kind == "review" and comment.state:
        where += f" {comment.state}"
    if comment.path:
        where += f" {comment.path}" + (f":{comment.line}" if comment.line else "")
    return f"[{where}] {who}：{truncate(body, EACH, encoding)}" + (
        CUT if count(body, encoding) > EACH else ""
    )
