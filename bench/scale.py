"""A synthetic organisation: one corpus week under N repository names through `weekly --all`,
against GitHub with a primary limit and ETags and an LLM endpoint with the Batch API.

For each N the same PRs are served under N names (the GitHub stand-in's mirrors), and four kinds
of run go through prhub's many.weekly_all, each in a fresh process as a cron job would be:

- the first run, online, on an empty store, against a primary limit of --limit core requests an
  hour (default 1,000: GITHUB_TOKEN's in Actions) and GitHub's 30 searches a minute;
- a rerun of the unchanged week on that store; the search index is an hour behind the pulls
  (its updated_at cannot vouch for a stored PR), so each stored PR is asked with its ETag;
- the same week in batch mode on another empty store (its GitHub unlimited): one run submits,
  reruns collect until every repository is complete.

The stand-ins run in this process, each prhub run in a child process. The GitHub stand-in's
limit and prhub's request budget read one clock, which runs at real speed while prhub works and
--speed-up times faster while it waits for a reset: a wait is reported in simulated time, what a
real run would wait, and costs 1/--speed-up of it here. Usage:

    python bench/scale.py [CORPUS_DIR] [--sizes 1,10,50] [--week 31] [--year 2026]
                          [--limit 1000] [--speed-up 600] [--source OWNER/REPO]

Figures, not verdicts: it exits 0 once the runs are done, 1 with a line when a run failed.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import queue
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.standins import KEY, TOKEN  # noqa: E402
from prhub.config import Settings  # noqa: E402
from prhub.errors import PrhubError  # noqa: E402
from prhub.github import source as source_module  # noqa: E402
from prhub.github.ratelimit import Budget  # noqa: E402
from prhub.model import Usage  # noqa: E402
from prhub.publish.formats import Format  # noqa: E402
from prhub.run import figures as run_figures  # noqa: E402
from prhub.run import many  # noqa: E402
from tests.standins import GitHubStandIn  # noqa: E402
from tests.standins.batch import BatchStandIn  # noqa: E402

ORG = "scale-org"
HOUR = 3600.0
INDEX_LAG = timedelta(hours=1)
WAIT = HOUR + 60  # PRHUB_GITHUB_WAIT: an unattended run waits out a whole hour's window
COLLECTS = 4  # batch-mode reruns at most: a map-reduce PR takes two rounds
SPAWN = multiprocessing.get_context("spawn")


class Clock:
    """Epoch seconds shared by the stand-ins and the prhub processes: real time plus what the
    waits skipped. sleep(s) takes s / speed_up real seconds and moves the clock on by s."""

    def __init__(self, skipped: Any, speed_up: float) -> None:
        self.skipped = skipped  # a multiprocessing Value, so every process reads one clock
        self.speed_up = speed_up

    def time(self) -> float:
        return time.time() + self.skipped.value

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds / self.speed_up)
        with self.skipped.get_lock():
            self.skipped.value += seconds - seconds / self.speed_up


class Waits(logging.Handler):
    """Counts the waits for GitHub's limits that prhub logs, by the bucket that was spent."""

    def __init__(self) -> None:
        super().__init__()
        self.count: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        found = re.match(r"GitHub's .*?(\w+) requests is spent.*: waiting", record.getMessage())
        if found:
            self.count[found[1]] += 1
        elif record.getMessage().startswith("GitHub's secondary rate limit"):
            self.count["secondary"] += 1


