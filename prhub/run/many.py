"""Many repositories in one run (`weekly --all`): each configured repository's week in turn,
through `commands.weekly` on shared clients; a repository that fails is recorded and the
others go on; the week's index is written beside their reports."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from prhub.config import Settings
from prhub.errors import ConfigError, Interrupted, PrhubError, ReposFailed
from prhub.model import RunStats, Usage
from prhub.publish import output
from prhub.publish.formats import Format
from prhub.publish.overview import Entry
from prhub.run import commands, figures
from prhub.run.commands import Clients, Outcome
from prhub.run.run import Progress, window
from prhub.text import plural

NO_REPOS = (
    'no repositories for --all: list them in prhub.toml as repos = ["owner/a", "owner/b"], '
    'or give each a [repos."owner/name"] section'
)


class Show(Protocol):
    """What the caller shows of a many-repository run as it goes."""

    def started(self, settings: Settings, i: int, n: int) -> Progress | None:
        """A repository's run begins: its progress, or None to show none."""

    def finished(self, outcome: Outcome) -> None:
        """A repository's run ended: its lines, at once."""


class Silent:
    """Shows nothing: for scripts and benchmarks that read the outcome."""

    def started(self, settings: Settings, i: int, n: int) -> Progress | None:
        return None

    def finished(self, outcome: Outcome) -> None:
        pass


@dataclass
class AllOutcome:
    """How `weekly --all` ended: each repository's outcome, and the week's index. An outcome
    is kept without its report once shown (the report is in its file and the store), so a
    run's memory does not grow with the repositories it has done."""

    outcomes: list[Outcome] = field(default_factory=list)
    index: Path | None = None
    changed: bool = False
    seconds: float = 0.0
    dry_run: bool = False
    error: PrhubError | None = None  # ReposFailed when any repository is not complete

    @property
    def exit_code(self) -> int:
        return self.error.exit_code if self.error else 0


def repo_settings(base: Settings, load: Callable[[str], Settings]) -> list[Settings]:
    """Each configured repository's settings, its own section applied, all under the run's one
    --jobs bound; a ConfigError before anything runs when there are none or one is malformed."""
    if not base.repos:
        raise ConfigError(NO_REPOS)
    return [load(name).model_copy(update={"jobs": base.jobs}) for name in base.repos]


def weekly_all(
    base: Settings,
    load: Callable[[str], Settings],
    when: Mapping[str, Any],
    fmt: Format,
    show: Show | None = None,
    *,
    dry_run: bool = False,
) -> AllOutcome:
    """Every configured repository's week, one after another (the run's --jobs bound holds
    across them), its report in reports/ and the week's index beside them; with `dry_run`,
    each plan printed instead."""
    started = time.monotonic()
    show = show or Silent()
    repos = repo_settings(base, load)
    done = AllOutcome(dry_run=dry_run)
    entries: list[Entry] = []
    with Clients() as clients:
        for i, s in enumerate(repos, 1):
            progress = show.started(s, i, len(repos))
            if dry_run:
                one = commands.dry_run(s, when=when, clients=clients, progress=progress)
            else:
                one = commands.weekly(s, when, fmt, None, clients=clients, progress=progress)
            done.outcomes.append(one)
            show.finished(one)
            if isinstance(one.error, Interrupted):
                complete = sum(not o.exit_code and not o.waiting for o in done.outcomes)
                ran = plural(len(repos), "repository", "repositories")
                kept = getattr(one.error, "kept", "")
                one.error.kept = f"{complete} of {ran} complete" + (f"; {kept}" if kept else "")
                raise one.error
            if not dry_run:
                entries.append(_entry(s, when, one, clients, fmt))
            one.report, one.plan = None, None
        if not dry_run:
            w = window(base, **when)
            done.index, done.changed = output.publish_index(entries, w, base.tz)
    done.seconds = time.monotonic() - started
    done.error = _failed(done.outcomes)
    return done


def _entry(
    s: Settings, when: Mapping[str, Any], o: Outcome, clients: Clients, fmt: Format
) -> Entry:
    """The index's row of one repository: when it failed this time, the report an earlier run
    made of the same window, if its file is there; its report kept without what the index
    does not show."""
    report, written = o.report, o.written
    if report is None:
        w = window(s, **when)
        with suppress(PrhubError):
            report = clients.store(o.settings).report(o.repo, w.start, w.end)
        written = output.report_path(report, fmt) if report else None
        if written is None or not written.is_file():
            report = written = None
    file = written.relative_to(output.REPORTS) if written else None
    slim = report.model_copy(update={"digests": [], "narrative": None}) if report else None
    return Entry(o.repo, o.exit_code, slim, file)


def exit_code(outcomes: list[Outcome]) -> int:
    """0 when every repository is complete; else the code they failed with, when they share
    one; else ReposFailed's."""
    codes = {o.exit_code for o in outcomes if o.exit_code}
    if not codes:
        return 0
    return codes.pop() if len(codes) == 1 else ReposFailed.exit_code


def _failed(outcomes: list[Outcome]) -> ReposFailed | None:
    failed = [o for o in outcomes if o.exit_code]
    if not failed:
        return None
    names = ", ".join(o.repo for o in failed)
    them = "it" if len(failed) == 1 else "them"
    return ReposFailed(
        f"{len(failed)} of {plural(len(outcomes), 'repository', 'repositories')} not complete "
        f"({names}): rerun to complete {them}; what the others did is kept",
        exit_code(outcomes),
    )


def summary_line(done: AllOutcome) -> str:
    """The run's last line: which repositories are complete and which not, then the totals of
    their runs as a single run's summary counts them."""
    outcomes = done.outcomes
    complete = [o.repo for o in outcomes if not o.exit_code and not o.waiting]
    waiting = [o.repo for o in outcomes if o.waiting]
    failed = [f"{o.repo}: exit {o.exit_code}" for o in outcomes if o.exit_code]
    line = f"{plural(len(outcomes), 'repository', 'repositories')}: {len(complete)} complete"
    line += f" ({', '.join(complete)})" if complete else ""
    line += f", {len(waiting)} waiting for a batch ({', '.join(waiting)})" if waiting else ""
    line += f", {len(failed)} failed ({'; '.join(failed)})" if failed else ""
    if done.dry_run:
        return line
    stats = [o.stats or RunStats() for o in outcomes]
    usage = sum((x.usage for x in stats), Usage())
    prs, cached, lost = (sum(getattr(x, n) for x in stats) for n in ("prs", "cached", "failed"))
    hits = f" ({usage.tokens_cached:,} cached)" if usage.tokens_cached else ""
    return (
        f"{line} · {plural(prs, 'PR')} ({cached} from the store, {lost} failed) · "
        f"{plural(usage.calls, 'LLM call')} · "
        f"{usage.tokens_in:,} tokens in{hits} / {usage.tokens_out:,} out · {_cost(outcomes)} · "
        f"{plural(sum(x.retries for x in stats), 'retry', 'retries')} · {done.seconds:.1f} s"
    )


def _cost(outcomes: list[Outcome]) -> str:
    """The estimated cost, summed per model: repositories may use models of their own."""
    by_model: dict[str, tuple[Settings, Usage, Usage]] = {}
    for o in outcomes:
        stats = o.stats or RunStats()
        s, usage, batch = by_model.get(o.settings.model, (o.settings, Usage(), Usage()))
        by_model[o.settings.model] = (s, usage + stats.usage, batch + stats.batch_usage)
    costs = [figures.cost(u, s, b) for s, u, b in by_model.values() if u.calls or u.tokens_in]
    return " + ".join(costs) or "$0.00"
