"""Run one stand-in until killed: python -m tests.standins github|llm [options]."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.batch import BatchStandIn


def main() -> None:
    """Parse arguments, start the chosen stand-in, print its URL and serve."""
    parser = argparse.ArgumentParser(prog="python -m tests.standins")
    servers = parser.add_subparsers(dest="server", required=True)
    github = servers.add_parser("github", help="GitHub REST API over a data directory")
    github.add_argument("--data", type=Path, required=True, help="dir of <owner>/<repo>/pulls")
    github.add_argument("--token", help="the only token accepted (default: any)")
    github.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    github.add_argument("--page-limit", type=int, default=100, help="most items on one page")
    llm = servers.add_parser("llm", help="OpenAI chat completions")
    llm.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    llm.add_argument("--api-key", help="the only key accepted (default: any)")
    llm.add_argument("--context-limit", type=int, help="refuse prompts over this many tokens")
    llm.add_argument("--prefix-cache", action="store_true", help="report cached prompt tokens")
    llm.add_argument(
        "--batch-polls",
        type=int,
        help="serve the files and batches endpoints too; looks that find a batch running",
    )
    for sub in (github, llm):
        sub.add_argument("--port", type=int, default=0)
        sub.add_argument("--fault-rate", type=float, default=0.0)
        sub.add_argument("--seed", type=int, default=0)
        sub.add_argument("--log", type=Path, help="append one JSON line per request to this file")
    args = parser.parse_args()
    common = {"port": args.port, "fault_rate": args.fault_rate, "seed": args.seed}
    if args.server == "github":
        if not args.data.is_dir():
            parser.error(f"--data {args.data} is not a directory")
        standin: GitHubStandIn | LLMStandIn = GitHubStandIn(
            args.data,
            token=args.token,
            latency=args.latency,
            page_limit=args.page_limit,
            **common,
        )
    else:
        kind, extra = LLMStandIn, {}
        if args.batch_polls is not None:
            kind, extra = BatchStandIn, {"polls": args.batch_polls}
        standin = kind(
            api_key=args.api_key,
            latency=args.latency,
            context_limit=args.context_limit,
            prefix_cache=args.prefix_cache,
            **common,
            **extra,
        )
    if args.log:
        standin.log = args.log.open("a", encoding="utf-8")
    with standin:
        print(standin.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
