"""What a digest's text names, and whether its input backs it: paths, file names, identifiers,
code spans and PR numbers, judged against what the model was shown."""

from __future__ import annotations

import builtins
import keyword
import re
import sys
from collections.abc import Callable, Sequence
from enum import Enum

from prhub.github.source_payload import references
from prhub.model import DropReason, Neighbour, PullRequest
from prhub.prepare.redact import redact

SPAN = re.compile(r"`([^`\n]+)`")
# A number pair or a version pair (`3.10/3.11`, `v0.25/v0.26`) is no path.
VERSIONS = r"(?:v?\d+(?:\.\d+)*/)+v?\d+(?:\.\d+)*(?![\w/.])"
PATH = re.compile(rf"(?<![\w/.-])(?!{VERSIONS})((?:[\w.-]+/)+[\w.-]+\.\w{{1,8}})(?![\w/])")
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
# Words that say a file was changed: a bare file name claims a changed file only with one.
CHANGED = re.compile(
    r"删除|删去|删掉|移除|修改|修复|修正|重写|改写|更新|新增|添加|增加|重构|改动|调整|替换"
    r"|引入|拆分|合并|改成|改为|改了|换了|换成|写入|加入"
    r"|\b(?:rewrit|renam|delet|remov|updat|modifi|add(?:s|ed)?\b)",
    re.IGNORECASE,
)
NEGATED = re.compile(r"未|没|不|无需|无须")  # just before a change word: it says none was made
_CLAUSE = re.compile(r"[，,；;。！？!?\n]")
# Outside these a commenter's word is no claim of the PR: their numbers are not related PRs.
MAINTAINERS = ("OWNER", "MEMBER", "COLLABORATOR")
# ASCII only: Chinese next to an identifier separates it, as a space would.
WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]*")
# A name in code shape: dotted or qualified parts, as prose may hold one outside code marks.
CODE = re.compile(r"(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*")
SNAKE = re.compile(r"[A-Za-z0-9]_|_[A-Za-z0-9]")
CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]{2}")  # not a plural acronym (GPUs)
DUNDER = re.compile(r"__\w+__")
STRING = re.compile(r"\"[^\"]*\"|'[^']*'")
URL = re.compile(r"https?://\S+")
PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
LITERALS = {"True", "False", "None", "true", "false", "null", "none", "nil"}
# Names every input has: Python's keywords and builtins, and literals.
ALWAYS = {*keyword.kwlist, *dir(builtins), "self", "cls", *LITERALS}


class Span(Enum):
    """What grounding does with a code span it can stand."""

    VERIFIED = "verified"  # the input has it: it keeps its code marks
    KEPT = "kept"  # a command, a value, a glob: it names nothing to verify, and keeps its marks
    UNMARKED = "unmarked"  # a plain word or a shorthand it cannot verify: shown as plain text


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


def only_mentioned(pr: PullRequest) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    """Whether a cited path is one the body or discussion names and the PR did not change
    (it `names` no changed file and is not in the diff's text); and whether it is such a path
    that no more than an outsider's comment names (not the body, its author or a maintainer)."""
    said = "\n".join([pr.body, *(c.body for c in pr.discussion)])
    mentioned = _mentioned(pr, said)
    inside = [
        c.body for c in pr.discussion if c.author == pr.author or c.association in MAINTAINERS
    ]
    outside = mentioned - _mentioned(pr, "\n".join([pr.body, *inside]))
    paths = {p for f in pr.files for p in (f.path, f.previous_path) if p}
    patches = "\n".join(f.patch or "" for f in pr.files)

    def changed(cited: str) -> bool:
        return cited in patches or any(names(p, cited) for p in paths)

    return (
        lambda cited: cited in mentioned and not changed(cited),
        lambda cited: cited in outside and not changed(cited),
    )


def _mentioned(pr: PullRequest, said: str) -> set[str]:
    mentioned = {
        *PATH.findall(said),
        *(span.strip() for span in SPAN.findall(said) if FILE.fullmatch(span.strip())),
        *BARE.findall(PATH.sub(" ", URL.sub(" ", said))),
        *(c.path for c in pr.discussion if c.path),
    }
    return mentioned | {m.rsplit("/", 1)[-1] for m in mentioned}  # `plan.md` of `docs/plan.md`


def says_changed(text: str, name: str) -> bool:
    """Whether a clause of `text` that names the bare file `name` says it was changed."""
    return any(
        not NEGATED.search(clause[max(0, m.start() - 4) : m.start()])
        for clause in _CLAUSE.split(text)
        if name in clause
        for m in CHANGED.finditer(clause)
    )


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


