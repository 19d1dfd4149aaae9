"""One prepared PR to one validated digest: budgets, the call plan, map-reduce through `llm`."""

from __future__ import annotations

import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from prhub.config import Settings
from prhub.digest import checks
from prhub.digest.ground import ground_digest
from prhub.digest.notes import (
    NOTE_SHARES,
    NotesMemo,
    note_limits,
    note_text,
    notes_key,
    trim_notes,
)
from prhub.errors import ConfigError
from prhub.llm.llm import LLM, ContextTooLong, Prompt, load_prompt, message_tokens, schema_text
from prhub.model import (
    ChineseTitle,
    ChunkNotes,
    Coverage,
    DigestContent,
    DigestMeta,
    Drop,
    PRDigest,
    PreparedPR,
    PullRequest,
    Usage,
)
from prhub.prepare import TITLE_BUDGET, body_budget, prepare
from prhub.prepare.core import pr_fields
from prhub.prepare.discussion import Discussion, discussion
from prhub.prepare.facts import pr_facts
from prhub.prepare.redact import scrub_reply
from prhub.prepare.tokens import truncate
from prhub.tags import parse_title, tag_name

NOTE_BUDGET = 1200  # tokens of one chunk's notes in the final call of a map-reduce, at most
MARGIN = 64  # tokens kept free for what a stub render cannot foresee (digits, joins)
MIN_INDEX = 500  # the final call's file index needs at least this many tokens
CORRECTION = 200  # tokens a corrective call adds to the last message (checks.correction)
TITLE_SUMMARY = 300  # tokens of the advice a title-only corrective call is shown

Messages = list[dict[str, str]]
NONE = Discussion("", 0, 0)  # chunk calls read the diff alone
log = logging.getLogger("prhub")


def prompt(settings: Settings, task: str) -> Prompt:
    """The latest version of a task's prompt, the user's --prompt-dir first."""
    return load_prompt(task, prompt_dir=settings.prompt_dir)


