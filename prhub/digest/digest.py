"""One prepared PR to one validated digest: budgets, the call plan, map-reduce through `llm`."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from prhub.config import Settings
from prhub.digest.budgets import CORRECTION, NONE, Budgets, budgets, context
from prhub.digest.correct import Asked, checked_reply
from prhub.digest.notes import (
    NotesMemo,
    fit_notes,
    note_cap,
    note_limits,
    note_text,
    notes_key,
    trim_notes,
)
from prhub.digest.related import bounded
from prhub.errors import ConfigError
from prhub.llm.limits import ContextTooLong
from prhub.llm.llm import LLM, schema_text
from prhub.llm.prompt import MARGIN, message_tokens, task_prompt
from prhub.model import (
    ChunkNotes,
    DigestContent,
    DigestMeta,
    Neighbour,
    PRDigest,
    PreparedPR,
    PullRequest,
    Usage,
)
from prhub.prepare import prepare
from prhub.prepare.core import gist
from prhub.prepare.discussion import Discussion, discussion
from prhub.prepare.redact import scrub_reply
from prhub.tags import parse_title, tag_name

Messages = list[dict[str, str]]
# A part's notes at their emptiest: what the final call holds besides the notes' own text.
NO_NOTES = ChunkNotes(summary="", key_files=[], identifiers=[], risks=[])
log = logging.getLogger("prhub")


@dataclass(frozen=True)
class Plan:
    """One PR's digest, planned once: its budgets, the PR prepared within them, the discussion
    and neighbours the prompt shows, and the messages of the first calls (one, or one a
    chunk)."""

    pr: PullRequest
    settings: Settings
    mode: str  # the response mode the first calls are written for
    budgets: Budgets
    prepared: PreparedPR
    talk: Discussion
    calls: tuple[Messages, ...]
    neighbours: tuple[Neighbour, ...] = ()

    @property
    def map_reduce(self) -> bool:
        """Whether the PR takes notes per chunk, then a final call on them."""
        return len(self.calls) > 1

    @property
    def asked(self) -> Asked:
        """What the reply to the final call is checked against."""
        return Asked(self.pr, self.settings, self.neighbours, discussed=bool(self.talk.text))

    def final(self, notes: list[ChunkNotes], mode: str) -> Messages:
        """The reduce call of a map-reduce: chunk notes, the whole file index, the discussion."""
        return task_prompt(self.settings, "digest").messages(
            **context(self.prepared, self.talk, self.neighbours),
            diff="",
            notes=notes,
            index=self.prepared.index,
            schema=schema_text(mode, DigestContent),
        )

    def planned_tokens(self) -> tuple[int, int]:
        """The calls and prompt tokens the digest takes, the final map-reduce call included."""
        encoding = self.settings.encoding
        tokens = sum(message_tokens(m, encoding) for m in self.calls)
        if not self.map_reduce:
            return 1, tokens
        empty = [NO_NOTES] * len(self.calls)  # the index and every note's label
        final = message_tokens(self.final(empty, self.mode), encoding)
        tokens += final + len(self.calls) * self.budgets.note  # the notes: at most these
        return len(self.calls) + 1, tokens


def plan(
    pr: PullRequest,
    settings: Settings,
    mode: str | None = None,
    neighbours: Sequence[Neighbour] = (),
) -> Plan:
    """The PR's digest plan: its discussion and budgets, the PR prepared within them, and the
    messages of its first calls; `neighbours` are named in the call that writes the digest,
    unless naming them would split a PR that fits one call.

    `mode` is the response mode the prompts are written for (default: the configured one).
    """
    mode = mode or settings.response_mode
    near = tuple(bounded(neighbours, settings.encoding))
    talk = discussion(pr.discussion, settings)
    budget = budgets(pr, settings, talk, near)
    prepared = prepare(pr, settings, chunk_budget=budget.chunk, index_budget=budget.file_index)
    if len(prepared.chunks) > 1 and near:
        # The neighbours are context: they never cost a PR that fits one call its reading
        # in one.
        alone = budgets(pr, settings, talk)
        whole = prepare(pr, settings, chunk_budget=alone.chunk, index_budget=alone.file_index)
        if len(whole.chunks) == 1:
            near, budget, prepared = (), alone, whole
    if len(prepared.chunks) == 1:
        calls = [
            task_prompt(settings, "digest").messages(
                **context(prepared, talk, near),
                diff=prepared.chunks[0],
                notes=[],
                index="",
                schema=schema_text(mode, DigestContent),
            )
        ]
        return Plan(pr, settings, mode, budget, prepared, talk, tuple(calls), near)
    notes_prompt = task_prompt(settings, "digest_notes")
    schema = schema_text(mode, ChunkNotes)
    # The notes take what the final call leaves once its index, body and discussion are in.
    planned = Plan(pr, settings, mode, budget, prepared, talk, (), near)
    empty = [NO_NOTES] * len(prepared.chunks)  # the index and every label
    final = message_tokens(planned.final(empty, "json_object"), settings.encoding)
    room = settings.input_budget - final - CORRECTION - MARGIN
    budget = budget._replace(note=max(1, min(note_cap(settings), room // len(prepared.chunks))))
    limits = note_limits(budget.note)
    # The chunk calls run at once, in any order: the first carries the (budgeted) body, the
    # others its opening; the final call has it whole.
    short = prepared.model_copy(update={"body": gist(prepared.body, settings.encoding)})
    calls = [
        notes_prompt.messages(
            **context(prepared if i == 1 else short, NONE),
            diff=chunk,
            part=i,
            parts=len(prepared.chunks),
            schema=schema,
            limits=limits,
        )
        for i, chunk in enumerate(prepared.chunks, 1)
    ]
    return Plan(pr, settings, mode, budget, prepared, talk, tuple(calls), near)


def digest_pr(
    pr: PullRequest,
    settings: Settings,
    llm: LLM,
    key: str = "",
    memo: NotesMemo | None = None,
    neighbours: Sequence[Neighbour] = (),
) -> PRDigest:
    """Digests a PR; re-planned once within a smaller budget if the endpoint says it overflows.

    `key` is the cache key the digest is stored under; it names the settings asked for, not
    the smaller budget a retry used, or the next run would not find it. `neighbours` are the
    related PRs its request names.
    """
    try:
        digest = _digest_pr(plan(pr, settings, llm.mode, neighbours), llm, memo)
    except ContextTooLong as exc:
        smaller = exc.smaller_budget(settings.input_budget)
        if smaller is None:
            raise
        try:
            smaller_settings = settings.model_copy(update={"input_budget": smaller})
            digest = _digest_pr(plan(pr, smaller_settings, llm.mode, neighbours), llm, memo)
        except ConfigError:  # the context the endpoint reported cannot hold any digest prompt
            raise exc from None
    return digest.model_copy(update={"meta": digest.meta.model_copy(update={"cache_key": key})})


def _digest_pr(planned: Plan, llm: LLM, memo: NotesMemo | None = None) -> PRDigest:
    """Asks the model for the digest `planned` plans: at once, or from each chunk's notes."""
    pr, settings, prepared = planned.pr, planned.settings, planned.prepared
    digest_prompt = task_prompt(settings, "digest")
    if planned.map_reduce:
        mapped = _mapped(planned, llm, memo)
        # The final call is written for the mode the endpoint answers in now.
        messages, usage, leaked = planned.final(mapped.notes, llm.mode), mapped.usage, mapped.leaked
        coverage = prepared.coverage.model_copy(update={"notes_shortened": mapped.shortened})
        prompt_id = f"{digest_prompt.id}+{task_prompt(settings, 'digest_notes').id}"
    else:
        messages, usage, leaked = planned.calls[0], Usage(), Counter[str]()
        coverage, prompt_id = prepared.coverage, digest_prompt.id
    reply = checked_reply(planned.asked, messages, llm)
    if reply.title_prompt:
        prompt_id += f"+{reply.title_prompt}"  # the published title came from the title prompt
    content, found = scrub_reply(reply.content)
    leaked.update(found)
    talk = planned.talk
    modules, kind, breaking, *_ = parse_title(pr.title)
    return PRDigest(
        repo=pr.repo,
        number=pr.number,
        url=pr.url,
        original_title=prepared.title,
        author=pr.author,
        merged_at=pr.merged_at,
        labels=pr.labels,
        modules=modules,
        kind=kind,
        breaking=breaking,
        additions=pr.additions,
        deletions=pr.deletions,
        changed_files=pr.changed_files or len(pr.files),
        content=content,
        meta=DigestMeta(
            prompt=prompt_id,
            model=settings.model,
            usage=usage + reply.usage,
            coverage=coverage.model_copy(
                update={
                    "unlisted": max(0, pr.changed_files - len(pr.files)),
                    "comments": talk.total,
                    "comments_shown": talk.shown,
                }
            ),
            redactions=dict(
                Counter(pr.redactions) + Counter(prepared.redactions) + Counter(leaked)
            ),
            dropped=reply.dropped,
            dropped_citations=len(reply.dropped),
            unmarked=reply.unmarked,
            failed_checks=reply.failed,
            cache_key="",
            created_at=datetime.now(UTC),
        ),
    )


