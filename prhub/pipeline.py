"""Wires the stages together for a run: its lifecycle, one PR, one week; dry runs go to dryrun."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from contextlib import ExitStack, closing, suppress
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from prhub import batching, dryrun, retry
from prhub.config import Settings, default_store
from prhub.digest import digest
from prhub.errors import (
    EmptySite,
    GitHubAuthError,
    GitHubUnavailable,
    Interrupted,
    PrhubError,
    PRNotMerged,
    StoreError,
)
from prhub.fanout import each, staged
from prhub.github.ratelimit import Validators
from prhub.github.source import GITHUB_IN_FLIGHT, GitHubSource, connect, same_time, version
from prhub.llm.batch import Batched, Waiting
from prhub.llm.llm import LLM
from prhub.llm.prompt import task_prompt
from prhub.model import PRDigest, PullRequest, Usage
from prhub.paths import with_attributes
from prhub.prepare import tokens
from prhub.prepare.redact import scrub
from prhub.publish import notify
from prhub.publish.post import Posted, post_week
from prhub.store.keys import digest_key, narrative_key
from prhub.store.modes import explicit_mode
from prhub.store.store import Store, StoredNarrative, holder_id
from prhub.text import plural
from prhub.weekly import analyse, narrate
from prhub.weekly.analyse import Window
from prhub.weekly.report import (
    DryRun,
    FailedPR,
    PlannedPR,
    RunStats,
    WeeklyFacts,
    WeeklyMeta,
    WeeklyReport,
)

if TYPE_CHECKING:
    from prhub.publish.site import SiteResult

Progress = Callable[[str, int, int], None]  # stage, done, total
T = TypeVar("T")
log = logging.getLogger("prhub")
LEASE_POLL = 1.0  # seconds between looks at a digest another run is making
ATTRIBUTES_AGE = 86_400.0  # seconds a stored .gitattributes is used without asking GitHub


def window(settings: Settings, **when: Any) -> Window:
    """The window of year=/week= or since=/until= (and now=) in the configured timezone."""
    return analyse.window(settings.tz, **when)


class Run:
    """One command: its services, settings and figures; recorded in the store when it ends.

    Clients passed in are used and left open; those it makes are closed when it ends.
    """

    def __init__(
        self,
        settings: Settings,
        command: str,
        *,
        source: GitHubSource | None = None,
        llm: LLM | None = None,
        store: Store | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.settings = settings
        self.command = command
        self.stats = RunStats()
        self.progress: Progress = progress or (lambda *_: None)
        self._shown = progress is not None
        self._clients = (source, llm, store)
        self._llm_lock = threading.Lock()
        self._stop = retry.StopToken()
        self._owned = ExitStack()
        self._run_id = 0
        # Stored by this run, and digests it found stored: what an interruption reports.
        self._tally = {"fetched": 0, "digested": 0, "reused": 0}
        self._holder = holder_id()
        self._attributes: str | None = None  # the repository's .gitattributes, once read
        self._attributes_lock = threading.Lock()
        self._repo_lock = threading.Lock()
        self._named = False  # whether settings.repo is GitHub's spelling yet

    @property
    def run_id(self) -> int:
        """The run's record in the store (0 before it starts)."""
        return self._run_id

    def __enter__(self) -> Run:
        self.settings.require_repo()  # before a missing key: the first thing a user must give
        tokens.warm(self.settings.encoding)
        source, llm, store = self._clients
        with ExitStack() as opening:
            if store is None:
                store = opening.enter_context(closing(Store(self.settings.store)))
            if source is None:
                source = opening.enter_context(
                    closing(GitHubSource(self.settings, stop=self._stop))
                )
            self._run_id = store.start_run(self.command)
            self._owned = opening.pop_all()
        if self._shown:  # a wait for GitHub's limit, on this run's display (a shared source too)
            source.countdown = self._countdown
        self.source, self.llm, self.store = source, llm, store
        self._spent = llm.spent if llm else Usage()
        self._started_mode = llm.mode if llm else None
        return self

    def _countdown(self, waited: int, total: int) -> None:
        """A wait for GitHub's rate limit, shown as a stage of the run."""
        self.progress("github_wait", waited, total)

    def repo(self) -> str:
        """The repository as GitHub spells it, asked once a run: that name is used everywhere
        (store keys, reports, titles), so verl-project/verl and VERL-Project/Verl are one."""
        with self._repo_lock:
            if not self._named:
                name = self.source.full_name(self.settings.require_repo())
                self.settings = self.settings.model_copy(update={"repo": name})
                self._named = True
            return self.settings.require_repo()

    def _mode(self, store: Store) -> str | None:
        """The response mode learned for this endpoint and model, unless one was chosen."""
        if explicit_mode(self.settings):
            return None  # a flag, variable or file setting wins over what the store learned
        return store.endpoint_mode(self.settings.endpoint, self.settings.model)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stats = self.stats
        stats.retries = self._stop.retries
        if self.llm is not None:
            # What this run paid for, whether it finished or not, rejected replies included.
            spent = self.llm.spent
            stats.usage = spent - self._spent
            if isinstance(self.llm, Batched):
                stats.batch_usage = self.llm.batch_spent
            if self.llm.mode != self._started_mode:
                with suppress(StoreError):
                    self.store.save_endpoint_mode(
                        self.settings.endpoint, self.settings.model, self.llm.mode
                    )
        if isinstance(exc, Interrupted):
            tally = self._tally
            # The summary counts the PRs this run got a digest for, as the note does.
            stats.prs, stats.cached = tally["digested"] + tally["reused"], tally["reused"]
            exc.kept = (
                f"{plural(tally['digested'], 'new digest')} and "
                f"{plural(tally['fetched'], 'fetched PR')} are stored"
            )
        fatal = [{"error": str(exc)}] if isinstance(exc, PrhubError) else []
        with self._owned, suppress(StoreError):  # a failing store must not hide what ended it
            self.store.finish_run(
                self._run_id,
                tokens_in=stats.usage.tokens_in,
                tokens_out=stats.usage.tokens_out,
                calls=stats.usage.calls,
                errors=[*(f.model_dump() for f in stats.errors), *fatal],
                prs=stats.prs,
                cached=stats.cached,
                failed=stats.failed,
                retries=stats.retries,
                tokens_cached=stats.usage.tokens_cached,
                repo=self.settings.repo or "",
                model=self.settings.model,
                **{f"batch_{k}": v for k, v in stats.batch_usage.model_dump().items() if v},
            )

    def llm_client(self) -> LLM:
        """The LLM client, made at the first call that needs one: a run the store can serve
        whole needs no API key."""
        with self._llm_lock:
            if self.llm is None:
                mode = self._mode(self.store)
                made = (
                    batching.client(self.settings, self.store, self._stop, mode)
                    if self.settings.batch
                    else LLM(self.settings, stop=self._stop, mode=mode)
                )
                self.llm = self._owned.enter_context(closing(made))
                self.llm.answered = lambda calls: self.progress("calls", calls, 0)
                self._spent, self._started_mode = Usage(), self.llm.mode
            return self.llm

    def summarize(self, number: int) -> PRDigest | Waiting:
        """One merged PR's digest, reusing one made before from the same inputs; in batch
        mode, what it waits for until the batch's answer is in."""
        pr = self.merged_pr(number)
        self.stats = RunStats(prs=1, failed=1)  # until the digest is made
        if self.settings.batch:
            got, waiting = batching.rounds(
                self, pr.repo, lambda: batching.deferrable(self.cached_digest)(pr)
            )
            if got is None or waiting is not None:
                self.stats = RunStats(prs=1)
                return waiting or Waiting(0, [])
            made, hit = got
        else:
            made, hit = self.cached_digest(pr)
        self.stats = RunStats(
            prs=1,
            cached=int(hit),
            usage=Usage() if hit else made.meta.usage,
            unchecked=int(bool(made.meta.failed_checks)),
        )
        return made

    def dry_run_pr(self, number: int) -> DryRun:
        """What summarizing one PR would send to the model; sends nothing."""
        return dryrun.pr_plan(self, number)

    def dry_run_week(self, w: Window) -> DryRun:
        """What a weekly run would send to the model; fetches and prepares, sends nothing."""
        return dryrun.week_plan(self, w)

    def planned(self, pr: PullRequest) -> PlannedPR:
        """The calls and prompt tokens digesting `pr` would take; none when it is stored."""
        return dryrun.planned(self, pr)

    def merged_pr(self, number: int) -> PullRequest:
        """The PR, refusing one that is not merged unless --allow-unmerged."""
        repo = self.repo()
        pr = self.load_pr(number)
        if not pr.merged and not self.settings.allow_unmerged:
            raise PRNotMerged(
                f"{repo}#{number} is not merged: pass --allow-unmerged to digest it anyway"
            )
        return pr

    def load_pr(self, number: int, updated_at: str | None = None) -> PullRequest:
        """A PR from the store when GitHub says it has not changed, else fetched and scrubbed;
        its files marked as the repository's .gitattributes says."""
        repo = self.repo()
        stored = None if self.settings.refresh else self.store.pull(repo, number)
        if stored and updated_at and same_time(stored.updated_at, updated_at):
            return with_attributes(stored.pr, self.attributes())  # no request: nothing changed
        since = Validators(stored.etag, stored.last_modified) if stored else None
        payload, validators = self.source.revalidate(repo, number, since)
        if stored and payload is None:  # GitHub's 304: unchanged, at no cost to the budget
            return with_attributes(stored.pr, self.attributes())
        if payload is None:
            raise GitHubUnavailable(f"GitHub answered 304 for {repo}#{number}: rerun later")
        if (
            stored
            and same_time(stored.updated_at, payload.get("updated_at"))
            and stored.pr.version == version(payload)
        ):
            if validators != since:  # so the next run's request is a free 304
                self.store.save_validators(repo, number, *validators)
            return with_attributes(stored.pr, self.attributes())
        pr = scrub(self.source.pull(repo, number, payload))
        self.store.save_pull(pr, payload.get("updated_at") or "", *validators)
        self._tally["fetched"] += 1
        return with_attributes(pr, self.attributes())

    def attributes(self) -> str:
        """The repository's .gitattributes: stored within a day, else read (once a run), else
        the stored copy however old when GitHub fails (a failure with none stored fails the PR:
        digests keyed without the marks would be made again once GitHub answers)."""
        repo = self.repo()
        with self._attributes_lock:
            if self._attributes is None and not self.settings.refresh:
                self._attributes = self.store.attributes(repo, max_age=ATTRIBUTES_AGE)
            if self._attributes is None:
                try:
                    self._attributes = self.source.attributes(repo)
                    self.store.save_attributes(repo, self._attributes)
                except (GitHubUnavailable, GitHubAuthError) as exc:
                    old = self.store.attributes(repo)
                    if old is None and isinstance(exc, GitHubUnavailable):
                        raise  # a token without Contents access (403) reads as none, for good
                    self._attributes = old or ""
                    log.warning("prhub: .gitattributes of %s not read (%s)", repo, exc)
            return self._attributes

    def cached_digest(self, pr: PullRequest) -> tuple[PRDigest, bool]:
        """The stored digest for exactly these inputs (and True), else a new one, stored.

        While another run on the same store makes the same digest, this one waits for it.
        """
        key = digest_key(pr, self.settings)
        if not self.settings.refresh and (found := self.store.digest(key)):
            self._tally["reused"] += 1
            return found, True

        def make() -> PRDigest:
            made = digest.digest_pr(pr, self.settings, self.llm_client(), key, memo=self.store)
            self.store.save_digest(made)
            return made

        got, new = self._once(key, lambda: self.store.digest(key), make)
        self._tally["digested" if new else "reused"] += 1
        return got, not new

    def _once(
        self, key: str, find: Callable[[], T | None], make: Callable[[], T]
    ) -> tuple[T, bool]:
        """What `find` gives, else what `make` makes under the key's lease (and True): while
        another run on the same store makes it, this one waits and takes theirs."""
        waited = False
        while not self.store.lease(key, self._holder):
            waited = True
            retry.pause(LEASE_POLL, self._stop)
            if (found := find()) is not None:
                return found, False  # made by the other run since this one asked
        try:
            # Another run may have made it between the first look and the lease.
            if (waited or not self.settings.refresh) and (found := find()) is not None:
                return found, False
            return make(), True
        finally:
            with suppress(StoreError):
                self.store.release(key, self._holder)

    def hits(self, w: Window) -> dict[int, dict[str, Any]]:
        """The search hits of the PRs merged in the window, by number; logs what fetching
        them needs of GitHub's rate limit, given what is stored."""
        repo = self.repo()
        hits = {h["number"]: h for h in self.source.merged_between(repo, w.start, w.end)}
        stored = {} if self.settings.refresh else self.store.pull_times(repo)
        self.source.plan(f"fetching {plural(len(hits), 'PR')} of {repo}", hits.values(), stored)
        return dict(sorted(hits.items()))

    def fetch_window(self, w: Window) -> tuple[dict[int, PullRequest], list[FailedPR]]:
        """Every PR merged in the window, from the store when unchanged, else from GitHub."""
        hits = self.hits(w)
        return each(
            hits,
            lambda n, hit: self.load_pr(n, hit.get("updated_at")),
            self.settings.jobs,
            lambda done: self.progress("fetch", done, len(hits)),
            self._stop.stop,
        )

    def weekly(self, w: Window, *, narrate_week: bool = True) -> WeeklyReport | Waiting:
        """Digests every PR merged in the window, computes its facts, writes the narrative; in
        batch mode, what it waits for until every digest's answers are in."""
        repo, settings = self.repo(), self.settings
        hits = self.hits(w)
        digest_pr = (
            batching.deferrable(self.cached_digest) if settings.batch else self.cached_digest
        )

        def digest_all() -> tuple[dict[int, PullRequest], dict[int, Any], list[FailedPR]]:
            # Each PR digested once fetched, the biggest first among those waiting: the LLM
            # does not wait for the last fetch, nor a big PR's calls for the small ones.
            return staged(
                hits,
                lambda n, hit: self.load_pr(n, hit.get("updated_at")),
                lambda n, pr: digest_pr(pr),
                settings.jobs,
                self.progress,
                self._stop.stop,
                size=lambda pr: pr.additions + pr.deletions,
                fetch_jobs=min(settings.jobs, GITHUB_IN_FLIGHT),  # more threads would only wait
            )

        (fetched, made, failed), waiting = (
            batching.rounds(self, repo, digest_all) if settings.batch else (digest_all(), None)
        )
        if waiting is not None:  # no week is published without all its digests
            cached = sum(got[1] for got in made.values() if got)
            self.stats = RunStats(prs=len(hits), cached=cached, failed=len(failed))
            return waiting
        digests = {n: digest.retag(d, settings) for n, (d, _) in sorted(made.items())}
        cached = sum(hit for _, hit in made.values())
        usage = sum((d.meta.usage for d, hit in made.values() if not hit), Usage())
        facts = self.facts(w, fetched, digests)
        saved, ordered, key = None, list(digests.values()), ""
        if narrate_week and digests:
            key = narrative_key(facts, ordered, settings)
            saved = None if settings.refresh else self.store.narrative(key)
            if saved is None:  # under a lease, as digests: two runs at once pay for it once
                fresh, new = self._once(
                    key,
                    lambda: self.store.narrative(key),
                    lambda: self._narrate(key, facts, ordered, fetched),
                )
                usage += fresh.usage if new else Usage()
                saved = fresh
        self.stats = RunStats(
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
                discussion_url=self.store.discussion_url(repo, facts.start, facts.end),
            ),
        )
        if narrate_week:
            self.store.save_report(report)
        return report

    def _narrate(
        self,
        key: str,
        facts: WeeklyFacts,
        ordered: list[PRDigest],
        fetched: dict[int, PullRequest],
    ) -> StoredNarrative:
        """The week's narrative, written by the model and stored under `key`."""
        self.progress("narrate", 0, 1)
        changed = {
            n: {p for f in pr.files for p in (f.path, f.previous_path) if p}
            for n, pr in fetched.items()
        }
        narrative, call_usage, dropped = narrate.narrate(
            facts, ordered, self.settings, self.llm_client(), changed
        )
        self.progress("narrate", 1, 1)
        return self.store.save_narrative(key, narrative, dropped, call_usage)

    def facts(
        self, w: Window, fetched: dict[int, PullRequest], digests: dict[int, PRDigest]
    ) -> WeeklyFacts:
        """The window's computed facts: counts, tags, hot files, authors, reverts."""
        return analyse.weekly_facts(
            [fetched[n] for n in sorted(fetched)],  # a PR whose digest failed still counts
            digests,
            repo=self.settings.require_repo(),
            tz=self.settings.tz,
            aliases=self.settings.tags,
            **w._asdict(),  # start, end, year, week
        )


