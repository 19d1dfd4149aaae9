"""One corpus week through loopback GitHub and LLM stand-ins: speed, calls, tokens, requests.

The stand-ins run in their own processes, as the real services would, so their work does not
share this process's interpreter lock. The week runs once per --jobs value, each time with an
empty store, then once more with the last store (a rerun, which the store should serve whole).
Each run gets fresh stand-ins: the LLM stand-in reports cached prompt tokens as a provider's
prefix cache would, and starts cold, so one run's prompts do not warm the next. Usage:

    python bench/weekly.py [CORPUS_DIR] [--week 31] [--year 2026] [--latency 1.0]
                           [--jobs-list 1,4,8] [--known-mode]

Figures, not verdicts: the script prints what it measured next to the project's targets
and always exits 0 once the runs are done.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.standins import KEY, TOKEN, standin  # noqa: E402
from prhub.config import Settings  # noqa: E402
from prhub.errors import PrhubError  # noqa: E402
from prhub.model import Usage, WeeklyReport  # noqa: E402
from prhub.run import week as run_week  # noqa: E402
from prhub.run.run import Run, window  # noqa: E402
from prhub.store.store import Store  # noqa: E402
from tests.standins.github import pr_of  # noqa: E402

REPO = "verl-project/verl"
SEARCH = "/search/issues"
TARGET_SPEEDUP = 5.0  # --jobs 8 against --jobs 1 at 1 s LLM latency
TARGET_PER_PR = 3  # GitHub requests for one PR without discussion


def logged(path: Path) -> list[dict[str, Any]]:
    """The requests a stand-in's --log file holds, one JSON object a line."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(line) for line in text.splitlines()]


@dataclass
class Result:
    """What one run of the week did, from its own figures and the stand-ins' logs."""

    label: str
    jobs: int
    seconds: float
    prs: int
    failed: int
    retries: int
    usage: Usage
    llm: list[dict[str, Any]]
    github: list[dict[str, Any]]

    @property
    def paths(self) -> list[str]:
        return [entry["path"] for entry in self.github]

    @property
    def search(self) -> int:
        return sum(path == SEARCH for path in self.paths)

    @property
    def per_pr(self) -> Counter[int]:
        return Counter(n for n in map(pr_of, self.paths) if n is not None)

    @property
    def attributes(self) -> int:
        return sum(path.endswith("/.gitattributes") for path in self.paths)

    @property
    def other(self) -> int:
        return len(self.paths) - self.search - self.per_pr.total() - self.attributes

    @property
    def llm_in_flight(self) -> int:
        return max((entry["in_flight"] for entry in self.llm), default=0)

    @property
    def github_in_flight(self) -> int:
        return max((entry["in_flight"] for entry in self.github), default=0)

    @property
    def faults(self) -> int:
        return sum("fault" in entry for entry in (*self.llm, *self.github))


def measure(label: str, jobs: int, store: Path, args: argparse.Namespace, tmp: Path) -> Result:
    """Runs the week once against fresh stand-ins (a cold prefix cache) and reads what it cost."""
    github, llm = (
        tmp / f"{store.stem}-{label[0]}-github.log",
        tmp / f"{store.stem}-{label[0]}-llm.log",
    )
    github_args = ["--data", args.corpus, "--token", TOKEN, "--log", str(github)]
    llm_args = ["--api-key", KEY, "--latency", str(args.latency), "--prefix-cache"]
    with (
        standin("github", *github_args) as github_url,
        standin("llm", *llm_args, "--log", str(llm)) as llm_url,
    ):
        if not github_url or not llm_url:
            sys.exit("a stand-in did not start (see its error above)")
        settings = Settings(
            repo=REPO,
            github_url=github_url,
            github_token=SecretStr(TOKEN),
            openai_base_url=llm_url,
            openai_api_key=SecretStr(KEY),
            jobs=jobs,
            store=store,
        )
        if args.known_mode:  # as a later run finds it: the first LLM call need not go alone
            with closing(Store(store)) as kept:
                kept.save_endpoint_mode(settings.endpoint, settings.model, settings.response_mode)
        started = time.perf_counter()
        with Run(settings, "weekly") as run:
            week = window(settings, year=args.year, week=args.week)
            report = run_week.weekly(run, week)
            assert isinstance(report, WeeklyReport), report
        seconds = time.perf_counter() - started
    return Result(
        label=label,
        jobs=jobs,
        seconds=seconds,
        prs=report.facts.pr_count,
        failed=len(report.failed),
        retries=run.stats.retries,
        usage=run.stats.usage,
        llm=logged(llm),
        github=logged(github),
    )


def share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


Row = tuple[str, Callable[[Result], str]]


