"""One corpus week through loopback GitHub and LLM stand-ins: concurrency, calls, requests, reruns.

The stand-ins run in their own processes, as the real services would, so their work does not
share this process's interpreter lock. Usage:

    python bench/weekly.py [CORPUS_DIR] [--week 31] [--year 2026] [--latency 1.0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.standins import KEY, TOKEN, standin  # noqa: E402
from prhub import pipeline  # noqa: E402
from prhub.config import Settings  # noqa: E402


def requests(log: Path) -> list[str]:
    return (
        [json.loads(line)["path"] for line in log.read_text().splitlines()] if log.exists() else []
    )


def run(
    settings: Settings, args: argparse.Namespace, gh_log: Path, llm_log: Path
) -> dict[str, Any]:
    gh_before, llm_before = len(requests(gh_log)), len(requests(llm_log))
    started = time.perf_counter()
    report = pipeline.weekly(settings, year=args.year, week=args.week)
    seconds = time.perf_counter() - started
    paths = requests(gh_log)[gh_before:]
    search = sum(p == "/search/issues" for p in paths)
    per_pr = Counter(p.split("/")[5] for p in paths if "/pulls/" in p)
    return {
        "prs": report.facts.pr_count,
        "failed": len(report.failed),
        "seconds": seconds,
        "llm_calls": len(requests(llm_log)) - llm_before,
        "search": search,
        "other": len(paths) - search,
        "most_for_one_pr": max(per_pr.values(), default=0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--week", type=int, default=31)
    parser.add_argument("--year", type=int, default=2026)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        sys.exit(f"no corpus at {corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        gh_log, llm_log = Path(tmp) / "github.log", Path(tmp) / "llm.log"
        github_args = ["github", "--data", str(corpus), "--token", TOKEN, "--log", str(gh_log)]
        llm_args = ["llm", "--api-key", KEY, "--latency", str(args.latency), "--log", str(llm_log)]
        with standin(*github_args) as github_url, standin(*llm_args) as llm_url:
            base = Settings(
                repo="verl-project/verl",
                github_url=github_url,
                github_token=TOKEN,
                openai_base_url=llm_url,
                openai_api_key=KEY,
            )
            one = run(
                base.model_copy(update={"jobs": 1, "store": Path(tmp) / "1.db"}),
                args,
                gh_log,
                llm_log,
            )
            eight_settings = base.model_copy(update={"jobs": 8, "store": Path(tmp) / "8.db"})
            eight = run(eight_settings, args, gh_log, llm_log)
            again = run(eight_settings, args, gh_log, llm_log)
    prs = one["prs"] or 1
    print(
        f"week {args.year}-W{args.week:02d} (Asia/Shanghai): {one['prs']} PRs, "
        f"{one['failed']} failed; LLM stand-in latency {args.latency:.1f} s per call"
    )
    print(
        f"wall time  --jobs 1: {one['seconds']:.1f} s  --jobs 8: {eight['seconds']:.1f} s  "
        f"speed-up {one['seconds'] / eight['seconds']:.2f}x"
    )
    print(
        f"LLM calls  {one['llm_calls']} = {one['llm_calls'] / prs:.2f} per PR (narrative included)"
    )
    print(
        f"GitHub     {one['search']} search requests + {one['other']} others = "
        f"{one['other'] / prs:.2f} per PR beyond search "
        f"(at most {one['most_for_one_pr']} for one PR)"
    )
    print(
        f"rerun      {again['llm_calls']} LLM calls, {again['search']} search requests + "
        f"{again['other']} others, {again['seconds']:.1f} s"
    )


if __name__ == "__main__":
    main()
