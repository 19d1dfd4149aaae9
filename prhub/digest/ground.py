"""Pure checks of what a model cites: PR numbers, paths and identifiers must be in its input."""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Callable

from prhub.github.source_payload import references
from prhub.model import DigestContent, Drop, DropReason, PullRequest
from prhub.prepare.redact import redact
from prhub.text import PR_REF, sentences

SPAN = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.\w{1,8})(?![\w/])")
EXTENSIONS = (
    r"py|pyi|ipynb|md|rst|txt|ya?ml|toml|json|cfg|ini|sh|cc?|cpp|cu|cuh|h|hpp|go|rs|js|ts"
    r"|java|proto|cmake|mk|lock"
)
# Files named without an extension, or whose whole name is the convention.
NAMES = (
    r"Makefile|GNUmakefile|Dockerfile|Containerfile|Jenkinsfile|Gemfile|Rakefile|Procfile"
    r"|Vagrantfile|Justfile|Pipfile|Snakefile|CMakeLists\.txt"
)
FILE = re.compile(rf"(?:{NAMES})(?:\.\w+)?|[\w.-]+\.(?:{EXTENSIONS})")
# A file's bare name in prose (`setup.py`, `Makefile`): not a call, an attribute, or a path's tail.
BARE = re.compile(rf"(?<![\w/.-])(?:{FILE.pattern})(?![\w/(-]|\.\w)")
# Words that say a path was only mentioned or referred to, not changed.
MENTIONED = re.compile(
    r"提到|提及|描述中|描述里|描述称|据描述|作者称|评论中|讨论中|评审中|对照|参照|参考|参见"
    r"|未修改|未改动|没有修改|没有改动|mention",
    re.IGNORECASE,
)
# Outside these a commenter's word is no claim of the PR: their numbers are not related PRs.
MAINTAINERS = ("OWNER", "MEMBER", "COLLABORATOR")
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
# ASCII only: Chinese next to an identifier separates it, as a space would.
WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*")
# A name in code shape: dotted or qualified parts, as prose may hold one outside code marks.
CODE = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")
SNAKE = re.compile(r"[A-Za-z0-9]_|_[A-Za-z0-9]")
CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]{2}")  # not a plural acronym (GPUs)
DUNDER = re.compile(r"__\w+__")
STRING = re.compile(r"\"[^\"]*\"|'[^']*'")
URL = re.compile(r"https?://\S+")
LITERALS = {"True", "False", "None", "true", "false", "null", "none", "nil"}
# Names every input has: Python's keywords and builtins, and literals.
ALWAYS = {*keyword.kwlist, *dir(builtins), "self", "cls", *LITERALS}


def pr_source(pr: PullRequest) -> str:
    """All the text a digest of `pr` may cite from: title, body, discussion, paths, diff."""
    said = [
        pr.title,
        pr.body,
        *(c.body for c in pr.discussion),
        *(c.path or "" for c in pr.discussion),
    ]
    return "\n".join([*said, changed_source(pr)])


def changed_source(pr: PullRequest) -> str:
    """The text of what `pr` changed: its paths and its diff."""
    return "\n".join(
        [*(f.path for f in pr.files), *(f.previous_path or "" for f in pr.files)]
        + [f.patch or "" for f in pr.files]
    )


def known_numbers(pr: PullRequest) -> set[int]:
    """PR and issue numbers a digest of `pr` may cite: from its title, body, discussion, diff."""
    return {*pr.referenced_issues, *references(pr_source(pr)), pr.number}


def claimed_numbers(pr: PullRequest) -> set[int]:
    """Numbers the PR itself may be related to: all it knows but those only an outsider's
    comment (no maintainer, not the PR's author) holds."""
    outside = [
        c.body for c in pr.discussion if c.association not in MAINTAINERS and c.author != pr.author
    ]
    inside = [c for c in pr.discussion if c.association in MAINTAINERS or c.author == pr.author]
    own = "\n".join([pr.title, pr.body, *(c.body for c in inside), changed_source(pr)])
    only_outside = set(references("\n".join(outside))) - set(references(own))
    return known_numbers(pr) - (only_outside - set(pr.referenced_issues))


