"""One PR's digest and one week's report, as a run makes them: fetched, digested knowing their
neighbours (in batch mode over rounds), the week's facts computed beside the last period's, and
its narrative written, each stored."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from prhub.digest import digest
from prhub.github.source import GITHUB_IN_FLIGHT
from prhub.llm.prompt import task_prompt
from prhub.model import (
    FailedPR,
    LastPeriod,
    PRDigest,
    PullRequest,
    RunStats,
    Usage,
    WeeklyFacts,
    WeeklyMeta,
    WeeklyReport,
)
from prhub.run import related
from prhub.run.fanout import each, staged
from prhub.run.keys import narrative_key
from prhub.run.run import Run
from prhub.store.store import StoredNarrative
from prhub.weekly import analyse, narrate
from prhub.weekly.analyse import Window, week_window
from prhub.weekly.ground import emptied, hollow

log = logging.getLogger("prhub")
# The narrative's sections as the operator's warning names them.
SECTION_NAMES = {
    "lead": "导语",
    "summary": "执行摘要",
    "highlights": "亮点",
    "key_changes": "重点变化",
    "trends": "模块与主题趋势",
    "risks": "风险观察",
    "key_prs": "重点 PR 速览",
    "follow_ups": "后续建议",
    "carried_over": "上期跟进",
}

if TYPE_CHECKING:  # batch mode's modules are loaded only by a run in batch mode
    from prhub.llm.batch import Waiting


def summarize(run: Run, number: int) -> PRDigest | Waiting:
    """One merged PR's digest, reusing one made before from the same inputs; in batch
    mode, what it waits for until the batch's answer is in."""
    pr = run.merged_pr(number)
    run.stats = RunStats(prs=1, failed=1)  # until the digest is made
    near = related.pr_neighbours(run, pr)
    if run.settings.batch:
        from prhub.llm.batch import Waiting
        from prhub.run.batching import deferrable, rounds

        got, waiting = rounds(run, pr.repo, lambda: deferrable(run.cached_digest)(pr, near))
        if got is None or waiting is not None:
            run.stats = RunStats(prs=1)
            return waiting or Waiting(0, [])
        made, hit = got
    else:
        made, hit = run.cached_digest(pr, near)
    run.stats = RunStats(
        prs=1,
        cached=int(hit),
        usage=Usage() if hit else made.meta.usage,
        unchecked=int(bool(made.meta.failed_checks)),
    )
    return made


Digested = tuple[dict[int, PullRequest], dict[int, Any], list[FailedPR], dict[int, PullRequest]]


def weekly(run: Run, w: Window, *, narrate_week: bool = True) -> WeeklyReport | Waiting:
    """Digests every PR merged in the window, computes its facts, writes the narrative; in
    batch mode, what it waits for until every digest's answers are in."""
    repo, settings = run.repo(), run.settings
    hits = run.hits(w)
    digest_pr: Any = run.cached_digest
    if settings.batch:
        from prhub.run.batching import deferrable, rounds

        digest_pr = deferrable(run.cached_digest)

    def digest_all() -> Digested:
        # Every PR is fetched before any is digested: a digest names the PRs of its week
        # that changed the same files, so it needs them all.
        fetched, lost = each(
            hits,
            lambda n, hit: run.load_pr(n, hit.get("updated_at")),
            min(settings.jobs, GITHUB_IN_FLIGHT),  # more threads would only wait
            lambda done: run.progress("fetch", done, len(hits)),
            run.stop.stop,
        )
        near, targets = related.week_neighbours(run, fetched)

        def tick(stage: str, done: int, total: int) -> None:
            if stage == "summarize":
                run.progress(stage, done, total)

        # The biggest first: a big PR's calls do not wait for the small ones.
        _, made, failed = staged(
            fetched,
            lambda n, pr: pr,
            lambda n, pr: digest_pr(pr, near[n]),
            settings.jobs,
            tick,
            run.stop.stop,
            size=lambda pr: pr.additions + pr.deletions,
        )
        return fetched, made, sorted(lost + failed, key=lambda f: f.number), targets

    (fetched, made, failed, targets), waiting = (
        rounds(run, repo, digest_all) if settings.batch else (digest_all(), None)
    )
    if waiting is not None:  # no week is published without all its digests
        cached = sum(got[1] for got in made.values() if got)
        run.stats = RunStats(prs=len(hits), cached=cached, failed=len(failed))
        return waiting
    digests = {n: digest.retag(d, settings) for n, (d, _) in sorted(made.items())}
    cached = sum(hit for _, hit in made.values())
    usage = sum((d.meta.usage for d, hit in made.values() if not hit), Usage())
    facts = week_facts(run, w, fetched, digests, targets)
    facts = facts.model_copy(update={"last": last_period(run, w)})
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
            dropped=list(saved.drops) if saved else [],
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
    """The week's narrative, written by the model and stored under `key`; a section that
    grounding emptied is said on a warning line, as is a narrative it emptied whole."""
    run.progress("narrate", 0, 1)
    changed = {
        n: {p for f in pr.files for p in (f.path, f.previous_path) if p}
        for n, pr in fetched.items()
    }
    narrative, call_usage, dropped = narrate.narrate(
        facts, ordered, run.settings, run.llm_client(), changed
    )
    run.progress("narrate", 1, 1)
    lost = emptied(narrative, dropped)
    if dropped and hollow(narrative):
        log.warning(
            "grounding removed the whole weekly narrative (%d items dropped); --verbose logs each",
            len(dropped),
        )
    elif lost:
        names = "、".join(SECTION_NAMES[name] for name in lost)
        log.warning("grounding emptied the narrative's %s; --verbose logs each drop", names)
    return run.store.save_narrative(key, narrative, dropped, call_usage)


def last_period(run: Run, w: Window) -> LastPeriod | None:
    """The stored report of the period before `w`: the ISO week before a week, the window of
    the same length just before any other; None when the store has none."""
    if w.week is not None:
        monday = (w.start - timedelta(days=7)).date().isocalendar()
        start, end = week_window(monday.year, monday.week, run.settings.tz)
        year, week = monday.year, monday.week
    else:
        start, end, year, week = w.start - (w.end - w.start), w.start, w.year, None
    stored = run.store.report(run.repo(), start, end)
    if stored is None:
        return None
    n = stored.narrative
    return LastPeriod(
        start=start,
        end=end,
        year=year if w.week is not None else start.year,
        week=week,
        prs=stored.facts.prs,
        tags=stored.facts.tags,
        risks=[r.text for r in n.risks] if n else [],
        follow_ups=list(n.follow_ups) if n else [],
    )


def week_facts(
    run: Run,
    w: Window,
    fetched: dict[int, PullRequest],
    digests: dict[int, PRDigest],
    reverted: dict[int, PullRequest] | None = None,
) -> WeeklyFacts:
    """The window's computed facts: counts, tags, hot files, authors, reverts (with the PR
    each undoes where the run found it)."""
    return analyse.weekly_facts(
        [fetched[n] for n in sorted(fetched)],  # a PR whose digest failed still counts
        digests,
        repo=run.settings.require_repo(),
        tz=run.settings.tz,
        aliases=run.settings.tags,
        reverted=reverted or {},
        **w._asdict(),  # start, end, year, week
    )
