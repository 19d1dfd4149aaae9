"""The use cases, each written once: one function per command, each returning one outcome that
the CLI prints. A week is run, published, posted and published again here and nowhere else;
`weekly --all` is a loop over `weekly` with shared clients (`run.many`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prhub import retry
from prhub.config import Settings, default_store
from prhub.errors import BatchPending, EmptySite, Interrupted, PartialFailure, PrhubError
from prhub.github.source import GitHubSource
from prhub.llm import prompt
from prhub.model import DryRun, PRDigest, RunStats, WeeklyReport
from prhub.publish import notify, output
from prhub.publish.formats import Format
from prhub.publish.post import post_week
from prhub.publish.site import SiteResult
from prhub.publish.site import build as build_site
from prhub.run import ci, dryrun, figures, published, restore, week
from prhub.run import forget as forgetting
from prhub.run.run import Progress, Run, window
from prhub.store import modes
from prhub.store.store import Store
from prhub.weekly.ground import hollow

if TYPE_CHECKING:  # batch mode's client is loaded only by a run in batch mode
    from prhub.llm.batch import Waiting

Publish = Callable[[WeeklyReport], "tuple[Path | None, bool] | None"]


@dataclass
class Outcome:
    """How a command, or one repository's week, ended: what it made, where that went, what it
    waits for, what it cost, and why it failed. Its exit code follows from these."""

    settings: Settings
    stats: RunStats | None = None  # the run's figures; None when no run started
    seconds: float = 0.0
    finished: bool = False  # its result was published (a digest, a report, a plan) or waits
    digest: PRDigest | None = None
    report: WeeklyReport | None = None
    plan: DryRun | None = None
    written: Path | None = None  # where the result went; None for stdout
    changed: bool = False  # whether `written` was written anew
    waiting: str = ""  # batch mode: what the run waits for, as its closing line
    posted: list[str] = field(default_factory=list)  # what posting did, a line each
    # After the result was kept: a week missing PRs, posts that failed. Each is said.
    problems: list[PrhubError] = field(default_factory=list)
    error: PrhubError | Interrupted | None = None  # what stopped the command

    @property
    def repo(self) -> str:
        return self.settings.repo or ""

    @property
    def exit_code(self) -> int:
        """The error's code; else the last problem's (a partial week after the failed posts);
        else 0, also while a batch is waited for."""
        if self.error is not None:
            return self.error.exit_code
        return self.problems[-1].exit_code if self.problems else 0

    @property
    def summary(self) -> str:
        """The run's closing line, when it is due: it finished, or paid for calls before it
        failed."""
        stats = self.stats
        if stats is None or not (self.finished or stats.usage.calls):
            return ""
        return figures.run_summary(stats, self.seconds, self.settings)


class Clients:
    """What the runs of a command share: one GitHub client per API URL (its requests in flight
    and its rate budget are the token's, whichever repository asks) and one store per path.
    Each run makes its own LLM client when it needs one."""

    def __init__(self) -> None:
        self._owned = ExitStack()
        self._sources: dict[str, GitHubSource] = {}
        self._stores: dict[Path | None, Store] = {}
        self.stop = retry.StopToken()  # the shared GitHub clients' stop, and their retries

    def source(self, s: Settings) -> GitHubSource:
        if s.github_url not in self._sources:
            made = GitHubSource(s, stop=self.stop)
            self._sources[s.github_url] = self._owned.enter_context(closing(made))
        return self._sources[s.github_url]

    def store(self, s: Settings) -> Store:
        if s.store not in self._stores:
            self._stores[s.store] = self._owned.enter_context(closing(Store(s.store)))
        return self._stores[s.store]

    def __enter__(self) -> Clients:
        return self

    def __exit__(self, *exc: object) -> None:
        self._owned.close()


class _Running:
    """One run of a command on shared clients: the outcome gets its figures and its time
    whichever way the run ends, and an error or interruption is recorded, not raised."""

    def __init__(self, outcome: Outcome, clients: Clients, shared: bool) -> None:
        self.outcome, self.clients, self.shared = outcome, clients, shared
        self.started, self.retries = time.monotonic(), clients.stop.retries
        self.run: Run | None = None

    def start(self, command: str, progress: Progress | None = None) -> Run:
        s = self.outcome.settings
        s.require_repo()  # before a missing key or store: the first thing a user must give
        source, store = self.clients.source(s), self.clients.store(s)
        # Alone, the run stops its GitHub client with it; sharing one, only its own requests.
        stop = None if self.shared else self.clients.stop
        self.run = Run(s, command, source=source, store=store, progress=progress, stop=stop)
        return self.run

    def __enter__(self) -> _Running:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> bool:
        o = self.outcome
        o.seconds = time.monotonic() - self.started
        if self.run is not None:
            o.settings = self.run.settings  # with the name as GitHub spells it, once asked
            o.stats = self.run.stats
            if self.shared:  # its share of the shared GitHub client's retries
                o.stats.retries += self.clients.stop.retries - self.retries
        if isinstance(exc, PrhubError | Interrupted):
            o.error = exc
            return True
        return False


def summarize(
    settings: Settings,
    number: int,
    fmt: Format = Format.markdown,
    out: Path | None = None,
    *,
    progress: Progress | None = None,
) -> Outcome:
    """One merged PR's digest, written to `out` (None: stdout); in batch mode, what it waits
    for until the batch's answer is in."""
    outcome = Outcome(settings)
    with Clients() as clients, _Running(outcome, clients, shared=False) as running:
        with running.start("summarize", progress) as run:
            result = week.summarize(run, number)
        if not isinstance(result, PRDigest):
            _waits(outcome, result)
        else:
            outcome.digest = result
            output.publish_digest(result, outcome.settings, fmt, out)
        outcome.finished = True
    return outcome


def weekly(
    settings: Settings,
    when: Mapping[str, Any],
    fmt: Format = Format.markdown,
    out: str | None = None,
    *,
    clients: Clients | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """The week's report: run, written (`out`, "-" for stdout, else its report path), posted
    as the settings ask, and written again when posting gave it a discussion's link."""
    return _week(
        settings, when, "weekly", lambda r: output.publish_weekly(r, fmt, out), clients, progress
    )


def labels(
    settings: Settings,
    when: Mapping[str, Any],
    tag: str | None,
    fmt: Format = Format.markdown,
    out: Path | None = None,
    *,
    progress: Progress | None = None,
) -> Outcome:
    """The week's digests grouped by tag, written to `out` (None: stdout); no narrative."""

    def publish(r: WeeklyReport) -> None:
        output.publish_labels(r, tag, settings, out, fmt)

    return _week(settings, when, "labels", publish, None, progress)


def _week(
    settings: Settings,
    when: Mapping[str, Any],
    command: str,
    publish: Publish,
    clients: Clients | None,
    progress: Progress | None,
) -> Outcome:
    """Runs a week, publishes its report, posts it (weekly only) and publishes it again with
    its discussion's link; a partial week and failed posts are the outcome's problems."""
    outcome = Outcome(settings)
    with ExitStack() as stack:
        shared = clients is not None
        clients = clients or stack.enter_context(Clients())
        running = stack.enter_context(_Running(outcome, clients, shared))
        w = window(settings, **when)
        with running.start(command, progress) as run:
            result = week.weekly(run, w, narrate_week=command == "weekly")
        if not isinstance(result, WeeklyReport):  # no week is published without its digests
            _waits(outcome, result)
            outcome.finished = True
            return outcome
        outcome.report = result
        outcome.written, outcome.changed = publish(result) or (None, False)
        outcome.finished = True
        s = outcome.settings
        if command == "weekly" and (s.discuss or s.notify):
            # After the report is written: it is never lost to a failed post.
            client = clients.source(s).client if s.discuss else None
            posted = post_week(result, s, clients.store(s), client)
            if outcome.written is not None and posted.report is not result:
                outcome.report = posted.report
                publish(posted.report)  # with the link to its new discussion
            outcome.posted, outcome.problems = posted.done, list(posted.failed)
            if posted.failed:  # `prhub runs` says the run's week was not posted
                errors = [str(e) for e in posted.failed]
                clients.store(s).run_failed(run.run_id, errors, "post")
        if (lost := hollowed(result)) is not None:  # the report says so, and so does the run
            outcome.problems.append(lost)
        if result.failed:  # said last, and its code is the exit code: the report lacks PRs
            outcome.problems.append(output.partly(result))
    return outcome


def check_posts(settings: Settings) -> Settings:
    """`settings`, once what `weekly` would post to is known: a webhook of no host prhub
    knows, without --notify-format, is refused before any work."""
    if settings.notify is not None:
        notify.kind(settings.notify.get_secret_value(), settings.notify_format)
    return settings


def hollowed(report: WeeklyReport) -> PartialFailure | None:
    """The error (exit 12) of a report whose narrative grounding emptied: it is published
    with the facts and digests alone, and says so; never as if whole."""
    n, dropped = report.narrative, report.meta.dropped_citations
    if n is None or not dropped or not hollow(n):
        return None
    return PartialFailure(
        f"grounding removed all of the weekly narrative ({dropped} items its input does not "
        "back); the report shows the facts and digests alone and says so; --verbose logs "
        "each drop, rerun with --refresh to write it again"
    )


def _waits(outcome: Outcome, result: Waiting) -> None:
    """What a batch-mode run waits for: its closing line, or with --wait an error (the report
    is not written yet)."""
    s = outcome.settings
    if s.wait:
        waited = f"waited {s.batch_wait:g} s (PRHUB_BATCH_WAIT)"
        outcome.error = BatchPending(f"{waited} and {result.line()}")
    else:
        outcome.waiting = result.line()


def dry_run(
    settings: Settings,
    *,
    number: int | None = None,
    when: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    clients: Clients | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """What summarizing PR `number`, or a week's run, would send to the model, written as text
    to `out` (None or "-": stdout); fetches and prepares, sends nothing."""
    outcome = Outcome(settings)
    with ExitStack() as stack:
        shared = clients is not None
        clients = clients or stack.enter_context(Clients())
        running = stack.enter_context(_Running(outcome, clients, shared))
        with running.start("dry-run", progress) as run:
            if number is not None:
                plan = dryrun.pr_plan(run, number)
            else:
                plan = dryrun.week_plan(run, window(settings, **(when or {})))
        outcome.plan, outcome.finished = plan, True
        target = None if out in (None, "-") else Path(str(out))
        output.write(figures.dry_run_text(plan, outcome.settings), target)
    outcome.stats = None  # a dry run pays for nothing: no summary line
    return outcome


def site(
    settings: Settings, out: Path, repos: list[str] | None = None, *, pdf: bool | None = None
) -> SiteResult:
    """Builds the static site of the store's repositories (or of `repos`) into `out`; PDFs
    when `pdf` (None: when Chromium is there). The store is only read."""
    path = settings.store or default_store()
    if not path.exists():  # no store is made only to find it empty
        raise EmptySite(f"there is no store at {path}: run prhub weekly first, or pass --store")
    with closing(Store(path)) as store:
        return build_site(settings, store, out, repos, pdf)


def import_(settings: Settings, folder: Path) -> restore.Restored:
    """Restores the digests and weekly reports of a built site or a folder of JSON."""
    return restore.import_dir(folder, settings)


def restore_site(settings: Settings, url: str) -> published.Restored:
    """Rebuilds the store from the site published at `url`, by its manifest."""
    return published.restore_site(url, settings)


def forget(settings: Settings, **target: Any) -> str:
    """Takes a window's report, a PR's digests or a repository out of the store, or prunes
    the fetched data of published PRs (run.forget); its line."""
    return forgetting.forget(settings, **target)


def runs(settings: Settings, limit: int) -> list[dict[str, Any]]:
    """The store's past runs, newest first."""
    return modes.runs(settings, limit)


def learned_mode(settings: Settings) -> tuple[str, str] | None:
    """The response mode the store learned for the endpoint and model, and when; None when a
    setting chose one."""
    return None if modes.explicit_mode(settings) else modes.learned_mode(settings)


def forget_mode(settings: Settings) -> bool:
    """Forgets the response mode learned for the endpoint and model; whether there was one."""
    return modes.forget_mode(settings)


def prompts(folder: Path | None) -> list[str]:
    """The prompt templates and their versions, a line each."""
    return prompt.listing(folder)


def init_ci(
    path: Path,
    *,
    action: str | None = None,
    install: str | None = None,
    force: bool = False,
    pages: bool = False,
    all_repos: bool = False,
) -> tuple[Path, str]:
    """Writes the weekly workflow into the checkout at `path`; where, and the next steps."""
    written = ci.init_ci(
        path, action=action, install=install, force=force, pages=pages, all_repos=all_repos
    )
    steps = ci.next_steps(written, action=action, install=install, pages=pages, all_repos=all_repos)
    return written, steps
