"""Cache keys: what names a stored digest or narrative, so that any change of input misses."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from pydantic import BaseModel

from prhub.config import Settings
from prhub.llm.prompt import load_prompt
from prhub.model import (
    ChineseTitle,
    ChunkNotes,
    DigestContent,
    Neighbour,
    PRDigest,
    PullRequest,
    WeeklyFacts,
    WeeklyNarrative,
)
from prhub.prepare import input_key


def digest_key(pr: PullRequest, settings: Settings, neighbours: Sequence[Neighbour] = ()) -> str:
    """Names every input that changes a digest: PR content, the PRs it references or reverts
    (each as the request names it), prompts, model, prepare settings.

    The PRs of its week that changed the same files are context a run gives when it knows the
    week (a weekly run always, summarize from the store), not a name of the digest: summarize
    and weekly share one digest of a PR, whichever made it."""
    tasks = ("digest", "digest_notes", "digest_title")
    prompts = [load_prompt(t, prompt_dir=settings.prompt_dir) for t in tasks]
    return _hash(
        pr.repo,
        str(pr.number),
        pr.version,
        input_key(pr),
        # What the prompt shows beside the diff, which may change after the merge.
        pr.title,
        pr.body,
        json.dumps(pr.labels, ensure_ascii=False),
        json.dumps([r.model_dump() for r in pr.reviews], ensure_ascii=False),
        json.dumps([c.model_dump(mode="json") for c in pr.discussion], ensure_ascii=False),
        json.dumps(
            [n.model_dump(mode="json") for n in neighbours if n.relation != "same_files"],
            ensure_ascii=False,
        ),
        *(f"{p.id}:{p.fingerprint}" for p in prompts),
        _schema(DigestContent, ChunkNotes, ChineseTitle),
        settings.model,
        settings.response_mode,
        settings.prepare_key(),
    )


def narrative_key(facts: WeeklyFacts, digests: Sequence[PRDigest], settings: Settings) -> str:
    """Names every input of a week's narrative: its facts, its digests, prompt and model."""
    p = load_prompt("weekly", prompt_dir=settings.prompt_dir)
    return _hash(
        facts.model_dump_json(),
        *(d.content.model_dump_json() for d in digests),  # a digest made again may differ
        f"{p.id}:{p.fingerprint}",
        _schema(WeeklyNarrative),
        settings.model,
        settings.response_mode,
        str(settings.input_budget),
    )


def _schema(*models: type[BaseModel]) -> str:
    """The reply schemas: their descriptions are part of what the model is asked."""
    return json.dumps([m.model_json_schema() for m in models], sort_keys=True, ensure_ascii=False)


def _hash(*parts: str) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]
