"""A run's lifecycle: its clients, settings and figures, the PRs it fetches and the digests it
makes or finds stored; recorded in the store when it ends."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from contextlib import ExitStack, closing, suppress
from types import TracebackType
from typing import Any, TypeVar

from prhub import retry
from prhub.config import Settings
from prhub.digest import digest
from prhub.errors import (
    GitHubAuthError,
    GitHubUnavailable,
    Interrupted,
    PrhubError,
    PRNotMerged,
    StoreError,
)
from prhub.github.ratelimit import Validators
from prhub.github.source import GitHubSource
from prhub.github.source_payload import same_time, version
from prhub.llm.llm import LLM
from prhub.model import FailedPR, Neighbour, PRDigest, PullRequest, RunStats, Usage
from prhub.paths import with_attributes
from prhub.prepare import tokens
from prhub.prepare.redact import scrub
from prhub.run.fanout import each
from prhub.run.keys import digest_key
from prhub.store.db import holder_id
from prhub.store.modes import explicit_mode
from prhub.store.store import Store
from prhub.text import plural
from prhub.weekly import analyse
from prhub.weekly.analyse import Window

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
        stop: retry.StopToken | None = None,
    ) -> None:
        self.settings = settings
        self.command = command
        self.stats = RunStats()
        self.progress: Progress = progress or (lambda *_: None)
        self._shown = progress is not None
        self._clients = (source, llm, store)
        self._llm_lock = threading.Lock()
        # Stops its requests in every thread once it ends for an error; counts its retries.
        self.stop = stop or retry.StopToken()
        self._owned = ExitStack()
        self._run_id = 0
        # Stored by this run, and digests it found stored: what an interruption reports.
        self._tally = {"fetched": 0, "digested": 0, "reused": 0}
        self._holder = holder_id()
        self._attributes: str | None = None  # the repository's .gitattributes, once read
        self._attributes_lock = threading.Lock()
        self._repo_lock = threading.Lock()
        self._named = False  # whether settings.repo is GitHub's spelling yet
        self._warmed = False  # whether the tokenizer is loading: only once a PR is new

    @property
    def run_id(self) -> int:
        """The run's record in the store (0 before it starts)."""
        return self._run_id

    def __enter__(self) -> Run:
        self.settings.require_repo()  # before a missing key: the first thing a user must give
        source, llm, store = self._clients
        with ExitStack() as opening:
            if store is None:
                store = opening.enter_context(closing(Store(self.settings.store)))
            if source is None:
                source = opening.enter_context(closing(GitHubSource(self.settings, stop=self.stop)))
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
        stats.retries = self.stop.retries
        if self.llm is not None:
            # What this run paid for, whether it finished or not, rejected replies included.
            spent = self.llm.spent
            stats.usage = spent - self._spent
            if self.settings.batch:
                from prhub.llm.batch import Batched

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
                if self.settings.batch:  # batch mode's client, loaded by a batch run only
                    from prhub.run import book

                    made: LLM = book.client(self.settings, self.store, self.stop, mode)
                else:
                    made = LLM(self.settings, stop=self.stop, mode=mode)
                self.llm = self._owned.enter_context(closing(made))
                self.llm.answered = lambda calls: self.progress("calls", calls, 0)
                self._spent, self._started_mode = Usage(), self.llm.mode
            return self.llm

    def warm(self) -> None:
        """Loads the tokenizer on a thread of its own once the run has work for it: a run the
        store answers whole never loads it."""
        if not self._warmed:
            self._warmed = True
            tokens.warm(self.settings.encoding)

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
        self.warm()  # a changed PR is digested next: its tokenizer loads while it is fetched
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
                    log.warning(".gitattributes of %s not read (%s)", repo, exc)
            return self._attributes

    def cached_digest(
        self, pr: PullRequest, neighbours: Sequence[Neighbour] = ()
    ) -> tuple[PRDigest, bool]:
        """The stored digest for exactly these inputs (and True), else a new one, stored;
        `neighbours` are the related PRs its request names.

        While another run on the same store makes the same digest, this one waits for it.
        """
        key = digest_key(pr, self.settings, neighbours)
        if not self.settings.refresh and (found := self.store.digest(key)):
            self._tally["reused"] += 1
            return found, True

        def make() -> PRDigest:
            self.warm()
            made = digest.digest_pr(
                pr, self.settings, self.llm_client(), key, memo=self.store, neighbours=neighbours
            )
            self.store.save_digest(made)
            return made

        got, new = self.once(key, lambda: self.store.digest(key), make)
        self._tally["digested" if new else "reused"] += 1
        return got, not new

    def once(self, key: str, find: Callable[[], T | None], make: Callable[[], T]) -> tuple[T, bool]:
        """What `find` gives, else what `make` makes under the key's lease (and True): while
        another run on the same store makes it, this one waits and takes theirs."""
        waited = False
        while not self.store.lease(key, self._holder):
            waited = True
            retry.pause(LEASE_POLL, self.stop)
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
            self.stop.stop,
        )
