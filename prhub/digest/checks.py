"""Rules a digest must meet beyond its schema: a Chinese title, cited advice, facts kept."""

from __future__ import annotations

import re

from prhub.digest.ground import PATH, SPAN, verified
from prhub.llm.reply import example, strings
from prhub.model import DigestContent, Drop, PullRequest
from prhub.prepare.discussion import WHERE, WHO
from prhub.prepare.facts import Facts
from prhub.tags import parse_title
from prhub.text import sentences

TITLE_MAX = 40  # 字, as TITLE_RULE counts them; every reference title has 33 or fewer
TITLE_FAR = 60  # 字: a title this long is a paragraph, worth a corrective call
# The length rule, stated in these words by the prompts, the reply's example and the correction.
TITLE_RULE = f"不超过 {TITLE_MAX} 字（英文词、标识符、数字各算 1 字）"
DOCS_IMPORTANCE_MAX = 4.0  # a PR that only edits documentation is not a key change
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[A-Za-z]+")
# What TITLE_RULE counts as one 字: a Chinese character, or a word, identifier, path or number.
_UNIT = re.compile(rf"{_CJK.pattern}|[A-Za-z0-9]+(?:[_.\-/+^][A-Za-z0-9]+)*")
# Code spans, URLs, paths and identifiers (snake_case, dotted, CAPS, CamelCase): English by nature.
_CODEISH = re.compile(
    r"`[^`]*`|https?://\S+|(?:[\w.-]+/)+[\w.-]+|\b\w*[_.]\w+\b|\b[A-Z0-9]{2,}\w*\b"
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b",  # CamelCase: a class name
    re.ASCII,
)
_REVERT_WORDS = ("回滚", "撤销", "还原", "撤回", "回退", "revert")
_HANDLE = re.compile(r"@[\w.\[\]-]+")
_STATES = re.compile(r"\b(?:APPROVED|CHANGES_REQUESTED|COMMENTED|DISMISSED|[A-Z_]{4,})\b")

# Each check's name, as recorded in a digest, and what the model is told when it fails.
MESSAGES = {
    "title_multiline": "标题必须是一行。",
    "title_too_long": f"标题要短：{TITLE_RULE}。",
    "title_far_too_long": f"标题要短：{TITLE_RULE}。",
    "title_not_chinese": "标题必须用中文概括改动（标识符可以保留英文）。",
    "title_copied": "标题不能照抄 PR 的英文原标题，要用中文说明改了什么、为什么重要。",
    "advice_uncited": "阅读建议必须点名至少一个本 PR 改动的文件或标识符（用反引号）。",
    "not_chinese": "导读正文必须用中文书写（标识符可以保留英文）。",
    "revert_misread": "这个 PR 是回滚：标题和建议必须说明它撤销了什么，不能写成新增该功能。",
    "docs_overrated": f"这个 PR 只改了文档，重要性不应高于 {DOCS_IMPORTANCE_MAX:.0f}。",
    "discussion_copied": "评审讨论要点不能照抄评论原文，要用中文概括谁提出了什么、结果如何。",
}


# Each check as a reader sees it in a digest's footer when the published digest still fails it.
LABELS = {
    "title_multiline": "标题多行",
    "title_too_long": "标题过长",
    "title_far_too_long": "标题过长",
    "title_not_chinese": "标题不是中文",
    "title_copied": "标题照抄原标题",
    "advice_uncited": "建议未点名文件",
    "not_chinese": "正文不是中文",
    "revert_misread": "未说明是回滚",
    "docs_overrated": "文档改动评分偏高",
    "discussion_copied": "照抄评审原文",
}


TITLE_CHECKS = frozenset(
    {"title_multiline", "title_too_long", "title_far_too_long", "title_not_chinese", "title_copied"}
)
# Recorded in the digest but not worth a corrective call: a reader still takes the digest.
RECORDED = frozenset({"title_too_long"})


def chinese(text: str, least: int = 4) -> bool:
    """Mostly Chinese once code is set aside: `least` characters, 3 per 2 English words."""
    prose = _CODEISH.sub(" ", text)
    cjk = len(_CJK.findall(prose))
    return cjk >= least and cjk * 2 >= len(_WORD.findall(prose)) * 3


def title_length(title: str) -> int:
    """A title's length in 字 as TITLE_RULE counts them; punctuation and spaces count none."""
    return len(_UNIT.findall(title))


def needs_correction(failed: list[str]) -> bool:
    """Whether the checks failed are worth a corrective call: some a reader would reject."""
    return any(name not in RECORDED for name in failed)


def title_failures(title: str, original: str = "") -> list[str]:
    """The title checks `title` fails; `original` is the PR's own title, when known."""
    title = title.strip()
    failed = []
    if "\n" in title or "\r" in title:
        failed.append("title_multiline")
    size = title_length(title)
    if size > TITLE_MAX:
        failed.append("title_too_long" if size <= TITLE_FAR else "title_far_too_long")
    if not chinese(title):
        failed.append("title_not_chinese")
    if original and _copied(title, original):
        failed.append("title_copied")
    return failed


