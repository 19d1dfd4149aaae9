"""Rules a digest must meet beyond its schema: a Chinese title, cited advice, facts kept."""

from __future__ import annotations

import re
from functools import cache

from prhub.digest.claims import PATH, SPAN, verified
from prhub.llm.prompt import load_prompt
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
    "verdict_overrated": "这个 PR 没有改手写代码（只改了文档、配置、CI 或依赖版本），"
    "或者改动极小，阅读建议不应是“精读”，应为“快速浏览”或“可跳过”。",
    "discussion_copied": "评审讨论要点不能照抄评论原文，要用中文概括谁提出了什么、结果如何。",
    "advice_empty": "阅读建议（advice）不能为空：用中文写明值不值得读、读哪里、为什么。",
    "title_empty": "标题不能为空：用一句中文概括改了什么、为什么重要。",
    "reason_empty": "重要性理由（importance_reason）不能为空：用一句中文说明理由。",
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
    "verdict_overrated": "阅读建议偏高",
    "discussion_copied": "照抄评审原文",
    "advice_empty": "阅读建议为空",
    "title_empty": "标题为空",
    "reason_empty": "重要性理由为空",
}


TITLE_CHECKS = frozenset(
    {
        "title_multiline",
        "title_too_long",
        "title_far_too_long",
        "title_not_chinese",
        "title_copied",
        "title_empty",
    }
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
    if not title:
        return ["title_empty"]
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
    """The text checks the advice and the listed items fail: empty advice is said as such,
    not as advice that is not Chinese."""
    joined = "\n".join(items or [])
    failed = [] if advice.strip() else ["advice_empty"]
    if (advice.strip() and not chinese(advice, least=20)) or (joined and not chinese(joined)):
        failed.append("not_chinese")
    return failed


def verdict_overrated(verdict: str, facts: Facts) -> bool:
    """精读 for a PR with no hand-written code, or a tiny one: what it changed tells a reader
    a glance is enough, as importance is capped for documentation."""
    tiny = facts.size.startswith("微小")
    return verdict == "精读" and (facts.docs_only or not facts.code_touched or tiny)


def failures(content: DigestContent, pr: PullRequest, facts: Facts) -> list[str]:
    """The names of the checks `content` fails, in a stable order."""
    title = content.title.strip()
    failed = title_failures(title, pr.title)
    if pr.files and content.advice.strip() and not _cites(content.advice, pr):
        failed.append("advice_uncited")
    items = [*content.design_decisions, *content.risks, *content.follow_ups]
    failed += text_failures(content.advice, items)
    said = f"{title}\n{content.advice}".lower()
    if facts.revert and not any(word in said for word in _REVERT_WORDS):
        failed.append("revert_misread")
    if facts.docs_only and content.importance > DOCS_IMPORTANCE_MAX:
        failed.append("docs_overrated")
    if verdict_overrated(content.verdict, facts):
        failed.append("verdict_overrated")
    if not content.importance_reason.strip():
        failed.append("reason_empty")
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


_ECHO_SPLIT = re.compile(r"[，。、：；,.:;（）()<>“”‘’\"'\s]+")  # quotes too: ‘精读’ is “精读”
_ECHO_KEEP = re.compile(r"([，。、：；,.:;（）()<>]+)")
ANSWERED = 4  # Chinese characters a sentence keeps, its copied words cut, to still say something
# Corrections that state a fact of the PR, which a digest may say in its own words too: only
# their instructions (the clauses that say what should be, 应) are an echo when copied.
_FACTUAL = ("docs_overrated", "verdict_overrated")


@cache
def _prompt_texts() -> tuple[str, ...]:
    """The example's notes and the corrective messages: the prompt's words a reply may copy."""
    notes = [s for s in strings(example(DigestContent)) if s.startswith("<")]
    return (*notes, *MESSAGES.values())


@cache
def _instructions() -> str:
    """The digest prompt's own instructions, as shipped, without separators."""
    return _ECHO_SPLIT.sub("", load_prompt("digest").source)


@cache
def _echo_clauses() -> frozenset[str]:
    """Clauses of five or more Chinese characters of the example's notes and of the corrective
    messages: a reply that repeats one copied the prompt instead of answering it."""
    factual = {MESSAGES[name] for name in _FACTUAL}
    return frozenset(
        clause
        for text in _prompt_texts()
        for clause in _ECHO_SPLIT.split(text)
        if len(_CJK.findall(clause)) >= 5 and (text not in factual or "应" in clause)
    )


def uncopied(text: str) -> tuple[str, str]:
    """`text` without the prompt's words it copies, and those words; ("", text) when nothing
    is left that says something, (text, "") when it copies none.

    A clause of the prompt repeated ("值不值得读") goes with the clauses next to it that the
    prompt holds too ("、读哪里、为什么："); what the model wrote around them stays."""
    pieces = _ECHO_KEEP.split(text)
    clauses = [
        (pieces[i], pieces[i + 1] if i + 1 < len(pieces) else "") for i in range(0, len(pieces), 2)
    ]

    def bare(text: str) -> str:
        return _ECHO_SPLIT.sub("", text)

    prompts = [bare(t) for t in _prompt_texts()]

    def copied(run: range) -> bool:  # the clauses of `run`, read together, are the prompt's
        said = bare("".join(clauses[k][0] for k in run))
        return bool(said) and any(said in t for t in prompts)

    echoed = [i for i, (c, _) in enumerate(clauses) if any(e in c for e in _echo_clauses())]
    if not echoed:
        return text, ""

    def instructed(k: int) -> bool:  # a clause of the instructions, not a word or two
        said = bare(clauses[k][0])
        return len(_CJK.findall(said)) >= 3 and said in _instructions()

    cut: set[int] = set()
    for i in echoed:  # each echo with the clauses around it that continue the prompt's text
        lo, hi = i, i + 1
        while lo > 0 and (copied(range(lo - 1, hi)) or instructed(lo - 1)):
            lo -= 1
        while hi < len(clauses) and (copied(range(lo, hi + 1)) or instructed(hi)):
            hi += 1
        cut.update(range(lo, hi))
    left = "".join(c + sep for i, (c, sep) in enumerate(clauses) if i not in cut)
    left = re.sub(r"^[，。、：；,.:;\s]+", "", left)
    said = "".join(c + sep for i, (c, sep) in enumerate(clauses) if i in cut).strip()
    if len(_CJK.findall(left)) < ANSWERED:
        return "", text.strip()
    return left, said


def unechoed(content: DigestContent) -> tuple[DigestContent, list[Drop]]:
    """The digest without the prompt's own instructions a reply hands back ("值不值得读、读哪里、
    为什么，先结论…"): the copied words go, and the sentence or item with them only when
    nothing else is left in it; each cut recorded."""
    drops: list[Drop] = []

    def cut(field: str, text: str) -> str:
        left, copied = uncopied(text)
        if copied:
            drops.append(Drop(field=field, text=copied, reason="echoed_prompt"))
        return left

    def prose(field: str, text: str) -> str:
        return "".join(cut(field, sentence) for sentence in sentences(text)).strip()

    def items(field: str, values: list[str]) -> list[str]:
        return [left for v in values if (left := cut(field, v))]

    lists = ("design_decisions", "risks", "follow_ups", "discussion")
    update: dict[str, object] = {f: items(f, getattr(content, f)) for f in lists}
    update |= {f: prose(f, getattr(content, f)) for f in ("advice", "importance_reason")}
    return (content.model_copy(update=update) if drops else content), drops
