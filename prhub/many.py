"""Many repositories in one run (`weekly --all`): each repository's week in turn, on one GitHub
client and one store; a repository that fails is recorded and the others go on."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack, closing, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prhub import pipeline, progress, retry
from prhub.config import Settings
from prhub.errors import ConfigError, Interrupted, PostError, PrhubError, ReposFailed
from prhub.github.source import GitHubSource
from prhub.model import Usage
from prhub.options import Format
from prhub.publish import output
from prhub.publish.overview import Entry
from prhub.publish.post import post_week
from prhub.store.store import Store
from prhub.text import plural
from prhub.weekly.analyse import Window
from prhub.weekly.report import RunStats, WeeklyReport

NO_REPOS = (
    'no repositories for --all: list them in prhub.toml as repos = ["owner/a", "owner/b"], '
    'or give each a [repos."owner/name"] section'
)


@dataclass
class Outcome:
    """How one repository's run ended: exit code 0 complete, 12 partial, else its error's."""

    settings: Settings
    exit_code: int = 0
    error: str = ""
    report: WeeklyReport | None = None
    written: Path | None = None  # where its report went
    waiting: str = ""  # in batch mode, what it waits for: not complete yet, nor failed
    stats: RunStats = field(default_factory=RunStats)

    @property
    def repo(self) -> str:
        return self.settings.require_repo()


def repo_settings(base: Settings, load: Callable[[str], Settings]) -> list[Settings]:
    """Each configured repository's settings, its own section applied, all under the run's one
    --jobs bound; a ConfigError before anything runs when there are none or one is malformed."""
    if not base.repos:
        raise ConfigError(NO_REPOS)
    return [load(name).model_copy(update={"jobs": base.jobs}) for name in base.repos]


class Clients:
    """What the repositories share: one GitHub client per API URL (its requests in flight and
    its rate budget are the token's, whichever repository asks) and one store per path. Each
    repository's run makes its own LLM client, when it needs one, as a single run does."""

    def __init__(self) -> None:
        self._owned = ExitStack()
        self._sources: dict[str, GitHubSource] = {}
        self._stores: dict[Path | None, Store] = {}
        self.stop = retry.StopToken()  # counts the shared GitHub client's retries

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


def weekly_all(
    base: Settings,
    load: Callable[[str], Settings],
    when: Mapping[str, Any],
    fmt: Format,
    *,
    quiet: bool = False,
    dry_run: bool = False,
) -> list[Outcome]:
    """Every configured repository's week, one after another (the run's --jobs bound holds
    across them), reports to reports/ and the week's index beside them. A dry run prints each
    plan instead. Raises ReposFailed when any is not complete, after the summary line."""
    started = time.monotonic()
    runs = [(s, pipeline.window(s, **when)) for s in repo_settings(base, load)]
    outcomes: list[Outcome] = []
    with Clients() as clients:
        try:
            for i, (s, w) in enumerate(runs, 1):
                _say(f"{s.require_repo()} ({i}/{len(runs)})", quiet)
                one = _dry_run if dry_run else _weekly
                outcomes.append(one(s, w, clients, fmt, quiet))
                if outcomes[-1].exit_code:  # an error is said, quiet or not
                    _say(f"error: {outcomes[-1].repo}: {outcomes[-1].error}", False)
        except Interrupted as exc:
            done = sum(not o.exit_code for o in outcomes)
            ran = plural(len(runs), "repository", "repositories")
            exc.kept = f"{done} of {ran} complete" + (f"; {exc.kept}" if exc.kept else "")
            raise
        if not dry_run:
            entries = _entries(runs, outcomes, clients, fmt)
            index, changed = output.publish_index(entries, pipeline.window(base, **when), base.tz)
            if quiet:
                output.write(f"{index}\n", None)
            _say(f"{'wrote' if changed else 'unchanged'} {index}", quiet)
    _say(summary_line(outcomes, time.monotonic() - started, dry_run), quiet)
    _raise_failed(outcomes)
    return outcomes


def _say(text: str, quiet: bool) -> None:
    """A line on stderr, as a run's other lines are, unless quiet."""
    if not quiet:
        sys.stderr.write(f"prhub: {text}\n")
        sys.stderr.flush()


def _weekly(
    s: Settings,
    w: Window,
    clients: Clients,
    fmt: Format,
    quiet: bool,
) -> Outcome:
    """One repository's week, published; its failure caught and recorded, never raised."""
    started, retries = time.monotonic(), clients.stop.retries
    outcome = Outcome(s)
    display = progress.Display(quiet)
    run: pipeline.Run | None = None
    try:
        with display:
            run = pipeline.Run(
                s, "weekly", source=clients.source(s), store=clients.store(s), progress=display
            )
            with run:
                result = run.weekly(w)
            if isinstance(result, WeeklyReport):
                outcome.report = result
                outcome.written, changed = output.publish_weekly(result, fmt, None)
                if quiet:
                    output.write(f"{outcome.written}\n", None)  # for scripts, as `weekly -q`
                else:
                    display.line(f"{'wrote' if changed else 'unchanged'} {outcome.written}")
                if (
                    s.discuss or s.notify
                ):  # its section's or the flags', after its report is written
                    _post(outcome, s, clients, fmt, display, run.run_id)
                output.fail_partly(outcome.report)
            else:  # batch mode: what it waits for
                outcome.waiting = result.line()
    except PrhubError as exc:
        outcome.exit_code, outcome.error = exc.exit_code, str(exc)
    _summed(outcome, run, clients, retries, started, display)
    if outcome.waiting:
        _say(f"{outcome.repo}: {outcome.waiting}", False)  # said, quiet or not
    return outcome


def _summed(
    outcome: Outcome,
    run: pipeline.Run | None,
    clients: Clients,
    retries: int,
    started: float,
    display: progress.Display,
) -> None:
    """Gives the outcome its run's figures, and says their summary line."""
    if run is not None:
        outcome.settings = run.settings  # with the name as GitHub spells it, once asked
        outcome.stats = run.stats
        outcome.stats.retries += clients.stop.retries - retries  # its share of GitHub's
        if outcome.report is not None or outcome.waiting or run.stats.usage.calls:
            line = progress.run_summary(outcome.stats, time.monotonic() - started, run.settings)
            display.line(f"{outcome.repo}: {line}")


def _post(
    outcome: Outcome,
    s: Settings,
    clients: Clients,
    fmt: Format,
    display: progress.Display,
    run_id: int,
) -> None:
    """Posts a repository's week as its settings ask; a failed post fails the repository."""
    assert outcome.report is not None
    client = clients.source(s).client if s.discuss else None
    posted = post_week(outcome.report, s, clients.store(s), client)
    if posted.report is not outcome.report:  # written again, with its discussion's link
        outcome.report = posted.report
        output.publish_weekly(posted.report, fmt, None)
    for line in posted.done:
        display.line(line)
    if posted.failed:
        clients.store(s).run_failed(run_id, [str(e) for e in posted.failed], "post")
        raise PostError("; ".join(map(str, posted.failed)))


def _dry_run(
    s: Settings,
    w: Window,
    clients: Clients,
    fmt: Format,
    quiet: bool,
) -> Outcome:
    """What one repository's week would send; printed, or its failure recorded."""
    outcome = Outcome(s)
    try:
        with (
            progress.Display(quiet) as display,
            pipeline.Run(
                s, "dry-run", source=clients.source(s), store=clients.store(s), progress=display
            ) as run,
        ):
            plan = run.dry_run_week(w)
        output.write(progress.dry_run_text(plan, s), None)
    except PrhubError as exc:
        outcome.exit_code, outcome.error = exc.exit_code, str(exc)
    return outcome


def _entries(
    runs: list[tuple[Settings, Window]], outcomes: list[Outcome], clients: Clients, fmt: Format
) -> list[Entry]:
    """The index's rows: a repository that failed this time shows the report an earlier run
    made of the same window, when its file is there."""
    entries = []
    for (_, w), o in zip(runs, outcomes, strict=True):
        report, written = o.report, o.written
        if report is None:
            with suppress(PrhubError):
                report = clients.store(o.settings).report(o.repo, w.start, w.end)
            written = output.report_path(report, fmt) if report else None
            if written is None or not written.is_file():
                report = written = None
        file = written.relative_to(output.REPORTS) if written else None
        entries.append(Entry(o.repo, o.exit_code, report, file))
    return entries


def summary_line(outcomes: list[Outcome], seconds: float, dry_run: bool = False) -> str:
    """The run's last line: which repositories are complete and which not, then the totals of
    their runs as a single run's summary counts them."""
    done = [o.repo for o in outcomes if not o.exit_code and not o.waiting]
    waiting = [o.repo for o in outcomes if o.waiting]
    failed = [f"{o.repo}: exit {o.exit_code}" for o in outcomes if o.exit_code]
    line = f"{plural(len(outcomes), 'repository', 'repositories')}: {len(done)} complete"
    line += f" ({', '.join(done)})" if done else ""
    line += f", {len(waiting)} waiting for a batch ({', '.join(waiting)})" if waiting else ""
    line += f", {len(failed)} failed ({'; '.join(failed)})" if failed else ""
    if dry_run:
        return line
    stats = [o.stats for o in outcomes]
    usage = sum((x.usage for x in stats), Usage())
    prs, cached, lost = (sum(getattr(x, n) for x in stats) for n in ("prs", "cached", "failed"))
    hits = f" ({usage.tokens_cached:,} cached)" if usage.tokens_cached else ""
    return (
        f"{line} · {plural(prs, 'PR')} ({cached} from the store, {lost} failed) · "
        f"{plural(usage.calls, 'LLM call')} · "
        f"{usage.tokens_in:,} tokens in{hits} / {usage.tokens_out:,} out · {_cost(outcomes)} · "
        f"{plural(sum(x.retries for x in stats), 'retry', 'retries')} · {seconds:.1f} s"
    )


def _cost(outcomes: list[Outcome]) -> str:
    """The estimated cost, summed per model: repositories may use models of their own."""
    by_model: dict[str, tuple[Settings, Usage, Usage]] = {}
    for o in outcomes:
        s, usage, batch = by_model.get(o.settings.model, (o.settings, Usage(), Usage()))
        by_model[o.settings.model] = (s, usage + o.stats.usage, batch + o.stats.batch_usage)
    costs = [progress.cost(u, s, b) for s, u, b in by_model.values() if u.calls or u.tokens_in]
    return " + ".join(costs) or "$0.00"


def exit_code(outcomes: list[Outcome]) -> int:
    """0 when every repository is complete; else the code they failed with, when they share
    one; else ReposFailed's."""
    codes = {o.exit_code for o in outcomes if o.exit_code}
    if not codes:
        return 0
    return codes.pop() if len(codes) == 1 else ReposFailed.exit_code


def _raise_failed(outcomes: list[Outcome]) -> None:
    failed = [o for o in outcomes if o.exit_code]
    if not failed:
        return
    names = ", ".join(o.repo for o in failed)
    them = "it" if len(failed) == 1 else "them"
    raise ReposFailed(
        f"{len(failed)} of {plural(len(outcomes), 'repository', 'repositories')} not complete "
        f"({names}): rerun to complete {them}; what the others did is kept",
        exit_code(outcomes),
    )