class Shown:
    """What the model was shown of a PR (and of its neighbours), to judge what its digest
    cites."""

    def __init__(self, pr: PullRequest, neighbours: Sequence[Neighbour] = ()) -> None:
        # A neighbour's title and its digest's title were shown: their names may be cited.
        told = [f"#{n.number} {n.title} {n.digest_title}" for n in neighbours]
        self.text = "\n".join([pr_source(pr), *told])
        self.words = set(WORD.findall(self.text))
        related = {n.number for n in neighbours}
        self.numbers = known_numbers(pr) | related
        self.claimed = claimed_numbers(pr) | related
        self.mentioned, self.steered = only_mentioned(pr)

    def has(self, token: str, glob: bool) -> bool:
        return any(token in w for w in self.words) if glob else token in self.words

    def shorthand(self, token: str) -> bool:
        """A token the input has only as part of a longer name (`_a2` of `npu_a2`,
        `world_size` of `get_world_size`): the model's short name for it, not an invented one."""
        if token.strip("_") != token:
            return any(token in w and token != w for w in self.words)
        return any(w.endswith("_" + token) or w.startswith(token + "_") for w in self.words)

    def verbatim(self, cited: str) -> bool:
        """The input holds it whole: not as part of a longer name (`a.py` is not `data.py`),
        though a folder (`pkg/m0/`) may begin a path."""
        head = "(?<![A-Za-z0-9_])" if WORD.match(cited) else ""
        tail = "(?![A-Za-z0-9_])" if re.search(r"[A-Za-z0-9_]$", cited) else ""
        return re.search(head + re.escape(cited) + tail, self.text) is not None

    def span(self, span: str) -> DropReason | Span:
        """Why a code span cannot stand; else how it stands (Span)."""
        span = span.strip()
        if not span or self.verbatim(span):
            return Span.VERIFIED
        if PATH.fullmatch(span) or FILE.fullmatch(span):
            return "unknown_path"
        found = named(span)
        missing = [name for name, glob in found if not self.has(name, glob)]
        if missing:
            return Span.UNMARKED if all(map(self.shorthand, missing)) else "unknown_identifier"
        code = WORD.findall(STRING.sub('""', span))
        if found or any(w in LITERALS or DUNDER.fullmatch(w) for w in code):
            return Span.VERIFIED
        # Nothing to verify: a plain word loses its marks; a command or a value keeps them.
        return Span.UNMARKED if PLAIN_WORD.fullmatch(span) else Span.KEPT

    def claims_change(self, text: str, cited: str) -> bool:
        """Whether `text` shows `cited`, a path the PR only mentions, as changed: a path with
        its folder does unless the text says it is only mentioned; a bare file name only in
        a clause that says it was changed."""
        if not self.mentioned(cited) or MENTIONED.search(text):
            return False
        return "/" in cited or says_changed(text, cited)

    def fault(self, text: str, provenance: bool, suggests: bool = False) -> DropReason | None:
        """Why a sentence or item cannot stand: it names a path or identifier the input never
        had, or (with provenance) shows a path the PR only mentions as changed.

        A name the input lacks rests no claim on the PR, and stands with its marks, where the
        text `suggests` (a follow-up proposes names to write), says the PR lacks it (`没有调用
        `shutdown_asyncgens()``), or calls it on a module the input imports or the standard
        library (`os.getpid()`, `torch.npu.set_device`)."""
        spans = [(m.start(), m.group(1).strip()) for m in SPAN.finditer(text)]
        for at, span in spans:
            verdict = self.span(span)
            if verdict == "unknown_identifier" and (
                suggests or denied(text, at) or self.outside_api(span)
            ):
                continue
            if isinstance(verdict, str):
                return verdict
        paths = files(text)
        if not all(map(self.verbatim, paths)):
            return "unknown_path"
        # Outside code marks a name may be a concept's: `old_log_prob` for `old_log_probs`.
        if not suggests and not all(self.has(name, True) for name, _ in bare_names(text)):
            return "unknown_identifier"
        cited = [span for _, span in spans] + paths
        if provenance and any(self.claims_change(text, c) for c in cited):
            return "mentioned_as_changed"
        # What to do next may name a file the PR left alone, but not one only an outsider named.
        if suggests and any(map(self.steered, cited)):
            return "mentioned_as_changed"
        return None

    def outside_api(self, span: str) -> bool:
        """Whether the span calls a name on a module from outside the repository: one of
        Python's standard library, or one the input imports (`import torch`, `from torch
        import nn`, `import numpy as np`)."""
        root = CODE.match(span)
        if root is None or not re.match(r"[A-Za-z_]\w*(?:\.|::)", span):
            return False
        name = re.split(r"\.|::", root.group())[0]
        if name in sys.stdlib_module_names:
            return True
        imports = rf"(?m)^[+\- ]?\s*(?:import\s+[\w.]+\s+as\s+{name}\b|import\s+{name}\b"
        imports += rf"|from\s+[\w.]+\s+import\s+[^\n]*\b{name}\b)"
        return re.search(imports, self.text) is not None

    def unmark(self, text: str) -> tuple[str, list[str]]:
        """The text with the code spans it cannot verify and that name nothing (a plain word,
        a shorthand) as plain text; and those spans."""
        gone: list[str] = []

        def plain(m: re.Match[str]) -> str:
            if self.span(m.group(1)) is Span.UNMARKED:
                gone.append(m.group(0))
                return m.group(1)
            return m.group(0)

        return SPAN.sub(plain, text), gone


def denied(text: str, at: int) -> bool:
    """Whether the words just before position `at` of `text` say something is not there or
    not done: `没有调用 …`, `不含 …`, `未设置 …`."""
    return NEGATED.search(_CLAUSE.split(text[max(0, at - 8) : at])[-1]) is not None


def files(text: str) -> list[str]:
    """The paths and bare file names a text names outside its code marks and links."""
    text = URL.sub(" ", SPAN.sub(" ", text))
    return [*PATH.findall(text), *BARE.findall(PATH.sub(" ", text))]


def verified(pr: PullRequest) -> Callable[[str], bool]:
    """Whether the input has a code span of a digest of `pr`: whole, or every identifier-like
    part of it (`NCCLCheckpointEngine.__init__`)."""
    shown = Shown(pr)
    return lambda span: shown.span(span) is Span.VERIFIED