def text_failures(advice: str, items: list[str] | None = None) -> list[str]:
    """The text checks the advice and the listed items fail."""
    joined = "\n".join(items or [])
    if not chinese(advice, least=20) or (joined and not chinese(joined)):
        return ["not_chinese"]
    return []


def failures(content: DigestContent, pr: PullRequest, facts: Facts) -> list[str]:
    """The names of the checks `content` fails, in a stable order."""
    title = content.title.strip()
    failed = title_failures(title, pr.title)
    if pr.files and not _cites(content.advice, pr):
        failed.append("advice_uncited")
    items = [*content.design_decisions, *content.risks, *content.follow_ups]
    failed += text_failures(content.advice, items)
    said = f"{title}\n{content.advice}".lower()
    if facts.revert and not any(word in said for word in _REVERT_WORDS):
        failed.append("revert_misread")
    if facts.docs_only and content.importance > DOCS_IMPORTANCE_MAX:
        failed.append("docs_overrated")
    if any(note_fails(note) for note in content.discussion):
        failed.append("discussion_copied")
    return failed


def note_fails(note: str) -> bool:
    """A discussion note that copies the discussion back, or is not Chinese once the handles
    and review states it names are set aside."""
    said = _STATES.sub(" ", _HANDLE.sub(" ", note))
    return copied_entry(note) or not chinese(said, least=2)


def copied_entry(note: str) -> bool:
    """Whether a discussion note is a line of the prompt's discussion copied back: its
    `[kind] @who（ASSOCIATION）：` prefix, or that label followed by the comment's own English."""
    if WHERE.match(note.lstrip()):
        return True
    labelled = WHO.search(note)
    return labelled is not None and not chinese(note[labelled.end() :], least=2)


def published(
    content: DigestContent, failed: list[str], discussed: bool
) -> tuple[DigestContent, list[str]]:
    """The digest with the discussion notes it may publish, and the checks it still fails.

    Notes on a discussion the model was not shown (`discussed` false), or that copy its lines
    back, are not notes: they go, and with them the failure they alone caused (the reply that
    held them was asked once more already). A note in English stays and keeps it failing.
    """
    kept = [note for note in content.discussion if discussed and not copied_entry(note)]
    if not any(map(note_fails, kept)):
        failed = [name for name in failed if name != "discussion_copied"]
    return content.model_copy(update={"discussion": kept}), failed


def correction(failed: list[str]) -> str:
    """What the corrective call tells the model."""
    lines = "\n".join(f"- {MESSAGES[name]}" for name in failed)
    return f"上一次回复有以下问题：\n{lines}\n请修正这些问题，按同样的 JSON 格式重新输出完整结果。"


def _copied(title: str, original: str) -> bool:
    def norm(text: str) -> str:
        return re.sub(r"\W+", "", text).lower()

    theirs = norm(parse_title(original).subject)  # "[mod] fix: " says nothing of the change
    return len(theirs) >= 8 and theirs in norm(title)


def _cites(advice: str, pr: PullRequest) -> bool:
    """The advice names a file or identifier that is in the PR."""
    known = verified(pr)
    cited = [*SPAN.findall(advice), *PATH.findall(advice)]
    if any(c.strip() and known(c.strip()) for c in cited):
        return True
    names = {f.path.rsplit("/", 1)[-1] for f in pr.files}
    return any(name and name in advice for name in names)


_ECHO_SPLIT = re.compile(r"[，。、：；,.:;（）()<>\s]+")


def _echo_clauses() -> frozenset[str]:
    """Clauses of five or more Chinese characters of the example's notes and of the corrective
    messages: a reply that repeats one copied the prompt instead of answering it."""
    example_notes = [s for s in strings(example(DigestContent)) if s.startswith("<")]
    return frozenset(
        clause
        for text in [*example_notes, *MESSAGES.values()]
        for clause in _ECHO_SPLIT.split(text)
        if len(_CJK.findall(clause)) >= 5
    )


def unechoed(content: DigestContent) -> tuple[DigestContent, list[Drop]]:
    """The digest without the sentences and items that repeat the prompt's own instructions
    (a small model hands back "值不值得读、读哪里、为什么，先结论…"), each recorded."""
    clauses = _echo_clauses()
    drops: list[Drop] = []

    def echoes(text: str) -> bool:
        return any(c in text for c in clauses)

    def prose(field: str, text: str) -> str:
        kept = []
        for sentence in sentences(text):
            if echoes(sentence):
                drops.append(Drop(field=field, text=sentence.strip(), reason="echoed_prompt"))
            else:
                kept.append(sentence)
        return "".join(kept).strip()

    def items(field: str, values: list[str]) -> list[str]:
        drops.extend(Drop(field=field, text=v, reason="echoed_prompt") for v in values if echoes(v))
        return [v for v in values if not echoes(v)]

    lists = ("design_decisions", "risks", "follow_ups", "discussion")
    update: dict[str, object] = {f: items(f, getattr(content, f)) for f in lists}
    update |= {f: prose(f, getattr(content, f)) for f in ("advice", "importance_reason")}
    return (content.model_copy(update=update) if drops else content), drops
