"""What a report says of where it came from and what it failed: footers, check names, markers."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from zoneinfo import ZoneInfo

from prhub.digest.checks import LABELS
from prhub.model import Drop, PRDigest, WeeklyReport
from prhub.publish.parts import Flag, Part, Words

# Why grounding dropped something, as the footer says it, in the order it lists them.
DROP_REASONS = {
    "unknown_path": "输入中没有的路径",
    "unknown_identifier": "输入中没有的标识符",
    "mentioned_as_changed": "把仅被提及的文件说成改动",
    "unknown_number": "输入中没有的编号",
    "echoed_prompt": "照抄提示词",
    "no_previous": "没有上期报告的跟进",
    "not_taken_up": "未引用本期 PR 的跟进",
}


def local_time(moment: datetime | None, tz: str) -> str:
    return moment.astimezone(ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M") if moment else "未合并"


def digest_footer(d: PRDigest) -> str:
    """The digest's provenance as plain text: prompt, model, usage and what the model saw."""
    meta, cov = d.meta, d.meta.coverage
    seen = (
        f"模型看到：全文 {len(cov.full)}、节选 {len(cov.excerpt)}、仅列名 {len(cov.listed)}、"
        f"排除 {len(cov.excluded)} 个文件（变更行 {math.floor(cov.share_seen * 100)}%）"
        + (f"，其中生成或第三方文件 {len(cov.generated)} 个" if cov.generated else "")
        + (f"，GitHub 未列出 {cov.unlisted} 个" if cov.unlisted else "")
        + (f"；评审讨论 {cov.comments_shown}/{cov.comments} 条" if cov.comments else "")
        + (f"；{cov.notes_shortened} 段笔记超长，已按整条删减" if cov.notes_shortened else "")
    )
    parts = [
        meta.prompt,
        meta.model,
        f"{meta.usage.calls} 次调用",
        f"输入 {meta.usage.tokens_in:,} / 输出 {meta.usage.tokens_out:,} tokens",
        seen,
    ]
    if meta.redactions:
        parts.append(f"脱敏 {sum(meta.redactions.values())} 处")
    if meta.dropped_citations:
        parts.append(f"删去无据引用 {meta.dropped_citations} 处" + dropped_why(d))
    if meta.unmarked:
        parts.append(f"去掉无法核实的代码标记 {len(meta.unmarked)} 处")
    if meta.failed_checks:
        parts.append(f"未通过检查：{failed_checks(d)}")
    return " · ".join(parts)


def failed_checks(d: PRDigest) -> str:
    """The checks a digest failed, as a reader names them: 标题过长、未说明是回滚."""
    return _named(d.meta.failed_checks)


def _named(checks: Iterable[str]) -> str:
    return "、".join(dict.fromkeys(LABELS.get(name, name) for name in checks))


MARKER = "⚠ 未通过检查"


def flag(checks: dict[int, list[str]]) -> tuple[Part, ...]:
    """A row's marker, after a space, naming the checks its PRs' digests failed (`checks`, by
    PR); nothing when all passed."""
    failed = {n: names for n, names in checks.items() if names}
    if not failed:
        return ()
    one = len(checks) == 1
    why = "；".join(
        _named(names) if one else f"#{n} {_named(names)}" for n, names in failed.items()
    )
    return (Words(" "), Flag(MARKER, f"未通过检查：{why}"))


def dropped_why(d: PRDigest) -> str:
    """What grounding dropped from a digest, by reason; nothing for one stored without it."""
    return _why(d.meta.dropped)


def _why(dropped: Iterable[Drop]) -> str:
    reasons = Counter[str](drop.reason for drop in dropped)
    why = "、".join(f"{label} {reasons[r]}" for r, label in DROP_REASONS.items() if reasons[r])
    return f"（{why}）" if why else ""


def weekly_footer(r: WeeklyReport) -> str:
    """The report's provenance as plain text: prompt, model, and what its content cost to make.

    The usage is that of the digests and narrative shown, whichever run made them, so a rerun
    that makes nothing new prints the same footer.
    """
    meta = r.meta
    parts = [
        meta.prompt,
        meta.model,
        f"导读与周报共调用 {meta.usage.calls} 次",
        f"输入 {meta.usage.tokens_in:,} / 输出 {meta.usage.tokens_out:,} tokens",
    ]
    if meta.dropped_citations:
        parts.append(f"删去无据引用 {meta.dropped_citations} 处" + _why(meta.dropped))
    return " · ".join(parts)
