"""One PR's digest and one week's report, as a run makes them: fetched, digested (in batch
mode over rounds), the week's facts computed and its narrative written, each stored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prhub.digest import digest
from prhub.github.source import GITHUB_IN_FLIGHT
from prhub.llm.prompt import task_prompt
from prhub.model import (
    FailedPR,
    PRDigest,
    PullRequest,
    RunStats,
    Usage,
    WeeklyFacts,
    WeeklyMeta,
    WeeklyReport,
)
from prhub.run.fanout import staged
from prhub.run.keys import narrative_key
from prhub.run.run import Run
from prhub.store.store import StoredNarrative
from prhub.weekly import analyse, narrate
from prhub.weekly.analyse import Window

if TYPE_CHECKING:  # batch mode's modules are loaded only by a run in batch mode
    from prhub.llm.batch import Waiting


def summarize(run: Run, number: int) -> PRDigest | Waiting:
    """One merged PR's digest, reusing one made before from the same inputs; in batch
    mode, what it waits for until the batch's answer is in."""
    pr = run.merged_pr(number)
    run.stats = RunStats(prs=1, failed=1)  # until the digest is made
    if run.settings.batch:
        from prhub.llm.batch import Waiting
        from prhub.run.batching import deferrable, rounds

        got, waiting = rounds(run, pr.repo, lambda: deferrable(run.cached_digest)(pr))
        if got is None or waiting is not None:
            run.stats = RunStats(prs=1)
            return waiting or Waiting(0, [])
        made, hit = got
    else:
        made, hit = run.cached_digest(pr)
    run.stats = RunStats(
        prs=1,
        cached=int(hit),
        usage=Usage() if hit else made.meta.usage,
        unchecked=int(bool(made.meta.failed_checks)),
    )
    return made


def weekly(run: Run, w: Window, *, narrate_week: bool = True) -> WeeklyReport | Waiting:
    """Digests every PR merged in the window, computes its facts, writes the narrative; in
    batch mode, what it waits for until every digest's answers are in."""
    repo, settings = run.repo(), run.settings
    hits = run.hits(w)
    digest_pr: Any = run.cached_digest
    if settings.batch:
        from prhub.run.batching import deferrable, rounds

        digest_pr = deferrable(run.cached_digest)

    def digest_all() -> tuple[dict[int, PullRequest], dict[int, Any], list[FailedPR]]:
        # Each PR digested once fetched, the biggest first among those waiting: the LLM
        # does not wait for the last fetch, nor a big PR's calls for the small ones.
        return staged(
            hits,
            lambda n, hit: run.load_pr(n, hit.get("updated_at")),
            lambda n, pr: digest_pr(pr),
            settings.jobs,
            run.progress,
            run.stop.stop,
            size=lambda pr: pr.additions + pr.deletions,
            fetch_jobs=min(settings.jobs, GITHUB_IN_FLIGHT),  # more threads would only wait
        )

    (fetched, made, failed), waiting = (
        rounds(run, repo, digest_all) if settings.batch else (digest_all(), None)
    )
    if waiting is not None:  # no week is published without all its digests
        cached = sum(got[1] for got in made.values() if got)
        run.stats = RunStats(prs=len(hits), cached=cached, failed=len(failed))
        return waiting
    digests = {n: digest.retag(d, settings) for n, (d, _) in sorted(made.items())}
    cached = sum(hit for _, hit in made.values())
    usage = sum((d.meta.usage for d, hit in made.values() if not hit), Usage())
    facts = week_facts(run, w, fetched, digests)
    saved, ordered, key = None, list(digests.values()), ""
    if narrate_week and digests:
        key = narrative_key(facts, ordered, settings)
        saved = None if settings.refresh else run.store.narrative(key)
        if saved is None:  # under a lease, as digests: two runs at once pay for it once
            fresh, new = run.once(
                key,
                lambda: run.store.narrative(key),
                lambda: _narrate(run, key, facts, ordered, fetched),
            )
            usage += fresh.usage if new else Usage()
            saved = fresh
    run.stats = RunStats(
        prs=len(digests) + len(failed),
        cached=cached,
        failed=len(failed),
        usage=usage,
        errors=failed,
        unchecked=sum(bool(d.meta.failed_checks) for d in digests.values()),
    )
    report = WeeklyReport(
        facts=facts,
        narrative=saved.narrative if saved else None,
        digests=ordered,
        failed=failed,
        meta=WeeklyMeta(  # of the content alone: the same content gives the same bytes
            prompt=task_prompt(settings, "weekly").id,
            model=settings.model,
            usage=sum((d.meta.usage for d in ordered), saved.usage if saved else Usage()),
            dropped_citations=saved.dropped if saved else 0,
            generated_at=saved.created_at
            if saved
            else max((d.meta.created_at for d in ordered), default=None),
            narrative_key=key if saved else "",
            # Posted by an earlier run: every report of the week links to it.
            discussion_url=run.store.discussion_url(repo, facts.start, facts.end),
        ),
    )
    if narrate_week:
        run.store.save_report(report)
    return report


def _narrate(
    run: Run,
    key: str,
    facts: WeeklyFacts,
    ordered: list[PRDigest],
    fetched: dict[int, PullRequest],
) -> StoredNarrative:
    """The week's narrative, written by the model and stored under `key`."""
    run.progress("narrate", 0, 1)
    changed = {
        n: {p for f in pr.files for p in (f.path, f.previous_path) if p}
        for n, pr in fetched.items()
    }
    narrative, call_usage, dropped = narrate.narrate(
        facts, ordered, run.settings, run.llm_client(), changed
    )
    run.progress("narrate", 1, 1)
    return run.store.save_narrative(key, narrative, dropped, call_usage)


def week_facts(
    run: Run, w: Window, fetched: dict[int, PullRequest], digests: dict[int, PRDigest]
) -> WeeklyFacts:
    """The window's computed facts: counts, tags, hot files, authors, reverts."""
    return analyse.weekly_facts(
        [fetched[n] for n in sorted(fetched)],  # a PR whose digest failed still counts
        digests,
        repo=run.settings.require_repo(),
        tz=run.settings.tz,
        aliases=run.settings.tags,
        **w._asdict(),  # start, end, year, week
    )
