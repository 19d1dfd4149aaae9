"""A PR's digest plans with token budgets: what one call's diff chunk, the final call's file
index and each chunk's notes may take, once the prompt's fixed part is counted."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from prhub.config import Settings
from prhub.digest.notes import NOTE_SHARES
from prhub.digest.related import lines
from prhub.errors import ConfigError
from prhub.llm.llm import schema_text
from prhub.llm.prompt import MARGIN, Prompt, message_tokens, task_prompt
from prhub.model import ChunkNotes, Coverage, DigestContent, Neighbour, PreparedPR, PullRequest
from prhub.prepare import TITLE_BUDGET, body_budget
from prhub.prepare.core import pr_fields
from prhub.prepare.discussion import Discussion, discussion
from prhub.prepare.facts import pr_facts
from prhub.prepare.tokens import count

NOTE_BUDGET = 1200  # tokens of one chunk's notes the final call's index leaves room for
MIN_INDEX = 500  # the final call's file index needs at least this many tokens
CORRECTION = 200  # tokens a corrective call adds to the last message (checks.correction)
BODY_SLACK = 32  # tokens a body may gain in the prompt: its cut's note, a marker for a secret
NONE = Discussion("", 0, 0)  # chunk calls read the diff alone


class Budgets(NamedTuple):
    """Tokens one PR's digest plans with."""

    chunk: int  # one call's diff chunk
    file_index: int  # the final call's file index
    note: int  # each chunk's notes in the final call


def budgets(
    pr: PullRequest,
    settings: Settings,
    talk: Discussion | None = None,
    neighbours: Sequence[Neighbour] = (),
) -> Budgets:
    """Tokens left for one call's diff chunk, for the final call's file index, and for each
    chunk's notes in it (at least); `talk` is the discussion the prompt shows (made when not
    given), `neighbours` the related PRs it names.

    The instructions are counted with the example reply JSON modes show, the largest they can be:
    an endpoint may move a run to such a mode after its prompts were planned.
    """
    digest_prompt, notes_prompt = (
        task_prompt(settings, "digest"),
        task_prompt(settings, "digest_notes"),
    )
    schema, notes_schema = (
        schema_text("json_object", DigestContent),
        schema_text("json_object", ChunkNotes),
    )
    fixed_part = stub(pr)
    if talk is None:
        talk = discussion(pr.discussion, settings)
    fixed = max(
        prompt_tokens(
            digest_prompt,
            settings,
            fixed_part,
            talk,
            neighbours,
            diff="",
            notes=[],
            index="",
            schema=schema,
        ),
        prompt_tokens(
            notes_prompt,
            settings,
            fixed_part,
            NONE,
            (),
            diff="",
            part=9,
            parts=9,
            schema=notes_schema,
            limits=dict.fromkeys(NOTE_SHARES, 99_999),  # the most digits a limit has
        ),
    )
    # The body's room is what it takes, up to its budget: a short body leaves the rest to the
    # diff, as a short diff leaves its rest to the body (prepare). Counted as written: what
    # prepare leaves out of it, and redaction's markers, only make it shorter.
    body = min(body_budget(settings), count(pr.body or "", settings.encoding) + BODY_SLACK)
    spare = TITLE_BUDGET + body + MARGIN + CORRECTION
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
    return Budgets(chunk_budget, index_budget, note_budget)


def stub(pr: PullRequest) -> PreparedPR:
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


def context(
    prepared: PreparedPR, talk: Discussion, neighbours: Sequence[Neighbour] = ()
) -> dict[str, Any]:
    """The prompt's variables of the PR itself, its discussion and its neighbours' lines."""
    states = Counter(review.state for review in prepared.reviews)
    approvers = [r.author for r in prepared.reviews if r.state == "APPROVED"]
    return {
        "pr": prepared,
        "review_states": sorted(states.items()),
        "approvers": list(dict.fromkeys(approvers)),
        "discussion": talk,
        "related": lines(neighbours),
    }


def prompt_tokens(
    p: Prompt,
    settings: Settings,
    stub: PreparedPR,
    talk: Discussion,
    neighbours: Sequence[Neighbour],
    **variables: Any,
) -> int:
    prompt = p.messages(**context(stub, talk, neighbours), **variables)
    return message_tokens(prompt, settings.encoding)