def report_of(result: WeeklyReport | Waiting) -> WeeklyReport:
    """The week's report of a run that waits for no batch."""
    assert isinstance(result, WeeklyReport), result
    return result


def waits(result: object) -> str | None:
    """What a batch-mode run's result waits for, as its closing line; None for a digest or a
    report."""
    return result.line() if isinstance(result, Waiting) else None


def summarize_pr(
    number: int,
    settings: Settings,
    *,
    source: GitHubSource | None = None,
    llm: LLM | None = None,
    store: Store | None = None,
) -> PRDigest | Waiting:
    """Fetches one PR and returns its digest, reusing one made before from the same inputs
    (in batch mode, what it waits for until its answers are in)."""
    settings.require_repo()
    with Run(settings, "summarize", source=source, llm=llm, store=store) as run:
        return run.summarize(number)


def weekly(
    settings: Settings,
    *,
    year: int | None = None,
    week: int | None = None,
    since: str | None = None,
    until: str | None = None,
    now: datetime | None = None,
    source: GitHubSource | None = None,
    llm: LLM | None = None,
    store: Store | None = None,
    narrate: bool = True,
    progress: Progress | None = None,
) -> WeeklyReport | Waiting:
    """Digests every PR merged in the window, computes the week's facts, writes the narrative
    (in batch mode, what it waits for until every digest's answers are in)."""
    settings.require_repo()
    w = window(settings, year=year, week=week, since=since, until=until, now=now)
    command = "weekly" if narrate else "labels"
    with Run(settings, command, source=source, llm=llm, store=store, progress=progress) as run:
        return run.weekly(w, narrate_week=narrate)