def budgets(pr: PullRequest, settings: Settings) -> tuple[int, int, int]:
    """Tokens left for one call's diff chunk, for the final call's file index, and for each
    chunk's notes in it.

    The instructions are counted with the example reply JSON modes show, the largest they can be:
    an endpoint may move a run to such a mode after its prompts were planned.
    """
    digest_prompt, notes_prompt = prompt(settings, "digest"), prompt(settings, "digest_notes")
    schema, notes_schema = (
        schema_text("json_object", DigestContent),
        schema_text("json_object", ChunkNotes),
    )
    stub, talk = _stub(pr), discussion(pr.discussion, settings)
    fixed = max(
        _tokens(digest_prompt, settings, stub, talk, diff="", notes=[], index="", schema=schema),
        _tokens(
            notes_prompt,
            settings,
            stub,
            NONE,
            diff="",
            part=9,
            parts=9,
            schema=notes_schema,
            limits=dict.fromkeys(NOTE_SHARES, 99_999),  # the most digits a limit has
        ),
    )
    spare = TITLE_BUDGET + body_budget(settings) + MARGIN + CORRECTION
    chunk_budget = settings.input_budget - fixed - spare
    note_budget = min(NOTE_BUDGET, chunk_budget // (2 * settings.max_calls))
    index_budget = chunk_budget - settings.max_calls * note_budget
    if index_budget < MIN_INDEX:
        least = settings.input_budget - index_budget + MIN_INDEX
        raise ConfigError(
            f"input budget {settings.input_budget} is too small for a digest prompt "
            f"({fixed} tokens of instructions alone): raise --input-budget to at least {least} "
            "(the model's context minus PRHUB_OUTPUT_TOKENS), or lower --max-calls"
        )
    return chunk_budget, index_budget, note_budget


def plan(
    pr: PullRequest, settings: Settings, mode: str | None = None
) -> tuple[PreparedPR, list[Messages]]:
    """The PR prepared within budget, and the messages of its first calls: one, or one a chunk.

    `mode` is the response mode the prompts are written for (default: the configured one).
    """
    mode = mode or settings.response_mode
    chunk_budget, index_budget, note_budget = budgets(pr, settings)
    prepared = prepare(pr, settings, chunk_budget=chunk_budget, index_budget=index_budget)
    if len(prepared.chunks) == 1:
        first = prompt(settings, "digest").messages(
            **_context(prepared, discussion(pr.discussion, settings)),
            diff=prepared.chunks[0],
            notes=[],
            index="",
            schema=schema_text(mode, DigestContent),
        )
        return prepared, [first]
    notes_prompt = prompt(settings, "digest_notes")
    schema = schema_text(mode, ChunkNotes)
    limits = note_limits(note_budget)
    # The chunk calls run at once, in any order: each carries the whole (budgeted) body.
    return prepared, [
        notes_prompt.messages(
            **_context(prepared, NONE),
            diff=chunk,
            part=i,
            parts=len(prepared.chunks),
            schema=schema,
            limits=limits,
        )
        for i, chunk in enumerate(prepared.chunks, 1)
    ]


def planned_tokens(pr: PullRequest, settings: Settings) -> tuple[int, int]:
    """The calls and prompt tokens digesting `pr` would take, the final map-reduce call included."""
    prepared, calls = plan(pr, settings)
    tokens = sum(message_tokens(m, settings.encoding) for m in calls)
    if len(calls) == 1:
        return 1, tokens
    talk = discussion(pr.discussion, settings)
    final = _final_messages(prepared, [], settings, settings.response_mode, talk)  # notes: below
    note_budget = budgets(pr, settings)[2]
    tokens += message_tokens(final, settings.encoding) + len(calls) * note_budget
    return len(calls) + 1, tokens


def digest_pr(
    pr: PullRequest, settings: Settings, llm: LLM, key: str = "", memo: NotesMemo | None = None
) -> PRDigest:
    """Digests a PR; re-planned once within a smaller budget if the endpoint says it overflows.

    `key` is the cache key the digest is stored under; it names the settings asked for, not
    the smaller budget a retry used, or the next run would not find it.
    """
    try:
        digest = _digest_pr(pr, settings, llm, memo)
    except ContextTooLong as exc:
        smaller = exc.smaller_budget(settings.input_budget)
        if smaller is None:
            raise
        try:
            smaller_settings = settings.model_copy(update={"input_budget": smaller})
            digest = _digest_pr(pr, smaller_settings, llm, memo)
        except ConfigError:  # the context the endpoint reported cannot hold any digest prompt
            raise exc from None
    return digest.model_copy(update={"meta": digest.meta.model_copy(update={"cache_key": key})})


def _digest_pr(
    pr: PullRequest, settings: Settings, llm: LLM, memo: NotesMemo | None = None
) -> PRDigest:
    """Prepares a PR within the token budget and asks the model for its digest."""
    leaked: Counter[str] = Counter()  # secrets redacted in chunk notes
    digest_prompt, notes_prompt = prompt(settings, "digest"), prompt(settings, "digest_notes")
    prepared, calls = plan(pr, settings, llm.mode)
    talk = discussion(pr.discussion, settings)
    if len(calls) == 1:
        messages = calls[0]
        usage = Usage()
        prompt_id = digest_prompt.id
    else:
        # Map: notes per chunk, concurrently; reduce: the digest from the notes and the index.
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

        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            answered = list(pool.map(chunk, calls))
        results = [(note, used) for note, used, _ in answered]
        for *_, secrets in answered:
            leaked.update(secrets)
        # pool.map gives the notes in part order, whichever answer came first.
        note_budget = budgets(pr, settings)[2]
        trimmed = [trim_notes(note, note_budget, settings) for note, _ in results]
        notes = [note for note, _ in trimmed]
        if shortened := sum(cut for _, cut in trimmed):
            pairs = zip(results, notes, strict=True)
            left = sum(len(note_text(n)) - len(note_text(k)) for (n, _), k in pairs)
            log.warning(
                "#%d: %d chunk notes were over their length: %d characters left out, "
                "at whole items and sentences",
                pr.number,
                shortened,
                left,
            )
            coverage = prepared.coverage.model_copy(update={"notes_shortened": shortened})
            prepared = prepared.model_copy(update={"coverage": coverage})
        messages = _final_messages(prepared, notes, settings, llm.mode, talk)
        usage = sum((u for _, u in results), Usage())
        prompt_id = f"{digest_prompt.id}+{notes_prompt.id}"
    content, dropped, failed, spent, title_prompt = checked_reply(messages, pr, settings, llm)
    # Notes on a discussion the model never saw, or the discussion's own lines copied, are not
    # notes: they go.
    kept = [n for n in content.discussion if talk.text and not checks.copied_entry(n)]
    content = content.model_copy(update={"discussion": kept})
    if "discussion_copied" in failed and not any(map(checks.note_fails, kept)):
        failed = [name for name in failed if name != "discussion_copied"]  # the copies went
    if title_prompt:
        prompt_id += f"+{title_prompt}"  # the published title came from the title prompt
    content, found = scrub_reply(content)
    leaked.update(found)
    usage += spent
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
            usage=usage,
            coverage=prepared.coverage.model_copy(
                update={
                    "unlisted": max(0, pr.changed_files - len(pr.files)),
                    "comments": talk.total,
                    "comments_shown": talk.shown,
                }
            ),
            redactions=dict(
                Counter(pr.redactions) + Counter(prepared.redactions) + Counter(leaked)
            ),
            dropped=dropped,
            dropped_citations=len(dropped),
            failed_checks=failed,
            cache_key="",
            created_at=datetime.now(UTC),
        ),
    )


