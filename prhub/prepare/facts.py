"""What prhub knows about a PR without a model: reverts, size, added and deleted files, tests."""

from __future__ import annotations

import re
from dataclasses import dataclass

from prhub import paths
from prhub.model import PullRequest
from prhub.tags import parse_title
from prhub.text import refs

QUOTED = re.compile(r"""\s*revert\s*(["'])""", re.I)  # GitHub's `Revert "title (#N)"`
REVERT_COMMIT = re.compile(r"^\s*This reverts commit\b(?:\s+([0-9a-f]{7,40})\b)?", re.I | re.M)
REVERTS = re.compile(r"\breverts?\s+$", re.I)  # before the PR it names: `Reverts #12`
SQUASHED = re.compile(r"\($")  # a squash title's `(#12)`
# Changed lines at or under each bound, and the size class named for it.
SIZES = ((10, "微小"), (100, "小"), (500, "中"), (2000, "大"))
NAMED = 8  # files named per list in the prompt; the rest are counted


@dataclass(frozen=True)
class Facts:
    """A PR's computed facts, which the model is told and its digest is checked against."""

    revert: bool
    reverted: int | None  # the PR it reverts, when the title or body names it
    size: str
    added: list[str]
    deleted: list[str]
    tests_touched: bool
    code_touched: bool
    generated: list[str]  # generated and lock files
    vendored: list[str]
    docs_only: bool

    def lines(self) -> list[str]:
        """The facts as short Chinese statements for the prompt."""
        out = []
        if self.revert:
            target = f" #{self.reverted}" if self.reverted else ""
            what = target or "之前的改动"
            out.append(f"这是一个回滚（revert）PR：它撤销{what}，而不是新增功能。")
        out.append(f"规模：{self.size}。")
        if self.added:
            out.append("新增文件：" + _names(self.added))
        if self.deleted:
            out.append("删除文件：" + _names(self.deleted))
        if self.code_touched:
            out.append("改动了测试文件。" if self.tests_touched else "没有改动任何测试文件。")
        if self.generated:
            out.append("自动生成的文件（不要当作手写代码评价）：" + _names(self.generated))
        if self.vendored:
            out.append("第三方（vendored）文件（不是本仓库手写）：" + _names(self.vendored))
        if self.docs_only:
            out.append("只改了文档，没有代码改动。")
        return out


def revert_target(pr: PullRequest, repo: str | None = None) -> tuple[bool, int | None]:
    """Whether `pr` is a revert (by its title or git's message), and the PR it says it reverts."""
    if not (parse_title(pr.title).revert or REVERT_COMMIT.search(pr.body)):
        return False, None
    reverted = None
    title = QUOTED.match(pr.title)
    if title:
        quote = title.group(1)
        quoted = pr.title[title.end() :]
        # GitHub may cut a long title, losing the closing quote; then read to the end.
        quoted = quoted[: quoted.rfind(quote)] if quote in quoted else quoted
        numbers = [n for n in refs(quoted, after=SQUASHED) if f"(#{n})" in quoted]
        reverted = numbers[-1] if numbers else None  # squash titles end with (#N)
    if reverted is None:
        named = refs(f"{pr.title}\n{pr.body}", repo or pr.repo, after=REVERTS)  # Reverts #12
        reverted = named[0] if named else None
    return True, None if reverted == pr.number else reverted


def pr_facts(pr: PullRequest) -> Facts:
    """The facts of one PR, from its title, body and file list."""
    is_revert, reverted = revert_target(pr)
    kinds = {f.path: paths.of(f) for f in pr.files}
    made = [f for f in pr.files if kinds[f.path] in paths.MACHINE_MADE]
    # The size class counts hand-written lines: a regenerated config says nothing of the work.
    made_adds, made_dels = sum(f.additions for f in made), sum(f.deletions for f in made)
    adds, dels = max(0, pr.additions - made_adds), max(0, pr.deletions - made_dels)
    size = next((name for bound, name in SIZES if adds + dels <= bound), "超大")
    lines = f"+{pr.additions}/-{pr.deletions}"
    if made:
        lines = f"手写 +{adds}/-{dels}，另有生成或第三方文件 +{made_adds}/-{made_dels}"
    hand = [k for k in kinds.values() if k not in paths.MACHINE_MADE]
    return Facts(
        revert=is_revert,
        reverted=reverted,
        size=f"{size}（{lines}，{len(pr.files)} 个文件）",
        added=[f.path for f in pr.files if f.status == "added"],
        deleted=[f.path for f in pr.files if f.status == "removed"],
        tests_touched=any(k == "test" for k in hand),
        code_touched=any(k == "code" for k in hand),
        generated=[p for p, k in kinds.items() if k in ("generated", "lock")],
        vendored=[p for p, k in kinds.items() if k == "vendored"],
        docs_only=bool(hand) and all(k == "docs" for k in hand),
    )


def _names(items: list[str]) -> str:
    shown = "，".join(items[:NAMED])
    return shown + (f" 等 {len(items)} 个" if len(items) > NAMED else "")
