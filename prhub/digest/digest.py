"""One prepared PR to one validated digest: budgets, the call plan, map-reduce through `llm`."""

from __future__ import annotations

import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

from prhub.config import Settings
from prhub.digest import checks
from prhub.digest.budgets import NONE, Budgets, budgets, context
from prhub.digest.ground import ground_digest
from prhub.digest.notes import (
    NotesMemo,
    note_limits,
    note_text,
    notes_key,
    trim_notes,
)
from prhub.errors import ConfigError
from prhub.llm.limits import ContextTooLong
from prhub.llm.llm import LLM, schema_text
from prhub.llm.prompt import message_tokens, task_prompt
from prhub.model import (
    ChineseTitle,
    ChunkNotes,
    DigestContent,
    DigestMeta,
    Drop,
    PRDigest,
    PreparedPR,
    PullRequest,
    Usage,
)
from prhub.prepare import prepare
from prhub.prepare.discussion import Discussion, discussion
from prhub.prepare.facts import pr_facts
from prhub.prepare.redact import scrub_reply
from prhub.prepare.tokens import truncate
from prhub.tags import parse_title, tag_name

TITLE_SUMMARY = 300  # tokens of the advice a title-only corrective call is shown

Messages = list[dict[str, str]]
log = logging.getLogger("prhub")


