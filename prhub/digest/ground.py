"""Grounding a digest: what its text claims that the input does not back goes, each change
recorded; a PR number that cannot stand goes with the clause that only points at it."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from prhub.digest.claims import BARE, CODE, MENTIONED, PATH, SPAN, Shown, Span, bare_names
from prhub.model import DigestContent, Drop, DropReason, Neighbour, PullRequest
from prhub.text import PR_REF, sentences

# A verb whose object a title loses goes with it, and so does a connector left dangling.
VERB = (
    r"(?:删除|删去|移除|修改|修复|修正|重写|改写|更新|新增|添加|增加|重构|改动|调整|替换|实现"
    r"|引入|拆分|合并)"
)
CONNECTOR = r"(?:并且|以及|并|和|与|及|、|，|,|；|;|:|：|/|&|\+|and)"
# Words that only point at what they cite: a clause of these alone goes with its citation.
POINTER = r"(?:另见|参见|详见|参考|参照|以及|见|及|和|与|或|、|see also|see|cf\.|and|or)"
GONE = "\0"  # where a citation that cannot stand was
_POINTING = rf"(?:[^\S\n]|{POINTER}|{GONE})*"
# A clause of pointers and gone citations alone: after a clause mark, an opening bracket or at
# the start, up to the next mark, closing bracket or the end.
POINTING_CLAUSE = re.compile(
    rf"(?:[，,、；;]|^|(?<=[（(])){_POINTING}{GONE}{_POINTING}(?=[，,、；;。！？!?.）)\n]|$)"
)


def excise(
    text: str, cited: re.Pattern[str], stands: Callable[[re.Match[str]], bool]
) -> tuple[str | None, list[str]]:
    """`text` without the citations of `cited` that do not stand, and those citations.

    The rule for running text and list items: a citation that cannot stand goes with the
    clause around it when that clause only points at it ("另见 #999", "（见 #999）", "、#999");
    a text that held one anywhere else goes whole (None), as what is left would not read
    ("与 冲突", "共 个 PR").
    """
    gone: list[str] = []

    def mark(match: re.Match[str]) -> str:
        if stands(match):
            return match.group(0)
        gone.append(match.group(0))
        return GONE

    marked = cited.sub(mark, text)
    if not gone:
        return text, []
    left = re.sub(r"[（(]\s*[）)]", "", POINTING_CLAUSE.sub("", marked))
    left = re.sub(r"^(\s*)[，,、；;：:]\s*", r"\1", left)
    left = re.sub(r"[ \t]+(?=[，,、；;。！？!?.：:）)]|$)", "", left)
    left = re.sub(r"[ \t]{2,}", " ", left)
    if GONE in left or not re.sub(rf"{POINTER}|[\W_]", "", left):
        return None, gone
    return left, gone


def mend(title: str) -> str:
    """A title without the citations GONE marks, by the rule of `excise`: a clause that only
    points at one goes with it, and so does a verb or connector left without its object.
    Empty when what is left does not read as a title: a word follows a citation that went
    ("缓存 X 的权重", "为 X 添加测试", "新增 X 参数")."""
    title = re.sub(r"[（(]\s*[）)]", "", POINTING_CLAUSE.sub("", title))
    title = re.sub(rf"{VERB}?\s*{GONE}", GONE, title)
    title = re.sub(rf"\s*{CONNECTOR}?\s*{GONE}\s*", GONE, title)
    if re.search(rf"{GONE}+(?!{CONNECTOR})\w", title):  # it began or ended a phrase
        return ""
    title = re.sub(rf"(?<=[\u4e00-\u9fff]){GONE}+(?=[\u4e00-\u9fff])", "", title)
    title = re.sub(rf"{GONE}+", " ", title)
    edge = rf"(?:{CONNECTOR}|的|[\s.。!！?？-])+"
    title = re.sub(rf"^{edge}|{edge}$", "", re.sub(r"  +", " ", title)).strip()
    rest = re.sub(rf"{VERB}|{CONNECTOR}|的|[\s\W]", "", title)
    if not rest or re.search(rf"{VERB}$", title):
        return ""
    return title


def ground_digest(
    content: DigestContent, pr: PullRequest, neighbours: Sequence[Neighbour] = ()
) -> tuple[DigestContent, list[Drop]]:
    """Drops what the digest claims that its input never had, and records each drop.

    A sentence of running text or a list item goes when it names a path, a bare file name or
    an identifier-like token that is nowhere in the input, or names a path the PR did not
    change (one its body or discussion only mentions) without saying it is only mentioned.
    A code span that names nothing to verify (a command, a value, a glob) keeps its code marks;
    one that cannot be verified and on which no claim rests (a plain word, a shorthand for a
    longer name of the input) only loses them, recorded as "unverified_span". The PRs of
    `neighbours` were shown to the model: their numbers may be cited and are related, and
    the names in their titles may be cited too. An unknown PR number goes with the clause that
    only points at it, else with its sentence or item (`excise`); the related PRs and the
    title keep only numbers the PR itself holds (not an outsider's comment alone).
    The title loses what cannot stand (an identifier outside code marks too), with a verb,
    connector or pointing clause left dangling; when what is left does not read as a title, it
    is the PR's own (which the title checks then correct).
    """
    shown = Shown(pr, neighbours)
    drops: list[Drop] = []

    def title(text: str) -> str:
        said = MENTIONED.search(text) is not None

        def drop(cited: str, reason: DropReason) -> str:
            drops.append(Drop(field="title", text=cited, reason=reason))
            return GONE  # until the title is mended around it

        def span(match: re.Match[str]) -> str:
            verdict = shown.span(match.group(1))
            if isinstance(verdict, str):
                return drop(match.group(0), verdict)
            if not said and shown.claims_change(text, match.group(1).strip()):
                return drop(match.group(0), "mentioned_as_changed")
            if verdict is Span.UNMARKED:
                drops.append(Drop(field="title", text=match.group(0), reason="unverified_span"))
                return match.group(1)
            return match.group(0)

        def path(match: re.Match[str]) -> str:
            cited = match.group(0)
            if not shown.verbatim(cited):
                return drop(cited, "unknown_path")
            if not said and shown.claims_change(text, cited):
                return drop(cited, "mentioned_as_changed")
            return cited

        def number(match: re.Match[str]) -> str:
            if int(match.group(1)) in shown.claimed:
                return match.group(0)
            return drop(match.group(0), "unknown_number")

        def name(match: re.Match[str]) -> str:
            if all(shown.has(n, True) for n, _ in bare_names(match.group(0))):
                return match.group(0)
            return drop(match.group(0), "unknown_identifier")

        def outside_spans(text: str, pattern: re.Pattern[str], f: Callable[..., str]) -> str:
            parts = re.split(r"(`[^`\n]+`)", text)
            return "".join(p if i % 2 else pattern.sub(f, p) for i, p in enumerate(parts))

        text = SPAN.sub(span, text)
        text = outside_spans(text, PATH, path)
        text = outside_spans(text, BARE, path)
        text = outside_spans(text, PR_REF, number)
        text = outside_spans(text, CODE, name)
        if GONE not in text:
            return re.sub(r"  +", " ", text).strip()
        mended = mend(text)
        return mended if mended else pr.title.strip()

    def known(match: re.Match[str]) -> bool:
        return int(match.group(1)) in shown.numbers

    def judged(field: str, text: str, provenance: bool) -> str | None:
        """`text` as it may stand, or None when it goes; each drop and unmarked span recorded.
        A follow-up proposes work: the names it suggests need not exist, and a file it would
        change is no claim that the PR changed it."""
        suggests = field == "follow_ups"
        reason = shown.fault(text, provenance and not suggests, suggests)
        unmarked, plain = shown.unmark(text)
        left, gone = (None, []) if reason else excise(unmarked, PR_REF, known)
        if left is None:
            drops.append(Drop(field=field, text=text.strip(), reason=reason or "unknown_number"))
        else:
            drops.extend(Drop(field=field, text=g, reason="unknown_number") for g in gone)
            drops.extend(Drop(field=field, text=p, reason="unverified_span") for p in plain)
        return left

    def prose(field: str, text: str) -> str:
        kept = [judged(field, sentence, True) for sentence in sentences(text)]
        return "".join(k for k in kept if k is not None).strip()

    def items(field: str, values: list[str], provenance: bool) -> list[str]:
        kept = [judged(field, item, provenance) for item in values]
        return [k for k in kept if k is not None]

    def related(values: list[int]) -> list[int]:
        kept = []
        for n in dict.fromkeys(values):
            if n in shown.claimed - {pr.number}:
                kept.append(n)
            else:
                drops.append(Drop(field="related_prs", text=f"#{n}", reason="unknown_number"))
        return kept

    grounded = content.model_copy(
        update={
            "title": title(content.title),
            "advice": prose("advice", content.advice),
            "importance_reason": prose("importance_reason", content.importance_reason),
            "design_decisions": items("design_decisions", content.design_decisions, True),
            "risks": items("risks", content.risks, True),
            "follow_ups": items("follow_ups", content.follow_ups, True),
            "discussion": items("discussion", content.discussion, True),
            "related_prs": related(content.related_prs),
        }
    )
    return grounded, drops
