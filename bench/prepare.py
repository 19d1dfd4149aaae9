"""Benchmark prepare() on the corpus: budgets, coverage and cost against a bare tiktoken encode.

Usage: .venv/bin/python bench/prepare.py [CORPUS_DIR]   (default: ../shared/corpus)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from prhub.config import Settings
from prhub.digest import budgets, plan
from prhub.llm import message_tokens
from prhub.model import PreparedPR, PullRequest
from prhub.prepare import prepare
from prhub.prepare.tokens import get_encoding
from prhub.source import pull_request_from_payload

ROOT = Path(__file__).resolve().parents[1]


def load_pr(pulls: Path, number: int, repo: str) -> PullRequest:
    """A PullRequest from the GitHub REST payloads N.json and N.files.json."""
    pull = json.loads((pulls / f"{number}.json").read_text())
    files = json.loads((pulls / f"{number}.files.json").read_text())
    return pull_request_from_payload(repo, pull, files)


def load_corpus(corpus: Path) -> list[PullRequest]:
    prs = []
    for pulls in sorted(corpus.glob("*/*/pulls")):
        repo = f"{pulls.parent.parent.name}/{pulls.parent.name}"
        numbers = sorted(int(p.name.split(".")[0]) for p in pulls.glob("*.files.json"))
        prs += [load_pr(pulls, n, repo) for n in numbers]
    return prs


def best_of(n: int, fn: Callable[[], object]) -> float:
    """The fastest of n runs of fn, in seconds."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str]) -> None:
    corpus = Path(argv[1]) if len(argv) > 1 else ROOT.parent / "shared" / "corpus"
    prs = load_corpus(corpus)
    if not prs:
        sys.exit(f"no PRs under {corpus}")
    settings = Settings()
    enc = get_encoding(settings.encoding)

    def run(pr: PullRequest) -> PreparedPR:
        # The budgets summarize uses: what is left of the input budget after the prompt's text.
        chunk_budget, index_budget, _ = budgets(pr, settings)
        return prepare(pr, settings, chunk_budget=chunk_budget, index_budget=index_budget)

    patches = [[f.patch or "" for f in pr.files] for pr in prs]
    for pr in prs:  # warm the encoding and caches
        run(pr)
    print(
        f"{'PR':>6} {'files':>5} {'patch tok':>9} {'prompt tok':>15} {'calls':>5} "
        f"{'full/exc/list/excl':>18} {'seen':>5} {'redact':>6} {'ms':>6}"
    )
    one_call = 0
    largest = 0
    total_prepare = 0.0
    for pr, texts in zip(prs, patches, strict=True):
        raw = sum(len(enc.encode_ordinary(t)) for t in texts)
        elapsed = best_of(3, lambda pr=pr: run(pr))
        total_prepare += elapsed
        out = run(pr)
        sizes = [message_tokens(m, settings.encoding) for m in plan(pr, settings)[1]]
        largest = max(largest, *sizes)
        calls = 1 if len(out.chunks) == 1 else len(out.chunks) + 1
        one_call += calls == 1
        cov = out.coverage
        views = f"{len(cov.full)}/{len(cov.excerpt)}/{len(cov.listed)}/{len(cov.excluded)}"
        chunk_tokens = "+".join(f"{n:,}" for n in sizes)
        print(
            f"{pr.number:>6} {len(pr.files):>5} {raw:>9,} {chunk_tokens:>15} {calls:>5} "
            f"{views:>18} {cov.share_seen:>5.0%} {sum(out.redactions.values()):>6} "
            f"{elapsed * 1000:>6.1f}"
        )
    flat = [t for texts in patches for t in texts]
    bare = best_of(3, lambda: [enc.encode_ordinary(t) for t in flat])
    print()
    print(f"PRs: {len(prs)}; in one call at the default budget: {one_call / len(prs):.0%}")
    budget = settings.input_budget
    print(f"largest prompt: {largest:,} tokens of a {budget:,} budget ({largest / budget:.0%})")
    print(
        f"throughput: prepare {total_prepare * 1000:.0f} ms, bare encode {bare * 1000:.0f} ms, "
        f"ratio {total_prepare / bare:.2f}x (target <= 3x)"
    )


if __name__ == "__main__":
    main(sys.argv)