def run_weekly(job: dict[str, Any], skipped: Any, results: Any) -> None:
    """One `weekly --all` run in this (child) process; puts its figures on `results`."""
    log = open(job["log"], "a", encoding="utf-8")  # for the process's life
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    os.chdir(job["dir"])
    clock = Clock(skipped, job["speed_up"])
    budgets: list[Budget] = []

    def on_the_clock(settings: Settings) -> Budget:
        # prhub's own budget, on the clock the stand-in's limit counts on.
        made = Budget(
            settings.github_wait, settings.max_attempts, clock=clock.time, sleep=clock.sleep
        )
        budgets.append(made)
        return made

    source_module.budget_for = on_the_clock
    waits = Waits()
    logging.getLogger("prhub").addHandler(waits)
    base = Settings(
        repos=tuple(job["repos"]),
        github_url=job["github_url"],
        github_token=SecretStr(TOKEN),
        openai_base_url=job["llm_url"],
        openai_api_key=SecretStr(KEY),
        store=Path(job["store"]),
        github_wait=WAIT,
        batch=job["batch"],
    )
    figures: dict[str, Any] = {"error": ""}
    started = time.perf_counter()
    try:
        outcomes = many.weekly_all(
            base,
            lambda name: base.model_copy(update={"repo": name}),
            {"year": job["year"], "week": job["week"], "since": None, "until": None},
            Format.markdown,
        ).outcomes
    except PrhubError as exc:
        outcomes, figures["error"] = [], str(exc)
    figures |= {
        "seconds": time.perf_counter() - started,
        "prs": sum(o.stats.prs for o in outcomes if o.stats),
        "waiting": sum(bool(o.waiting) for o in outcomes),
        "usage": sum((o.stats.usage for o in outcomes if o.stats), Usage()).model_dump(),
        "batch": sum((o.stats.batch_usage for o in outcomes if o.stats), Usage()).model_dump(),
        "waited": sum(b.waited for b in budgets),
        "waits": dict(waits.count),
        "rss": peak_rss(),
    }
    results.put(figures)


def peak_rss() -> int:
    """The most memory this process held, in KiB: Linux's VmHWM, which counts this program
    alone. ru_maxrss would not: across exec it keeps the high-water mark of the process it
    was forked from (here the stand-ins, whose logs grow with every run)."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


@dataclass
class Run:
    """What one prhub run did: its own figures, and what GitHub charged for it."""

    figures: dict[str, Any]
    charged: Counter[str]

    @property
    def usage(self) -> Usage:
        return Usage(**self.figures["usage"])

    @property
    def batch(self) -> Usage:
        return Usage(**self.figures["batch"])

    @property
    def sent(self) -> int:
        """Requests that reached GitHub: charged to a limit, answered 304, or refused."""
        return self.charged.total()


@dataclass
class Size:
    """The runs of one N."""

    repos: int
    first: Run
    rerun: Run
    batch: list[Run] = field(default_factory=list)

    @property
    def prs(self) -> int:
        return int(self.first.figures["prs"])

    @property
    def batched(self) -> tuple[Usage, Usage]:
        """The usage of the batch-mode runs in all, and the part sent in batches."""
        runs = self.batch
        return sum((r.usage for r in runs), Usage()), sum((r.batch for r in runs), Usage())

    @property
    def peak(self) -> int:
        """The most memory a prhub process of this N held, in KiB."""
        return max(r.figures["rss"] for r in (self.first, self.rerun, *self.batch))

    @property
    def peaks(self) -> tuple[float, float, float]:
        """The peak memory of the first run, the rerun and the batch-mode runs, in MiB."""
        batch = max(r.figures["rss"] for r in self.batch)
        return self.first.figures["rss"] / 1024, self.rerun.figures["rss"] / 1024, batch / 1024


class Organisation:
    """The stand-ins of one N and the runs against them."""

    def __init__(self, n: int, args: argparse.Namespace, tmp: Path, skipped: Any) -> None:
        self.n, self.args, self.tmp, self.skipped = n, args, tmp, skipped
        self.repos = [f"{ORG}/repo-{i:03d}" for i in range(1, n + 1)]
        common: dict[str, Any] = {"token": TOKEN, "clock": Clock(skipped, args.speed_up).time}
        common |= {"mirrors": dict.fromkeys(self.repos, args.source), "index_lag": INDEX_LAG}
        self.limited = GitHubStandIn(args.corpus, core_limit=args.limit, **common)
        self.plain = GitHubStandIn(args.corpus, core_limit=10**9, search_limit=10**9, **common)
        self.llm = BatchStandIn(api_key=KEY)

    def run(self, label: str, github: GitHubStandIn, store: str, batch: bool) -> Run:
        """One `weekly --all` in a child process; what GitHub charged while it ran."""
        before = len(github.requests)
        work = self.tmp / f"n{self.n}-{store}"
        work.mkdir(exist_ok=True)
        job = {
            "log": str(self.tmp / f"n{self.n}-{label}.log"),
            "dir": str(work),
            "store": str(work / "store.db"),
            "repos": self.repos,
            "github_url": github.url,
            "llm_url": self.llm.url,
            "batch": batch,
            "year": self.args.year,
            "week": self.args.week,
            "speed_up": self.args.speed_up,
        }
        results = SPAWN.Queue()
        child = SPAWN.Process(target=run_weekly, args=(job, self.skipped, results))
        child.start()
        while True:
            try:
                figures = results.get(timeout=1)
                break
            except queue.Empty:
                if not child.is_alive():
                    sys.exit(f"N={self.n}, {label}: the run died (its log: {job['log']})")
        child.join()
        if figures["error"]:
            sys.exit(f"N={self.n}, {label}: {figures['error']} (its log: {job['log']})")
        charged = Counter(str(r.get("charge")) for r in github.requests[before:])
        return Run(figures, charged)

    def measure(self) -> Size:
        with self.limited, self.plain, self.llm:
            first = self.run("first", self.limited, "online", batch=False)
            size = Size(self.n, first, self.run("rerun", self.limited, "online", batch=False))
            size.batch.append(self.run("submit", self.plain, "batch", batch=True))
            while size.batch[-1].figures["waiting"] and len(size.batch) <= COLLECTS:
                size.batch.append(self.run(f"collect{len(size.batch)}", self.plain, "batch", True))
        for standin in (self.limited, self.plain, self.llm):
            if standin.errors:  # a stand-in's own failure, not prhub's
                sys.exit(f"N={self.n}: a stand-in failed: {standin.errors[0]}")
        return size


def dollars(usage: Usage, batch: Usage) -> float:
    """prhub's own estimate at the default prices, as its summary line gives it."""
    text = run_figures.cost(usage, Settings(), batch)
    found = re.search(r"\$([\d.]+)", text)
    return float(found[1]) if found else float("nan")


