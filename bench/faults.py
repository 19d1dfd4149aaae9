"""One corpus week with and without injected faults: PRs kept, faults, retries, time they cost.

The stand-ins run in their own processes, as in bench/weekly.py. The first run is fault-free; the
second has a share of GitHub and of LLM requests fail (5xx, rate limits, connection resets). Both
start from an empty store and use prhub's default retry policy unless told otherwise. Usage:

    python bench/faults.py [CORPUS_DIR] [--fault-rate 0.2] [--latency 0.05] [--attempts N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.standins import KEY, TOKEN, standin  # noqa: E402
from prhub import pipeline  # noqa: E402
from prhub.config import Settings  # noqa: E402
from prhub.errors import PrhubError  # noqa: E402
from prhub.llm import LLM  # noqa: E402
from prhub.retry import RetryCounter  # noqa: E402
from prhub.source import GitHubSource  # noqa: E402


def faults(log: Path) -> Counter[str]:
    """The kinds of the faults a stand-in logged injecting."""
    lines = log.read_text().splitlines() if log.exists() else []
    return Counter(entry["fault"] for entry in map(json.loads, lines) if "fault" in entry)


def requests(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def run(args: argparse.Namespace, corpus: Path, tmp: Path, rate: float) -> dict[str, Any]:
    """One weekly run of the corpus week through fresh stand-ins failing at `rate`."""
    gh_log, llm_log = tmp / f"github-{rate}.log", tmp / f"llm-{rate}.log"
    common = ["--fault-rate", str(rate), "--seed", str(args.seed)]
    github_args = ["github", "--data", str(corpus), "--token", TOKEN, "--log", str(gh_log)]
    llm_args = ["llm", "--api-key", KEY, "--latency", str(args.latency), "--log", str(llm_log)]
    with standin(*github_args, *common) as github_url, standin(*llm_args, *common) as llm_url:
        settings = Settings(
            repo=args.repo,
            github_url=github_url,
            github_token=TOKEN,
            openai_base_url=llm_url,
            openai_api_key=KEY,
            store=tmp / f"store-{rate}.db",
            **({"max_attempts": args.attempts} if args.attempts else {}),
            **({"retry_base_wait": args.base_wait} if args.base_wait is not None else {}),
        )
        gh_retries, llm_retries = RetryCounter(), RetryCounter()
        started = time.perf_counter()
        with (
            closing(GitHubSource(settings, counter=gh_retries)) as source,
            closing(LLM(settings, counter=llm_retries)) as llm,
        ):
            try:
                report = pipeline.weekly(
                    settings, year=args.year, week=args.week, source=source, llm=llm
                )
                outcome: str | None = None
            except PrhubError as exc:  # the whole run failed, e.g. the search itself
                report, outcome = None, str(exc)
        seconds = time.perf_counter() - started
    return {
        "settings": settings,
        "digested": [d.number for d in report.digests] if report else [],
        "lost": [(f.number, f.error) for f in report.failed] if report else [],
        "narrative": bool(report and report.narrative),
        "outcome": outcome,
        "seconds": seconds,
        "faults": {"GitHub": faults(gh_log), "LLM": faults(llm_log)},
        "requests": {"GitHub": requests(gh_log), "LLM": requests(llm_log)},
        "retries": {"GitHub": gh_retries.count, "LLM": llm_retries.count},
    }


def describe(name: str, result: dict[str, Any]) -> None:
    lost = ", ".join(f"#{n}" for n, _ in result["lost"]) or "none"
    print(
        f"{name}: {len(result['digested'])} PRs digested, lost {lost}; "
        f"narrative {'written' if result['narrative'] else 'missing'}; "
        f"{result['seconds']:.1f} s"
    )
    if result["outcome"]:
        print(f"  run failed: {result['outcome']}")
    for number, error in result["lost"]:
        print(f"  #{number}: {error}")
    for service in ("GitHub", "LLM"):
        kinds = result["faults"][service]
        detail = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())) or "-"
        print(
            f"  {service:<6} {result['requests'][service]:>4} requests, "
            f"{sum(kinds.values()):>3} faults injected ({detail}), "
            f"{result['retries'][service]:>3} retries"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--repo", default="verl-project/verl")
    parser.add_argument("--week", type=int, default=31)
    parser.add_argument("--year", type=int, default=2026)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--latency", type=float, default=0.05, help="LLM seconds per call")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--attempts", type=int, help="max attempts a call (default: prhub's)")
    parser.add_argument("--base-wait", type=float, help="first backoff in s (default: prhub's)")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        sys.exit(f"no corpus at {corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        clean = run(args, corpus, Path(tmp), 0.0)
        faulty = run(args, corpus, Path(tmp), args.fault_rate)
    policy = clean["settings"]
    print(
        f"{args.repo} {args.year}-W{args.week:02d}: LLM latency {args.latency:.2f} s; retry policy "
        f"{policy.max_attempts} attempts, backoff from {policy.retry_base_wait:g} s, "
        f"waits up to {policy.max_retry_wait:g} s"
    )
    describe("fault-free", clean)
    describe(f"{args.fault_rate:.0%} faults", faulty)
    same = faulty["digested"] == clean["digested"]
    print(
        f"same PRs digested: {'yes' if same else 'no'}; "
        f"wall time faulty / fault-free: {faulty['seconds'] / clean['seconds']:.2f}x"
    )


if __name__ == "__main__":
    main()