class Mapped(NamedTuple):
    """A map-reduce's chunk notes, in part order, within their share of the final call."""

    notes: list[ChunkNotes]
    usage: Usage  # of the chunk calls, the notes kept from an earlier run included
    leaked: Counter[str]  # secrets redacted in the notes
    shortened: int  # notes that were over their length


def _mapped(planned: Plan, llm: LLM, memo: NotesMemo | None) -> Mapped:
    """Notes per chunk, asked for concurrently, or taken from `memo`."""
    settings = planned.settings

    def chunk(messages: Messages) -> tuple[ChunkNotes, Usage, dict[str, int]]:
        key = notes_key(messages, settings)
        if memo is not None and not settings.refresh and (found := memo.chunk_notes(key)):
            return *found, {}
        # A model may echo a secret-shaped string: redacted before it is kept or sent back.
        made, used = llm.complete(messages, ChunkNotes)
        made, secrets = scrub_reply(made)
        if memo is not None:
            memo.save_chunk_notes(key, made, used)
        return made, used, secrets

    with ThreadPoolExecutor(max_workers=len(planned.calls)) as pool:
        # Every call runs though one fails (map() would cancel those not yet started): its
        # notes are kept for the rerun, and a batch gets every part's request at once.
        futures = [pool.submit(chunk, messages) for messages in planned.calls]
        answered = [f.result() for f in futures]  # in part order, whichever came first
    leaked: Counter[str] = Counter()
    for *_, secrets in answered:
        leaked.update(secrets)
    limits = note_limits(planned.budgets.note)
    trimmed = [trim_notes(note, limits) for note, _, _ in answered]
    # Each within its stated length; together within the final call's room for them.
    notes = fit_notes([note for note, _ in trimmed], planned.budgets.note, settings)
    cut = [was or now != kept for (kept, was), now in zip(trimmed, notes, strict=True)]
    if shortened := sum(cut):
        left = sum(
            len(note_text(n)) - len(note_text(k))
            for (n, _, _), k in zip(answered, notes, strict=True)
        )
        log.warning(
            "#%d: %d chunk notes were over their length: %d characters left out, "
            "at whole items and sentences",
            planned.pr.number,
            shortened,
            left,
        )
    usage = sum((used for _, used, _ in answered), Usage())
    return Mapped(notes, usage, leaked, shortened)


def retag(digest: PRDigest, settings: Settings) -> PRDigest:
    """The digest's modules and labels in the repository's own tag spellings."""
    if not settings.tags:
        return digest
    modules = list(dict.fromkeys(tag_name(m, settings.tags) for m in digest.modules))
    labels = list(dict.fromkeys(tag_name(x, settings.tags) for x in digest.labels))
    return digest.model_copy(update={"modules": modules, "labels": labels})