def span(seconds: float) -> str:
    """Simulated seconds as `1 h 02 min`, `3 min`, `0 s`."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def waited(run: Run) -> str:
    waits = run.figures["waits"]
    if not waits:
        return "none"
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(waits.items()))
    return f"{span(run.figures['waited'])} ({kinds})"


Row = tuple[str, Callable[[Size], str]]


def charged(run: Run) -> int:
    """Requests a run spent of GitHub's limits, core and search."""
    return run.charged["core"] + run.charged["search"]


def per_pr(value: float, size: Size, digits: int = 2) -> str:
    return f"{value / size.prs:,.{digits}f}" if size.prs else "-"


ROWS: list[Row] = [
    ("PRs", lambda s: f"{s.prs:,}"),
    ("first run: GitHub requests", lambda s: f"{s.first.sent:,}"),
    ("first run: GitHub requests per PR", lambda s: per_pr(s.first.sent, s)),
    ("first run: refused by the limit", lambda s: str(s.first.charged["refused"])),
    ("first run: waited for the limit (simulated)", lambda s: waited(s.first)),
    ("first run: wall time", lambda s: f"{s.first.figures['seconds']:.0f} s"),
    (
        "rerun: core / search requests",
        lambda s: f"{s.rerun.charged['core']} / {s.rerun.charged['search']}",
    ),
    ("rerun: limit requests per PR", lambda s: per_pr(charged(s.rerun), s)),
    ("rerun: saved by revalidation (304s)", lambda s: f"{s.rerun.charged['free']:,}"),
    ("rerun: waited for the limit (simulated)", lambda s: waited(s.rerun)),
    ("online: LLM calls", lambda s: f"{s.first.usage.calls:,}"),
    ("online: prompt tokens per PR", lambda s: per_pr(s.first.usage.tokens_in, s, 0)),
    ("online: output tokens per PR", lambda s: per_pr(s.first.usage.tokens_out, s, 0)),
    (
        "batch: LLM calls in batch / online",
        lambda s: f"{s.batched[1].calls:,} / {(s.batched[0] - s.batched[1]).calls:,}",
    ),
    ("batch: runs until complete", lambda s: str(len(s.batch))),
    ("cost online (USD)", lambda s: f"{dollars(s.first.usage, Usage()):.4f}"),
    ("cost batch (USD)", lambda s: f"{dollars(*s.batched):.4f}"),
    (
        "cost per 1,000 PRs online / batch",
        lambda s: (
            f"{per_pr(dollars(s.first.usage, Usage()) * 1000, s)} / "
            f"{per_pr(dollars(*s.batched) * 1000, s)}"
        ),
    ),
    ("peak RSS of a prhub run", lambda s: f"{s.peak / 1024:.0f} MiB"),
    ("peak RSS: first / rerun / batch runs", lambda s: " / ".join(f"{m:.0f}" for m in s.peaks)),
    ("first run: searches per repository-week", lambda s: per_repo(s.first.charged["search"], s)),
    ("rerun: searches per repository-week", lambda s: per_repo(s.rerun.charged["search"], s)),
]