def names(path: str, cited: str) -> bool:
    """Whether `cited` names the file at `path`: the path, its tail at a folder boundary, a
    folder it is in, or its file name without the suffix (`Dockerfile` for
    `docker/Dockerfile.ci`)."""
    cited = cited.rstrip("/")
    return (
        path == cited
        or path.endswith("/" + cited)
        or path.startswith(cited + "/")
        or path.rsplit("/", 1)[-1].startswith(cited + ".")
    )


def only_mentioned(pr: PullRequest) -> Callable[[str], bool]:
    """Whether a cited path is one the body or discussion names and the PR did not change:
    it `names` no changed file and is not in the diff's text."""
    said = "\n".join([pr.body, *(c.body for c in pr.discussion)])
    mentioned = {
        *PATH.findall(said),
        *(span.strip() for span in SPAN.findall(said) if FILE.fullmatch(span.strip())),
        *BARE.findall(PATH.sub(" ", URL.sub(" ", said))),
        *(c.path for c in pr.discussion if c.path),
    }
    mentioned |= {m.rsplit("/", 1)[-1] for m in mentioned}  # `plan.md` for `docs/plan.md`
    paths = {p for f in pr.files for p in (f.path, f.previous_path) if p}
    patches = "\n".join(f.patch or "" for f in pr.files)

    def changed(cited: str) -> bool:
        return cited in patches or any(names(p, cited) for p in paths)

    return lambda cited: cited in mentioned and not changed(cited)


def named(code: str) -> list[tuple[str, bool]]:
    """The identifier-like tokens of code, each with whether it is a fragment of a glob.

    A token is identifier-like by its spelling (snake_case, CamelCase) or by its place
    (qualified by a dot, called, given a value or a type); plain words (`pip check`),
    dunders, builtins, literals, strings and secrets are not, and need not be in the input.
    """
    code = STRING.sub('""', code)
    found = []
    for match in WORD.finditer(code):
        token, before, after = match.group(), code[: match.start()], code[match.end() :]
        if token in ALWAYS or DUNDER.fullmatch(token):
            continue
        placed = re.search(r"(?:[A-Za-z_][A-Za-z0-9_]*|[)\]])(?:\.|::)$", before) or re.match(
            r"(?:\.|::)[A-Za-z_]|\(|\s*=(?!=)|\s*:(?!:)\s*[A-Za-z_]", after
        )
        # A secret the model writes is no name it made up: scrub_reply replaces it.
        if (SNAKE.search(token) or CAMEL.search(token) or placed) and not redact(token)[1]:
            found.append((token, before.endswith("*") or after.startswith("*")))
    return found


def bare_names(text: str) -> list[tuple[str, bool]]:
    """Identifier-like tokens of a text outside its code marks, paths and links: snake_case
    names and dotted ones with a CamelCase part (a lone CamelCase word may be a product)."""
    text = PATH.sub(" ", URL.sub(" ", SPAN.sub(" ", text)))
    found = []
    for match in CODE.finditer(text):
        parts = re.split(r"\.|::", match.group())
        if any(map(SNAKE.search, parts)) or (len(parts) > 1 and any(map(CAMEL.search, parts))):
            found += named(match.group())
    return found


