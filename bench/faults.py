"""One corpus week with and without injected faults: PRs kept, faults, retries, time they cost;
then `prhub weekly` against hostile endpoints: exit code, time, and whether a report survived.

The stand-ins run in their own processes, as in bench/weekly.py. The first run is fault-free; the
second has a share of GitHub and of LLM requests fail (5xx, rate limits, connection resets). Both
start from an empty store and use prhub's default retry policy unless told otherwise.

Each hostile case runs the command line on the project's fixture week, with PRHUB_TIMEOUT=3 and two
attempts a request, against stand-ins in this process scripted to answer badly, over a good report
written before at the same path: a run that fails must leave it as it was. Usage:

    python bench/faults.py [CORPUS_DIR] [--fault-rate 0.2] [--latency 0.05] [--attempts N]
                           [--no-hostile]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.standins import KEY, TOKEN, standin  # noqa: E402
from prhub.config import Settings  # noqa: E402
from prhub.defaults import ENV  # noqa: E402
from prhub.errors import PrhubError  # noqa: E402
from prhub.github.source import GitHubSource  # noqa: E402
from prhub.llm.llm import LLM  # noqa: E402
from prhub.model import WeeklyReport  # noqa: E402
from prhub.retry import StopToken  # noqa: E402
from prhub.run import week as run_week  # noqa: E402
from prhub.run.run import Run, window  # noqa: E402
from tests.standins import GitHubStandIn, LLMStandIn  # noqa: E402

FIXTURES = ROOT / "fixtures" / "github"
WEEK = ["--repo", "acme/rocket", "--year", "2026", "--week", "31"]
HTML = (200, {"Content-Type": "text/html"}, b"<!DOCTYPE html><html><body>Sign in</body></html>")
NO_CHOICES = {"id": "chatcmpl-0", "object": "chat.completion", "created": 0, "model": "m"}
Script = Callable[[GitHubStandIn, LLMStandIn, GitHubStandIn], None]
# name, GitHub stand-in options, LLM stand-in options, what to script on them (and another host)
HOSTILE: list[tuple[str, dict[str, Any], dict[str, Any], Script]] = [
    ("LLM: HTML answer", {}, {}, lambda gh, llm, _: llm.script([HTML] * 99)),
    ("LLM: trickle, 1 B / 0.5 s", {}, {"trickle": 0.5}, lambda gh, llm, _: None),
    (
        "LLM: choices: []",
        {},
        {},
        lambda gh, llm, _: llm.script([(200, {}, {**NO_CHOICES, "choices": []})] * 99),
    ),
    ("LLM: json_schema refused", {}, {"flavour": "deepseek"}, lambda gh, llm, _: None),
    (
        "GitHub: redirect to another host",
        {},
        {},
        lambda gh, llm, other: gh.script(r"^/search/issues$", [("redirect", 301, other.url)] * 99),
    ),
    (
        "GitHub: incomplete_results",
        {},
        {},
        lambda gh, llm, _: gh.script(r"^/search/issues$", [("incomplete",)] * 99),
    ),
    ("GitHub: HTML answer", {}, {}, lambda gh, llm, _: gh.script(r"^/search/issues$", [HTML] * 99)),
    ("GitHub: trickle, 1 B / 0.5 s", {"trickle": 0.5}, {}, lambda gh, llm, _: None),
]


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
        gh_retries, llm_retries = StopToken(), StopToken()
        started = time.perf_counter()
        with (
            closing(GitHubSource(settings, stop=gh_retries)) as source,
            closing(LLM(settings, stop=llm_retries)) as llm,
        ):
            try:
                w = window(settings, year=args.year, week=args.week)
                with Run(settings, "weekly", source=source, llm=llm) as run:
                    report = run_week.weekly(run, w)
                assert isinstance(report, WeeklyReport), report
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
        "retries": {"GitHub": gh_retries.retries, "LLM": llm_retries.retries},
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


def weekly(tmp: Path, out: Path, github: str, llm: str, **env: str) -> tuple[int, float, str]:
    """`prhub weekly` of the fixture week into `out` from a fresh store: exit code, seconds, the
    last line it wrote to stderr."""
    store = tmp / f"store-{time.monotonic_ns()}.db"
    clean = {k: v for k, v in os.environ.items() if k not in (*ENV.values(), "PRHUB_CONFIG")}
    values = {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": github,
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": llm,
        "PRHUB_STORE": str(store),
        "PYTHONPATH": str(ROOT),
        **env,
    }
    command = [sys.executable, "-m", "prhub", "weekly", *WEEK, "--format", "json"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--out", str(out), "--quiet"],
        env={**clean, **values},
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=240,
    )
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return done.returncode, time.perf_counter() - started, last


def prs(path: Path) -> str:
    try:
        return str(len(json.loads(path.read_text(encoding="utf-8"))["digests"]))
    except (OSError, ValueError, KeyError):
        return "-"


def hostile(tmp: Path) -> None:
    """Each hostile case over a good report: exit code, seconds, PRs in the report, survival."""
    out = tmp / "2026-W31.json"
    with (
        GitHubStandIn(FIXTURES, token=TOKEN) as github,
        LLMStandIn(api_key=KEY) as llm,
    ):
        code, seconds, last = weekly(tmp, out, github.url, llm.url)
    if code != 0:
        sys.exit(f"the good run failed ({code}): {last}")
    good = out.read_bytes()
    print(
        f"hostile endpoints, `prhub weekly` of the fixture week acme/rocket 2026-W31 with "
        f"PRHUB_TIMEOUT=3 and 2 attempts, each over a good report of {prs(out)} PRs "
        f"({seconds:.1f} s to write):"
    )
    print(f"  {'case':<34} {'exit':>4} {'seconds':>7} {'PRs in report':>13}  earlier report")
    for name, gh_options, llm_options, script in HOSTILE:
        out.write_bytes(good)
        with (
            GitHubStandIn(FIXTURES, token=TOKEN, **gh_options) as github,
            GitHubStandIn(FIXTURES, token=TOKEN) as other,
            LLMStandIn(api_key=KEY, **llm_options) as llm,
        ):
            script(github, llm, other)
            code, seconds, last = weekly(
                tmp,
                out,
                github.url,
                llm.url,
                PRHUB_TIMEOUT="3",
                PRHUB_MAX_ATTEMPTS="2",
                PRHUB_RETRY_BASE_WAIT="0.1",
            )
            bugs = github.errors + other.errors + llm.errors
            strays = len(other.requests)
        kept = "kept" if out.read_bytes() == good else "replaced"
        print(f"  {name:<34} {code:>4} {seconds:>7.1f} {prs(out):>13}  {kept}")
        if code:
            print(f"    {last}")
        if strays or bugs:
            print(f"    the other host got {strays} requests; stand-in errors: {bugs}")


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
    parser.add_argument("--no-hostile", action="store_true", help="skip the hostile endpoints")
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
    if not args.no_hostile:
        with tempfile.TemporaryDirectory() as tmp:
            hostile(Path(tmp))


if __name__ == "__main__":
    main()
