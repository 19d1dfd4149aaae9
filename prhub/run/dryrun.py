"""Dry runs: what a run would send to the model, counted as the run would; nothing is sent."""

from __future__ import annotations

from collections.abc import Sequence

from prhub.digest import digest
from prhub.model import DryRun, Neighbour, PlannedPR, PullRequest
from prhub.run import related
from prhub.run.keys import digest_key, narrative_key
from prhub.run.run import Run
from prhub.run.week import last_period, week_facts
from prhub.weekly import narrate
from prhub.weekly.analyse import Window


def planned(run: Run, pr: PullRequest, neighbours: Sequence[Neighbour] = ()) -> PlannedPR:
    """The calls and prompt tokens digesting `pr` (beside `neighbours`) would take; none when
    it is stored."""
    key = digest_key(pr, run.settings, neighbours)
    if not run.settings.refresh and run.store.digest(key):
        return PlannedPR(number=pr.number, cached=True, calls=0, tokens_in=0)
    calls, tokens = digest.plan(pr, run.settings, neighbours=neighbours).planned_tokens()
    return PlannedPR(number=pr.number, cached=False, calls=calls, tokens_in=tokens)


def pr_plan(run: Run, number: int) -> DryRun:
    """What summarizing one PR would send to the model."""
    pr = run.merged_pr(number)
    plan = planned(run, pr, related.pr_neighbours(run, pr))
    return DryRun(
        repo=run.settings.require_repo(),
        prs=[plan],
        output_tokens_max=plan.calls * run.settings.output_tokens,
    )


def week_plan(run: Run, w: Window) -> DryRun:
    """What a weekly run would send to the model; fetches and prepares."""
    fetched, _ = run.fetch_window(w)
    near, targets = related.week_neighbours(run, fetched)
    plans = [planned(run, fetched[n], near[n]) for n in sorted(fetched)]
    facts = week_facts(run, w, fetched, {}, targets)
    facts = facts.model_copy(update={"last": last_period(run, w)})
    calls, tokens = narrate.planned_tokens(facts, len(plans), run.settings)
    if _narrative_stored(run, w, fetched, near, targets):
        calls, tokens = 0, 0  # a run would take it from the store
    return DryRun(
        repo=run.settings.require_repo(),
        prs=plans,
        narrative_calls=calls,
        narrative_tokens_in=tokens,
        output_tokens_max=(sum(p.calls for p in plans) + calls) * run.settings.output_tokens,
    )


def _narrative_stored(
    run: Run,
    w: Window,
    fetched: dict[int, PullRequest],
    near: dict[int, list[Neighbour]],
    targets: dict[int, PullRequest],
) -> bool:
    """Whether the store holds the narrative a run would write: each digest is stored, and
    the narrative of exactly those."""
    digests = {}
    for n, pr in sorted(fetched.items()):
        key = digest_key(pr, run.settings, near[n])
        found = None if run.settings.refresh else run.store.digest(key)
        if found is None:
            return False
        digests[n] = digest.retag(found, run.settings)
    facts = week_facts(run, w, fetched, digests, targets)
    facts = facts.model_copy(update={"last": last_period(run, w)})
    key = narrative_key(facts, list(digests.values()), run.settings)
    return bool(digests) and run.store.narrative(key) is not None
