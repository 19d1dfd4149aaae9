"""prepare(): a PullRequest made into redacted, ranked text that fits the model's budget."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from prhub import paths
from prhub.config import Settings
from prhub.errors import ConfigError
from prhub.model import Coverage, FileChange, FileView, PreparedPR, PullRequest
from prhub.prepare.body import strip_template
from prhub.prepare.compact import added_lines
from prhub.prepare.diff import Entry, header, keyed_hunks, tier
from prhub.prepare.facts import pr_facts
from prhub.prepare.index import VIEWS, build_index
from prhub.prepare.noise import is_pure_rename, noise_reason, reduce_notebook
from prhub.prepare.pack import pack, plural
from prhub.prepare.redact import is_env_file, redact
from prhub.prepare.repeats import merge_repeats, settle
from prhub.prepare.tokens import count, truncate

# The shape of prepared text: raise it when prompts change for the same PR and settings.
FORMAT = 4
TITLE_BUDGET = 120  # tokens
BODY_BUDGET = 1000  # tokens, at most: an eighth of a small input budget


def body_budget(settings: Settings) -> int:
    """Tokens of the PR body a prompt carries."""
    return min(BODY_BUDGET, settings.input_budget // 8)


GIST = 150  # tokens of the body a big PR's later chunk calls carry: its opening
GIST_MARK = "\n\n（PR 描述的其余部分已给第 1 段和最后的汇总，这里从略）"
TITLE_CUT = " …[title truncated]"
NO_PATCH = "GitHub sent no patch (too large)"
# Below these a chunk cannot hold even a per-directory list of a large PR.
MIN_CHUNK_BUDGET = 256
MIN_INDEX_BUDGET = 64


def body_cut(rest: str) -> str:
    """The line that closes a cut body: how much of it the model is not shown."""
    lines = rest.strip("\n").count("\n") + 1
    return f"\n\n（PR 描述过长，已略去后面 {lines} 行，约 {len(rest.strip())} 字）"


def gist(body: str, encoding: str, budget: int = GIST) -> str:
    """The opening of a prepared body, within `budget` tokens, for the chunk calls after the
    first: the body goes to a big PR's calls once in substance, not whole with every part."""
    if count(body, encoding) <= budget:
        return body
    return _cut(body, budget, encoding, GIST_MARK)


def _cut(text: str, budget: int, encoding: str, mark: str | None = None) -> str:
    """`text` within `budget` tokens, the mark included; without `mark`, the body's: cut at
    a line's end when one is near, and saying what was left out."""
    if count(text, encoding) <= budget:
        return text
    keep = budget - count(mark or body_cut(text), encoding)
    while True:
        kept = truncate(text, keep, encoding)
        if mark is None and kept.rfind("\n") > len(kept) // 2:
            kept = kept[: kept.rfind("\n")]
        cut = kept + (mark if mark is not None else body_cut(text[len(kept) :]))
        # The mark may tokenize differently after the cut; one longer than the budget ends it.
        if count(cut, encoding) <= budget or keep <= 0:
            return cut
        keep -= 1


def _entry(
    order: int,
    file: FileChange,
    settings: Settings,
    clean: Callable[..., str],
    short: bool,
    moved: frozenset[str],
    fold_removed: bool,
) -> Entry:
    enc = settings.encoding
    path = clean(file.path)
    previous = clean(file.previous_path) if file.previous_path else None
    head = header(file, path, previous)
    e = Entry(
        order=order,
        path=path,
        status=file.status,
        additions=file.additions,
        deletions=file.deletions,
        tier=tier(file.path),
        header=head,
        header_tokens=count(head, enc),
    )
    # Noise is decided on the real path; its patch is never shown, so it is not scanned either.
    e.excluded = noise_reason(file, settings.noise_globs)
    if e.excluded is not None:
        e.view, e.reason = "excluded", e.excluded
        return e
    if is_pure_rename(file):
        e.pure_rename, e.base_reason = True, "pure rename"
        return e
    patch = file.patch or ""
    if file.path.lower().endswith(".ipynb"):
        patch, e.omitted = reduce_notebook(patch)
        e.base_reason = f"notebook: {e.omitted} output lines dropped" if e.omitted else ""
    text = clean(patch, env_file=is_env_file(file.path))
    e.bare = short and file.status == "added"
    config = paths.kind(file.path) == "config"
    # A deleted test file removes no behaviour: its test names say what went.
    fold = fold_removed or (file.status == "removed" and paths.is_test(file.path))
    keyed = keyed_hunks(
        text, short=short, added=e.bare, moved=moved, fold_removed=fold, config=config
    )
    e.hunks = [(text, changed) for text, changed, _ in keyed]
    e.keys = [key for _, _, key in keyed]
    # A key holds every changed line of its hunk; a shortened removal counts the ones it shows.
    e.hidden = sum(key.count("\n") + 1 - changed for _, changed, key in keyed if key)
    if not e.hunks:
        e.no_patch = True
        e.reason = e.base_reason = NO_PATCH if not file.patch else "empty patch"
    return e