class _Shown:
    """What the model was shown of a PR, to judge what its digest cites."""

    def __init__(self, pr: PullRequest) -> None:
        self.text = pr_source(pr)
        self.words = set(WORD.findall(self.text))
        self.numbers = known_numbers(pr)
        self.claimed = claimed_numbers(pr)
        self.mentioned = only_mentioned(pr)

    def has(self, token: str, glob: bool) -> bool:
        return any(token in w for w in self.words) if glob else token in self.words

    def verbatim(self, cited: str) -> bool:
        """The input holds it whole: not as part of a longer name (`a.py` is not `data.py`),
        though a folder (`pkg/m0/`) may begin a path."""
        head = "(?<![A-Za-z0-9_])" if WORD.match(cited) else ""
        tail = "(?![A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", cited) else ""
        return re.search(head + re.escape(cited) + tail, self.text) is not None

    def span(self, span: str) -> DropReason | bool:
        """Why a code span cannot stand; else whether it keeps its code marks (it is verified)."""
        span = span.strip()
        if not span or self.verbatim(span):
            return True
        if PATH.fullmatch(span) or FILE.fullmatch(span):
            return "unknown_path"
        names = named(span)
        if not all(self.has(*name) for name in names):
            return "unknown_identifier"
        code = WORD.findall(STRING.sub('""', span))
        return bool(names) or any(w in LITERALS or DUNDER.fullmatch(w) for w in code)

    def fault(self, text: str, provenance: bool) -> DropReason | None:
        """Why a sentence or item cannot stand: it names a path or identifier the input never
        had, or (with provenance) shows a path the PR only mentions as changed."""
        spans = [s.strip() for s in SPAN.findall(text)]
        for span in spans:
            verdict = self.span(span)
            if isinstance(verdict, str):
                return verdict
        paths = files(text)
        if not all(map(self.verbatim, paths)):
            return "unknown_path"
        # Outside code marks a name may be a concept's: `old_log_prob` for `old_log_probs`.
        if not all(self.has(name, True) for name, _ in bare_names(text)):
            return "unknown_identifier"
        if provenance and not MENTIONED.search(text) and any(map(self.mentioned, spans + paths)):
            return "mentioned_as_changed"
        return None

    def unmark(self, text: str) -> str:
        """Code spans that cannot be verified (a command, a glob, a value) lose their marks."""
        return SPAN.sub(lambda m: m.group(0) if self.span(m.group(1)) is True else m.group(1), text)


def files(text: str) -> list[str]:
    """The paths and bare file names a text names outside its code marks and links."""
    text = URL.sub(" ", SPAN.sub(" ", text))
    return [*PATH.findall(text), *BARE.findall(PATH.sub(" ", text))]


def verified(pr: PullRequest) -> Callable[[str], bool]:
    """Whether a code span keeps its marks in a digest of `pr`: the input has it whole, or
    has every identifier-like part of it (`NCCLCheckpointEngine.__init__`)."""
    shown = _Shown(pr)
    return lambda span: shown.span(span) is True


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


def ground_digest(content: DigestContent, pr: PullRequest) -> tuple[DigestContent, list[Drop]]:
    """Drops what the digest claims that its input never had, and records each drop.

    A sentence of running text or a list item goes when it names a path, a bare file name or
    an identifier-like token that is nowhere in the input, or names a path the PR did not
    change (one its body or discussion only mentions) without saying it is only mentioned.
    A code span that cannot be verified but names nothing (a command, a glob) only loses its
    code marks. An unknown PR number goes with the clause that only points at it, else with
    its sentence or item (`excise`); the related PRs and the title keep only numbers the PR
    itself holds (not an outsider's comment alone).
    The title loses what cannot stand (an identifier outside code marks too), with a verb,
    connector or pointing clause left dangling; when what is left does not read as a title, it
    is the PR's own (which the title checks then correct).
    """
    shown = _Shown(pr)
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
            if not said and shown.mentioned(match.group(1).strip()):
                return drop(match.group(0), "mentioned_as_changed")
            return match.group(0) if verdict else match.group(1)

        def path(match: re.Match[str]) -> str:
            cited = match.group(0)
            if not shown.verbatim(cited):
                return drop(cited, "unknown_path")
            if not said and shown.mentioned(cited):
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
        """`text` as it may stand, or None when it goes; each drop recorded."""
        reason = shown.fault(text, provenance)
        left, gone = (None, []) if reason else excise(shown.unmark(text), PR_REF, known)
        if left is None:
            drops.append(Drop(field=field, text=text.strip(), reason=reason or "unknown_number"))
        else:
            drops.extend(Drop(field=field, text=g, reason="unknown_number") for g in gone)
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