def per_repo(value: float, size: Size) -> str:
    return f"{value / size.repos:.2f}"


def growth(sizes: list[Size]) -> str:
    """How much more a run's peak memory is for each repository past the smallest size."""
    small, big = min(sizes, key=lambda s: s.repos), max(sizes, key=lambda s: s.repos)
    if big.repos == small.repos:
        return "peak RSS per added repository: - (one size)"
    added = big.repos - small.repos
    each = [(b - a) / added for a, b in zip(small.peaks, big.peaks, strict=True)]
    slope = (big.peak - small.peak) / 1024 / added
    return (
        f"peak RSS per added repository, N={small.repos} to N={big.repos}: {slope:.2f} MiB "
        f"(first run {each[0]:.2f}, rerun {each[1]:.2f}, batch runs {each[2]:.2f})"
    )


def table(sizes: list[Size]) -> list[str]:
    width = max(len(name) for name, _ in ROWS)
    cells = [[f"N={s.repos}" for s in sizes], *([show(s) for s in sizes] for _, show in ROWS)]
    column = max(len(cell) for line in cells for cell in line) + 2
    names = ["", *(name for name, _ in ROWS)]
    return [
        f"{name:<{width}}" + "".join(f"{cell:>{column}}" for cell in line).rstrip()
        for name, line in zip(names, cells, strict=True)
    ]


def sizes_list(text: str) -> list[int]:
    """--sizes: positive whole numbers, comma-separated."""
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not whole numbers: {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be 1 or more: {text!r}")
    return list(dict.fromkeys(sizes))


def source_repo(corpus: Path) -> str:
    """The corpus's one repository (OWNER/REPO/pulls inside it), served under every name."""
    found = sorted(p.parent for p in corpus.glob("*/*/pulls") if p.is_dir())
    if len(found) != 1:
        sys.exit(f"{len(found)} OWNER/REPO/pulls in {corpus}: name one with --source")
    return "/".join(found[0].parts[-2:])


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--sizes", type=sizes_list, default=[1, 10, 50], help="default 1,10,50")
    parser.add_argument("--week", type=int, default=31, help="ISO week (default 31)")
    parser.add_argument("--year", type=int, default=2026, help="ISO year (default 2026)")
    parser.add_argument(
        "--limit", type=int, default=1000, help="core requests an hour (default 1000)"
    )
    parser.add_argument(
        "--speed-up", type=float, default=600.0, help="how much faster waits pass (default 600)"
    )
    parser.add_argument(
        "--source", help="the corpus repository served under every name (default: its only one)"
    )
    args = parser.parse_args(argv)
    args.corpus = Path(args.corpus)
    args.source = args.source or source_repo(args.corpus)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    sizes: list[Size] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        skipped = SPAWN.Value("d", 0.0)
        for n in args.sizes:
            sizes.append(Organisation(n, args, Path(name), skipped).measure())
    print(
        f"{args.source} week {args.year}-W{args.week:02d} under N names; GitHub: {args.limit:,} "
        f"core requests an hour, 30 searches a minute, waits {args.speed_up:g}x faster than "
        f"real; LLM stand-in: no latency, no prompt cache; prices: {Settings().model}'s "
        f"defaults; peak RSS: VmHWM of the prhub processes; "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    print()
    print("\n".join(table(sizes)))
    print()
    print(growth(sizes))


if __name__ == "__main__":
    main()