def checked_reply(
    messages: Messages, pr: PullRequest, settings: Settings, llm: LLM
) -> tuple[DigestContent, list[Drop], list[str], Usage, str | None]:
    """The model's digest, grounded and checked; one corrective call when a check fails.

    When only the title is wrong, the call asks for the title alone (small models copy the
    English title back when asked for the whole digest again). Returns the digest that fails
    fewer checks, what grounding dropped from the content it publishes, the checks it still
    fails, and the usage of both calls.
    """
    facts = pr_facts(pr)
    content, usage = llm.complete(messages, DigestContent)
    content, dropped = _grounded(content, pr)
    failed = checks.failures(content, pr, facts)
    if not checks.needs_correction(failed):  # what a reader would not reject costs no call
        return content, _recorded(pr, dropped), failed, usage, None
    log.info("#%d: the digest fails %s; asking once more", pr.number, ", ".join(failed))
    title_only = set(failed) <= checks.TITLE_CHECKS
    if title_only:
        title, more = llm.complete(
            _title_messages(pr, content, failed, settings, llm), ChineseTitle
        )
        again = content.model_copy(update={"title": title.title})
    else:
        # The same prompt with what was wrong: the earlier reply is not sent back, so the call
        # stays within the budget the first one was planned for.
        *head, last = messages
        told = {**last, "content": f"{last['content']}\n\n{checks.correction(failed)}"}
        again, more = llm.complete([*head, told], DigestContent)
    again, again_dropped = _grounded(again, pr)
    if title_only:
        # The rest of the content is the first reply's, with what was dropped from it.
        again_dropped = [d for d in dropped if d.field != "title"] + [
            d for d in again_dropped if d.field == "title"
        ]
    still = checks.failures(again, pr, facts)
    # A tie keeps the first answer: a retry that trades one fault for another is no better.
    used = None
    if len(still) < len(failed):
        content, dropped, failed = again, again_dropped, still
        used = prompt(settings, "digest_title").id if title_only else None
    if failed:
        log.warning("#%d: the digest still fails %s", pr.number, ", ".join(failed))
    return content, _recorded(pr, dropped), failed, usage + more, used


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
    return prompt(settings, "digest_title").messages(
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


def _final_messages(
    prepared: PreparedPR, notes: list[ChunkNotes], settings: Settings, mode: str, talk: Discussion
) -> Messages:
    """The reduce call of a map-reduce: chunk notes, the whole file index, the discussion."""
    return prompt(settings, "digest").messages(
        **_context(prepared, talk),
        diff="",
        notes=notes,
        index=prepared.index,
        schema=schema_text(mode, DigestContent),
    )


def _stub(pr: PullRequest) -> PreparedPR:
    """The PR's prompt metadata without its title, body and diff, to measure the fixed cost."""
    return PreparedPR(
        **pr_fields(pr),
        title="",
        body="",
        files=[],
        chunks=[""],
        index="",
        coverage=Coverage(full=[f.path for f in pr.files]),
        facts=pr_facts(pr).lines(),
    )


def _context(prepared: PreparedPR, talk: Discussion) -> dict[str, Any]:
    states = Counter(review.state for review in prepared.reviews)
    approvers = [r.author for r in prepared.reviews if r.state == "APPROVED"]
    return {
        "pr": prepared,
        "review_states": sorted(states.items()),
        "approvers": list(dict.fromkeys(approvers)),
        "discussion": talk,
    }


def _tokens(
    p: Prompt, settings: Settings, stub: PreparedPR, talk: Discussion, **variables: Any
) -> int:
    return message_tokens(p.messages(**_context(stub, talk), **variables), settings.encoding)