def _fits_whole(ranked: list[Entry], chunks: list[str]) -> bool:
    return len(chunks) == 1 and all(e.view == "full" for e in ranked if e.showable)


def _has_removal(ranked: list[Entry]) -> bool:
    """True when a hunk of a file shown removes lines and adds none."""
    return any(key and "\n+" not in f"\n{key}" for e in ranked if e.showable for key in e.keys)


def input_key(pr: PullRequest) -> str:
    """What changes a PR's prepared text beside its commit and the settings: prhub's format of
    it, and the .gitattributes marks its files were given. For a digest's cache key."""
    marks = "".join((f.marked or "-")[0] for f in pr.files)
    return f"prepare{FORMAT}:{marks}"


def pr_fields(pr: PullRequest) -> dict[str, Any]:
    """What a prepared PR keeps of the PR as it is: who, where, how big, reviews, references."""
    names = ("repo", "number", "author", "labels", "base_ref", "head_ref", "additions")
    more = ("deletions", "reviews", "referenced_issues")
    return {name: getattr(pr, name) for name in (*names, *more)}


def prepare(
    pr: PullRequest,
    settings: Settings,
    *,
    chunk_budget: int,
    index_budget: int,
    compact: bool = True,
) -> PreparedPR:
    """Filter, redact, rank and pack a PR's diff into chunks of at most chunk_budget tokens.

    `compact` sends a change made in several places once, keeps less unchanged text around
    changes and leaves the parts of the PR template the author did not fill out of the body;
    off, the patches and body go as they are.
    """
    if chunk_budget < MIN_CHUNK_BUDGET or index_budget < MIN_INDEX_BUDGET:
        raise ConfigError(
            f"a diff chunk of {chunk_budget} tokens (index {index_budget}) is too small: "
            f"raise the input budget (PRHUB_INPUT_BUDGET) to leave at least {MIN_CHUNK_BUDGET}"
        )
    enc = settings.encoding
    counts: Counter[str] = Counter()

    def clean(text: str, env_file: bool = False) -> str:
        text, found = redact(text, env_file=env_file)
        counts.update(found)
        return text

    title = _cut(clean(pr.title), TITLE_BUDGET, enc, TITLE_CUT)
    body = clean(strip_template(pr.body or "") if compact else pr.body or "")
    # Added lines of files the model is shown: a removed line found there is not new to it.
    # Read before redaction: a line holding a secret then matches nothing, and stays.
    shown = [f.patch for f in pr.files if noise_reason(f, settings.noise_globs) is None]
    moved = added_lines(shown) if compact else frozenset()

    def packed(fold_removed: bool) -> tuple[list[Entry], list[Entry], list[str]]:
        entries = [
            _entry(i, f, settings, clean, compact, moved, fold_removed)
            for i, f in enumerate(pr.files)
        ]
        ranked = sorted(entries, key=Entry.rank)
        if compact:
            merge_repeats(ranked)
        return entries, ranked, pack(ranked, chunk_budget, settings.max_calls, enc)

    # Hunks that only remove lines are shown whole when the whole PR then fits one call;
    # otherwise each is shortened to the lines that define something, and packed again.
    # Redaction counts once: the second pass redacts the same text again.
    found = counts.copy()
    entries, ranked, chunks = packed(fold_removed=False)
    if not _fits_whole(ranked, chunks) and _has_removal(ranked):
        counts.clear()
        counts.update(found)
        entries, ranked, chunks = packed(fold_removed=True)
    settle(ranked)
    # The body gets its budget and, in one call, what the diff leaves of its own: a short
    # diff never costs the author's notes.
    unused = chunk_budget - count(chunks[0], enc) if len(chunks) == 1 else 0
    body = _cut(body, body_budget(settings) + max(0, unused), enc)
    seen = [e.lines_seen() for e in entries]
    for e in entries:
        if e.view == "full" and e.hidden:  # a shortened removal is not the file in full
            cut = f"{plural(e.hidden, 'removed line')} not shown, only those that define something"
            e.view, e.reason = "excerpt", f"{e.reason}; {cut}" if e.reason else cut
    index = build_index(ranked, index_budget, enc)
    views = [
        FileView(
            path=e.path,
            status=e.status,
            additions=e.additions,
            deletions=e.deletions,
            view=e.view,
            reason=e.reason,
            lines_seen=lines,
            generated=made,
        )
        for e, made, lines in zip(entries, map(paths.is_machine_made, pr.files), seen, strict=True)
    ]
    pairs = list(zip(entries, views, strict=True))
    coverage = Coverage.model_validate(
        {
            **{v: [f.path for f in views if f.view == v] for v in VIEWS},
            "generated": [f.path for f in views if f.generated],
            "lines_seen": sum(f.lines_seen for f in views if not f.generated),
            "lines_total": sum(e.changes for e, f in pairs if not f.generated),
            "lines_generated": sum(e.changes for e, f in pairs if f.generated),
        }
    )
    return PreparedPR(
        **pr_fields(pr),
        title=title,
        body=body,
        files=views,
        chunks=chunks,
        index=index,
        coverage=coverage,
        facts=[clean(line) for line in pr_facts(pr).lines()],
        redactions=dict(counts),
    )
