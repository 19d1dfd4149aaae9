"""The model's digest as published: the prompt's echoes cut, grounded in its input, checked,
and asked again once (afresh when the correction came back unchanged) when a check fails."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from prhub.config import Settings
from prhub.digest import checks
from prhub.digest.ground import ground_digest
from prhub.llm.llm import LLM
from prhub.llm.prompt import afresh, task_prompt
from prhub.model import ChineseTitle, DigestContent, Drop, Neighbour, PullRequest, Usage
from prhub.prepare.facts import pr_facts
from prhub.prepare.redact import scrub_reply
from prhub.prepare.tokens import truncate

TITLE_SUMMARY = 300  # tokens of the advice a title-only corrective call is shown

Messages = list[dict[str, str]]
log = logging.getLogger("prhub")


@dataclass(frozen=True)
class CheckedReply:
    """The model's digest as published: grounded, checked, corrected once when a check failed."""

    content: DigestContent
    dropped: list[Drop]  # what grounding dropped from it, as recorded
    unmarked: list[Drop]  # code spans grounding kept as plain text, as recorded
    failed: list[str]  # the checks it still fails
    usage: Usage  # of the call and of its corrective calls
    title_prompt: str | None  # the title prompt's id, when the published title came from it


@dataclass(frozen=True)
class Asked:
    """What a reply is checked against: its PR, the neighbours its request named, settings."""

    pr: PullRequest
    settings: Settings
    neighbours: Sequence[Neighbour] = ()
    discussed: bool = False  # the request showed review discussion


def checked_reply(asked: Asked, messages: Messages, llm: LLM) -> CheckedReply:
    """The model's digest, grounded and checked; one corrective call when a check fails.

    When only the title is wrong, the call asks for the title alone (small models copy the
    English title back when asked for the whole digest again). A correction that comes back
    exactly as the first reply was is asked once more, afresh. The digest that fails fewer
    checks is kept, with the discussion notes it may publish (checks.published).
    """
    pr, settings = asked.pr, asked.settings
    facts = pr_facts(pr)
    first, usage = llm.complete(messages, DigestContent)
    content, dropped = grounded(first, asked)
    failed = checks.failures(content, pr, facts)
    title_prompt = None
    corrected = checks.needs_correction(failed)  # what a reader would not reject costs no call
    if corrected:
        log.info("#%d: the digest fails %s; asking once more", pr.number, ", ".join(failed))
        title_only = set(failed) <= checks.TITLE_CHECKS
        if title_only:
            title_messages = _title_messages(pr, content, failed, settings, llm)
            title, more = llm.complete(title_messages, ChineseTitle, correction=True)
            if title.title.strip() == first.title.strip():
                log.info("#%d: the title came back unchanged; asking afresh", pr.number)
                title, again_used = llm.complete(
                    afresh(title_messages), ChineseTitle, correction=True
                )
                more += again_used
            again = content.model_copy(update={"title": title.title})
        else:
            # The same prompt with what was wrong: the earlier reply is not sent back, so the
            # call stays within the budget the first one was planned for.
            *head, last = messages
            told = [*head, {**last, "content": f"{last['content']}\n\n{checks.correction(failed)}"}]
            again, more = llm.complete(told, DigestContent, correction=True)
            if again == first:
                log.info("#%d: the correction came back unchanged; asking afresh", pr.number)
                again, again_used = llm.complete(afresh(told), DigestContent, correction=True)
                more += again_used
        usage += more
        again, again_dropped = grounded(again, asked)
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
    content, failed = checks.published(content, failed, discussed=asked.discussed)
    if corrected and failed:
        log.warning("#%d: the digest still fails %s", pr.number, ", ".join(failed))
    drops, unmarked = _recorded(pr, dropped)
    return CheckedReply(content, drops, unmarked, failed, usage, title_prompt)


def _recorded(pr: PullRequest, changes: list[Drop]) -> tuple[list[Drop], list[Drop]]:
    """What grounding dropped, and the code spans it unmarked, as the digest records and the
    log shows them: a secret in one is redacted."""
    changes = [scrub_reply(d)[0] for d in changes]
    for d in changes:
        did = "unmarked a span in" if d.reason == "unverified_span" else "dropped from"
        log.info("#%d: grounding %s %s (%s): %s", pr.number, did, d.field, d.reason, d.text)
    unmarked = [d for d in changes if d.reason == "unverified_span"]
    return [d for d in changes if d.reason != "unverified_span"], unmarked


def grounded(content: DigestContent, asked: Asked) -> tuple[DigestContent, list[Drop]]:
    """The reply without the prompt's own words echoed back, then grounded in the PR."""
    content, echoed = checks.unechoed(content)
    content, dropped = ground_digest(content, asked.pr, asked.neighbours)
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