def build_site(
    settings: Settings, out: Path, repos: list[str] | None = None, *, pdf: bool | None = None
) -> SiteResult:
    """Builds the static site of the store's repositories (or of `repos`) into `out`; PDFs
    when `pdf` (None: when Chromium is there). The store is only read."""
    from prhub.publish import site

    path = settings.store or default_store()
    if not path.exists():  # no store is made only to find it empty
        raise EmptySite(f"there is no store at {path}: run prhub weekly first, or pass --store")
    with closing(Store(path)) as store:
        return site.build(settings, store, out, repos, pdf)


def check_posts(settings: Settings) -> None:
    """Refuses, before any work, a webhook of no host prhub knows without --notify-format."""
    if settings.notify is not None:
        notify.kind(settings.notify.get_secret_value(), settings.notify_format)


def post_failed(settings: Settings, run_id: int, failed: list[PrhubError]) -> None:
    """Records in the run's record that posting its week failed: `prhub runs` shows it."""
    if failed and run_id:
        with closing(Store(settings.store)) as store, suppress(StoreError):
            store.run_failed(run_id, [str(e) for e in failed], "post")


def post(settings: Settings, report: WeeklyReport) -> Posted:
    """Posts the week as the settings ask, as a discussion and to a chat webhook, once each."""
    with ExitStack() as opened:
        store = opened.enter_context(closing(Store(settings.store)))
        client = opened.enter_context(closing(connect(settings))) if settings.discuss else None
        return post_week(report, settings, store, client)