@dataclass(frozen=True)
class Plan:
    """One PR's digest, planned once: its budgets, the PR prepared within them, the discussion
    the prompt shows, and the messages of the first calls (one, or one a chunk)."""

    pr: PullRequest
    settings: Settings
    mode: str  # the response mode the first calls are written for
    budgets: Budgets
    prepared: PreparedPR
    talk: Discussion
    calls: tuple[Messages, ...]

    @property
    def map_reduce(self) -> bool:
        """Whether the PR takes notes per chunk, then a final call on them."""
        return len(self.calls) > 1

    def final(self, notes: list[ChunkNotes], mode: str) -> Messages:
        """The reduce call of a map-reduce: chunk notes, the whole file index, the discussion."""
        return task_prompt(self.settings, "digest").messages(
            **context(self.prepared, self.talk),
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
        final = message_tokens(self.final([], self.mode), encoding)  # the notes: at most these
        tokens += final + len(self.calls) * self.budgets.note
        return len(self.calls) + 1, tokens


def plan(pr: PullRequest, settings: Settings, mode: str | None = None) -> Plan:
    """The PR's digest plan: its discussion and budgets, the PR prepared within them, and the
    messages of its first calls.

    `mode` is the response mode the prompts are written for (default: the configured one).
    """
    mode = mode or settings.response_mode
    talk = discussion(pr.discussion, settings)
    budget = budgets(pr, settings, talk)
    prepared = prepare(pr, settings, chunk_budget=budget.chunk, index_budget=budget.file_index)
    if len(prepared.chunks) == 1:
        calls = [
            task_prompt(settings, "digest").messages(
                **context(prepared, talk),
                diff=prepared.chunks[0],
                notes=[],
                index="",
                schema=schema_text(mode, DigestContent),
            )
        ]
    else:
        notes_prompt = task_prompt(settings, "digest_notes")
        schema = schema_text(mode, ChunkNotes)
        limits = note_limits(budget.note)
        # The chunk calls run at once, in any order: each carries the whole (budgeted) body.
        calls = [
            notes_prompt.messages(
                **context(prepared, NONE),
                diff=chunk,
                part=i,
                parts=len(prepared.chunks),
                schema=schema,
                limits=limits,
            )
            for i, chunk in enumerate(prepared.chunks, 1)
        ]
    return Plan(pr, settings, mode, budget, prepared, talk, tuple(calls))


def digest_pr(
    pr: PullRequest, settings: Settings, llm: LLM, key: str = "", memo: NotesMemo | None = None
) -> PRDigest:
    """Digests a PR; re-planned once within a smaller budget if the endpoint says it overflows.

    `key` is the cache key the digest is stored under; it names the settings asked for, not
    the smaller budget a retry used, or the next run would not find it.
    """
    try:
        digest = _digest_pr(plan(pr, settings, llm.mode), llm, memo)
    except ContextTooLong as exc:
        smaller = exc.smaller_budget(settings.input_budget)
        if smaller is None:
            raise
        try:
            smaller_settings = settings.model_copy(update={"input_budget": smaller})
            digest = _digest_pr(plan(pr, smaller_settings, llm.mode), llm, memo)
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
    reply = checked_reply(planned, messages, llm)
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
    trimmed = [trim_notes(note, planned.budgets.note, settings) for note, _, _ in answered]
    notes = [note for note, _ in trimmed]
    if shortened := sum(cut for _, cut in trimmed):
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


@dataclass(frozen=True)
class CheckedReply:
    """The model's digest as published: grounded, checked, corrected once when a check failed."""

    content: DigestContent
    dropped: list[Drop]  # what grounding dropped from it, as recorded
    failed: list[str]  # the checks it still fails
    usage: Usage  # of the call and of its corrective call
    title_prompt: str | None  # the title prompt's id, when the published title came from it


def checked_reply(planned: Plan, messages: Messages, llm: LLM) -> CheckedReply:
    """The model's digest, grounded and checked; one corrective call when a check fails.

    When only the title is wrong, the call asks for the title alone (small models copy the
    English title back when asked for the whole digest again). The digest that fails fewer
    checks is kept, with the discussion notes it may publish (checks.published).
    """
    pr, settings = planned.pr, planned.settings
    facts = pr_facts(pr)
    content, usage = llm.complete(messages, DigestContent)
    content, dropped = _grounded(content, pr)
    failed = checks.failures(content, pr, facts)
    title_prompt = None
    corrected = checks.needs_correction(failed)  # what a reader would not reject costs no call
    if corrected:
        log.info("#%d: the digest fails %s; asking once more", pr.number, ", ".join(failed))
        title_only = set(failed) <= checks.TITLE_CHECKS
        if title_only:
            title, more = llm.complete(
                _title_messages(pr, content, failed, settings, llm), ChineseTitle, correction=True
            )
            again = content.model_copy(update={"title": title.title})
        else:
            # The same prompt with what was wrong: the earlier reply is not sent back, so the
            # call stays within the budget the first one was planned for.
            *head, last = messages
            told = {**last, "content": f"{last['content']}\n\n{checks.correction(failed)}"}
            again, more = llm.complete([*head, told], DigestContent, correction=True)
        usage += more
        again, again_dropped = _grounded(again, pr)
        if title_only:
            # The rest of the content is the first reply's, with what was dropped from it.
            again_dropped = [d for d in dropped if d.field != "title"] + [
                d for d in again_dropped if d.field == "title"
            ]
        still = checks.failures(again, pr, facts)
        # A tie keeps the first answer: a retry that trades one fault for another is no better.
        if len(still) < len(failed):
            content, dropped, failed = again, again_dropped, still
            title_prompt = task_prompt(settings, "digest_title").id if title_only else None
    content, failed = checks.published(content, failed, discussed=bool(planned.talk.text))
    if corrected and failed:
        log.warning("#%d: the digest still fails %s", pr.number, ", ".join(failed))
    return CheckedReply(content, _recorded(pr, dropped), failed, usage, title_prompt)


def _recorded(pr: PullRequest, dropped: list[Drop]) -> list[Drop]:
    """The drops as the digest records and the log shows them: a secret in one is redacted."""
    dropped = [scrub_reply(d)[0] for d in dropped]
    for d in dropped:
        log.info("#%d: grounding dropped from %s (%s): %s", pr.number, d.field, d.reason, d.text)
    return dropped


def _grounded(content: DigestContent, pr: PullRequest) -> tuple[DigestContent, list[Drop]]:
    """The reply without the prompt's own words echoed back, then grounded in the PR."""
    content, echoed = checks.unechoed(content)
    content, dropped = ground_digest(content, pr)
    return content, echoed + dropped


def _title_messages(
    pr: PullRequest, content: DigestContent, failed: list[str], settings: Settings, llm: LLM
) -> Messages:
    return task_prompt(settings, "digest_title").messages(
        title=pr.title,
        summary=truncate(content.advice, TITLE_SUMMARY, settings.encoding),
        problems="；".join(checks.MESSAGES[name] for name in failed),
        schema=llm.schema_text(ChineseTitle),
    )


def retag(digest: PRDigest, settings: Settings) -> PRDigest:
    """The digest's modules and labels in the repository's own tag spellings."""
    if not settings.tags:
        return digest
    modules = list(dict.fromkeys(tag_name(m, settings.tags) for m in digest.modules))
    labels = list(dict.fromkeys(tag_name(x, settings.tags) for x in digest.labels))
    return digest.model_copy(update={"modules": modules, "labels": labels})