def rows(base: Result) -> list[Row]:
    """The table's rows: a name and how to show a run's figure."""

    def speedup(r: Result) -> str:
        return "-" if r.label.startswith("rerun") else f"{base.seconds / r.seconds:.2f}x"

    def mean_per_pr(r: Result) -> str:
        return f"{r.per_pr.total() / r.prs:.2f}" if r.prs else "-"

    return [
        ("wall time", lambda r: f"{r.seconds:.1f} s"),
        (f"speed-up vs {base.label}", speedup),
        ("LLM calls", lambda r: str(r.usage.calls)),
        ("LLM calls per PR", lambda r: f"{r.usage.calls / r.prs:.2f}" if r.prs else "-"),
        ("prompt tokens", lambda r: f"{r.usage.tokens_in:,}"),
        ("cached prompt tokens", lambda r: f"{r.usage.tokens_cached:,}"),
        ("cached share", lambda r: share(r.usage.tokens_cached, r.usage.tokens_in)),
        ("output tokens", lambda r: f"{r.usage.tokens_out:,}"),
        ("most LLM requests in flight", lambda r: str(r.llm_in_flight)),
        ("GitHub search requests", lambda r: str(r.search)),
        ("GitHub requests per PR, mean", mean_per_pr),
        ("GitHub requests for one PR, max", lambda r: str(max(r.per_pr.values(), default=0))),
        ("GitHub .gitattributes requests", lambda r: str(r.attributes)),
        ("GitHub requests, other", lambda r: str(r.other)),
        ("most GitHub requests in flight", lambda r: str(r.github_in_flight)),
        ("retries", lambda r: str(r.retries)),
    ]


def table(results: list[Result]) -> list[str]:
    shown = rows(results[0])
    width = max(len(name) for name, _ in shown)
    cells = [[r.label for r in results], *([show(r) for r in results] for _, show in shown)]
    column = max(len(cell) for line in cells for cell in line) + 2
    names = ["", *(name for name, _ in shown)]
    return [
        f"{name:<{width}}" + "".join(f"{cell:>{column}}" for cell in line).rstrip()
        for name, line in zip(names, cells, strict=True)
    ]


def targets(results: list[Result], latency: float) -> list[str]:
    """The measured figure next to each of the project's targets."""
    base, runs = results[0], [r for r in results if not r.label.startswith("rerun")]
    lines = []
    for r in runs:
        if r.jobs > 1:
            lines.append(
                f"--jobs {r.jobs}: at most {r.llm_in_flight} LLM requests in flight "
                f"(bound {r.jobs}), {base.seconds / r.seconds:.2f}x the speed of {base.label}"
                + (f" (target >= {TARGET_SPEEDUP:.0f}x at 1 s latency)" if r.jobs == 8 else "")
            )
    most = max((max(r.per_pr.values(), default=0) for r in runs), default=0)
    lines.append(
        f"GitHub: at most {most} requests for one PR in any run (target <= {TARGET_PER_PR} for a "
        "PR without discussion; the corpus records none)"
    )
    kinds = Counter(
        re.sub(r"/\d+", "/N", path.split("/", 4)[-1]) for path in base.paths if pr_of(path)
    )
    lines.append(
        f"GitHub requests about PRs in {base.label}, by kind: "
        + ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
    )
    rerun = results[-1]
    if rerun.label.startswith("rerun"):
        lines.append(
            f"rerun: {rerun.usage.calls} LLM calls (0 expected), "
            f"{len(rerun.github)} GitHub requests, {rerun.seconds:.1f} s"
        )
    if latency != 1.0:
        lines.append(f"(the speed-up target is for 1 s latency; this run used {latency:g} s)")
    return lines


def jobs_list(text: str) -> list[int]:
    """--jobs-list: positive whole numbers, comma-separated."""
    try:
        jobs = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not whole numbers: {text!r}") from None
    if not jobs or min(jobs) < 1:
        raise argparse.ArgumentTypeError(f"jobs must be 1 or more: {text!r}")
    return list(dict.fromkeys(jobs))


def latency(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value <= 60:
        raise argparse.ArgumentTypeError(f"between 0 and 60 seconds: {text!r}")
    return value


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--week", type=int, default=31, help="ISO week (default 31)")
    parser.add_argument("--year", type=int, default=2026, help="ISO year (default 2026)")
    parser.add_argument(
        "--latency", type=latency, default=1.0, help="seconds per LLM answer (default 1.0)"
    )
    parser.add_argument(
        "--jobs-list",
        type=jobs_list,
        default=[1, 4, 8],
        help="--jobs values to run, the first is the baseline (default 1,4,8)",
    )
    parser.add_argument(
        "--known-mode",
        action="store_true",
        help="give each empty store the endpoint's response mode, as a second run has it "
        "(a first run probes the mode with one call before the others)",
    )
    return parser.parse_args()


def main() -> None:
    args = parse()
    corpus = Path(args.corpus)
    if not (corpus / REPO / "pulls").is_dir():
        sys.exit(f"no corpus at {corpus} (expected {REPO}/pulls inside it)")
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        try:
            for jobs in args.jobs_list:
                store = tmp / f"{jobs}.db"
                results.append(measure(f"--jobs {jobs}", jobs, store, args, tmp))
            results.append(measure(f"rerun {jobs}", jobs, store, args, tmp))
        except PrhubError as exc:
            sys.exit(f"the run failed: {exc}")
    first = results[0]
    print(
        f"week {args.year}-W{args.week:02d} ({Settings().tz}): {first.prs} PRs, "
        f"{first.failed} failed; LLM stand-in {args.latency:g} s per call, prefix cache on; "
        f"response mode {'known' if args.known_mode else 'probed'}; "
        f"{sum(r.faults for r in results)} faults injected"
    )
    print()
    print("\n".join(table(results)))
    print()
    print("\n".join(targets(results, args.latency)))


if __name__ == "__main__":
    main()
