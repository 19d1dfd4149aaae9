"""Benchmark prepare() on the corpus: budgets, coverage and cost against a bare tiktoken encode,
and each ISO week's prompt tokens and coverage with the compact diff and body off and on.

With --narrative it prints, per week, what the weekly narrative's request would show of the
week's digests: items shown / items written and its prompt tokens, and bodies cut. The corpus
has no digests: each PR is given one of a strong model's recorded digests
(tests/replies/strong/), in turn, so the items and their lengths are a real model's; the
recorded window (its own PRs' digests) is measured too.

Usage: .venv/bin/python bench/prepare.py [CORPUS_DIR] [--narrative] [--budget=N]
(default: ../shared/corpus, the default input budget)
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock
from zoneinfo import ZoneInfo

from prhub.config import Settings
from prhub.digest import digest
from prhub.digest.budgets import budgets
from prhub.digest.digest import plan
from prhub.github.source_payload import pull_request_from_payload
from prhub.llm.prompt import message_tokens
from prhub.model import (
    ChunkNotes,
    Coverage,
    DigestContent,
    DigestMeta,
    PRDigest,
    PreparedPR,
    PullRequest,
    Usage,
)
from prhub.prepare import prepare
from prhub.prepare.tokens import count as count_tokens
from prhub.prepare.tokens import get_encoding
from prhub.tags import parse_title
from prhub.weekly import analyse, narrate

ROOT = Path(__file__).resolve().parents[1]
NOW = datetime(2026, 8, 10, tzinfo=UTC)


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
    flags = [a for a in argv[1:] if a.startswith("--")]
    given = [a for a in argv[1:] if not a.startswith("--")]
    corpus = Path(given[0]) if given else ROOT.parent / "shared" / "corpus"
    prs = load_corpus(corpus)
    if not prs:
        sys.exit(f"no PRs under {corpus}")
    budget = [int(f.split("=", 1)[1]) for f in flags if f.startswith("--budget=")]
    settings = Settings(input_budget=budget[0]) if budget else Settings()
    if "--narrative" in flags:
        narrative_figures(prs, settings)
        return
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
        sizes = [message_tokens(m, settings.encoding) for m in plan(pr, settings).calls]
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
    weeks(prs, settings)


def week_of(pr: PullRequest, tz: str) -> tuple[int, int]:
    """The ISO (year, week) the PR was merged in, in `tz`: the week a weekly run puts it in."""
    when = (pr.merged_at or pr.created_at).astimezone(ZoneInfo(tz))
    iso = when.isocalendar()
    return iso.year, iso.week


def week_figures(prs: list[PullRequest], settings: Settings, compact: bool) -> tuple[int, float]:
    """Prompt tokens of a week's dry run (digests and narrative) and hand-written lines seen."""
    tokens = seen = total = 0
    # digest.plan has no switch of its own: the bench hands it prepare() with `compact` set.
    with mock.patch.object(digest, "prepare", partial(prepare, compact=compact)):
        for pr in prs:
            planned = plan(pr, settings)
            tokens += planned.planned_tokens()[1]
            seen += planned.prepared.coverage.lines_seen
            total += planned.prepared.coverage.lines_total
    year, week = week_of(prs[0], settings.tz)
    start, end = analyse.week_window(year, week, settings.tz)
    facts = analyse.weekly_facts(
        prs, {}, repo=prs[0].repo, start=start, end=end, tz=settings.tz, year=year, week=week
    )
    tokens += narrate.planned_tokens(facts, len(prs), settings)[1]
    return tokens, seen / total if total else 1.0


def neighbours(prs: list[PullRequest], settings: Settings) -> dict[int, list[Any]]:
    """Each PR's neighbours as a weekly run names them, from the corpus alone: the PRs it
    references that the corpus holds, and the week's PRs that changed the same files (no
    digest lines: the corpus has no digests). Empty where prhub names none."""
    try:
        from prhub.digest.related import bounded, ranked
        from prhub.model import Neighbour
        from prhub.run.related import _read_files, referenced
    except ImportError:  # a checkout before digests knew their neighbours
        return {}
    week = {pr.number: pr for pr in prs}
    every = {pr.number: pr for pr in load_corpus(ROOT.parent / "shared" / "corpus")}
    near: dict[int, list[Any]] = {}
    for pr in prs:
        found = [
            Neighbour(
                number=n, title=every[n].title, merged_at=every[n].merged_at, relation="referenced"
            )
            for n in referenced(pr)
            if n in every
        ]
        for n, other in week.items():
            both = sorted(_read_files(pr) & _read_files(other))
            if n != pr.number and both:
                found.append(
                    Neighbour(
                        number=n,
                        title=other.title,
                        merged_at=other.merged_at,
                        relation="same_files",
                        files=both,
                    )
                )
        near[pr.number] = bounded(ranked(found, pr.number), settings.encoding)
    return near


def breakdown(prs: list[PullRequest], settings: Settings) -> tuple[int, int, int, int, int]:
    """A week's digest prompt tokens by kind: calls of PRs read whole, chunk calls, final calls
    without their notes, the notes' room (their upper bound) and the narrative's estimate."""
    whole = chunks = finals = notes = 0
    near = neighbours(prs, settings)
    for pr in prs:
        planned = plan(pr, settings, neighbours=near[pr.number]) if near else plan(pr, settings)
        sizes = [message_tokens(m, settings.encoding) for m in planned.calls]
        if not planned.map_reduce:
            whole += sizes[0]
            continue
        chunks += sum(sizes)
        empty = [ChunkNotes(summary="", key_files=[], identifiers=[], risks=[])] * len(sizes)
        finals += message_tokens(planned.final(empty, "json_object"), settings.encoding)
        notes += len(sizes) * planned.budgets.note
    year, week = week_of(prs[0], settings.tz)
    start, end = analyse.week_window(year, week, settings.tz)
    facts = analyse.weekly_facts(
        prs, {}, repo=prs[0].repo, start=start, end=end, tz=settings.tz, year=year, week=week
    )
    return whole, chunks, finals, notes, narrate.planned_tokens(facts, len(prs), settings)[1]


def weeks(prs: list[PullRequest], settings: Settings) -> None:
    """Per ISO week: prompt tokens and hand-written coverage, compact diff and body off and on."""
    by_week: defaultdict[tuple[int, int], list[PullRequest]] = defaultdict(list)
    for pr in prs:
        by_week[week_of(pr, settings.tz)].append(pr)
    print()
    print(
        f"{'week':>8} {'PRs':>4} {'tokens off':>10} {'tokens on':>10} {'seen off':>8} "
        f"{'seen on':>8}   (seen: hand-written changed lines the model is shown)"
    )
    sums = [0, 0]
    for (year, week), members in sorted(by_week.items()):
        before, seen_before = week_figures(members, settings, compact=False)
        after, seen_after = week_figures(members, settings, compact=True)
        sums = [sums[0] + before, sums[1] + after]
        print(
            f"{year}-W{week:02d} {len(members):>4} {before:>10,} {after:>10,} "
            f"{seen_before:>8.1%} {seen_after:>8.1%}"
        )
    print(f"{'all':>8} {len(prs):>4} {sums[0]:>10,} {sums[1]:>10,}")
    print()
    print(
        f"{'week':>8} {'whole':>8} {'chunks':>8} {'finals':>8} {'notes<=':>8} {'narr.<=':>8}"
        "   (prompt tokens: PRs read in one call, chunk calls, final calls without their"
    )
    print(f"{'':>45}notes, the notes' room, the narrative's estimate)")
    for (year, week), members in sorted(by_week.items()):
        parts = breakdown(members, settings)
        print(f"{year}-W{week:02d} " + " ".join(f"{n:>8,}" for n in parts))


RECORDED = ROOT / "tests" / "replies" / "strong" / "verl-2026-07-28.json"


def recorded() -> tuple[dict[int, DigestContent], dict[str, str]]:
    """A strong model's recorded digests by PR, and its recorded window."""
    record = json.loads(RECORDED.read_text(encoding="utf-8"))
    answers = {
        a["pr"]: DigestContent.model_validate(a["content"])
        for a in record["answers"]
        if a["kind"] == "digest"
    }
    return answers, {k: record[k] for k in ("since", "until", "tz")}


def digest_of(pr: PullRequest, content: DigestContent) -> PRDigest:
    """`pr`'s digest with `content`, as a week's report holds it."""
    modules, kind, *_ = parse_title(pr.title)
    meta = DigestMeta(prompt="", model="", usage=Usage(), coverage=Coverage(), created_at=NOW)
    return PRDigest(
        repo=pr.repo,
        number=pr.number,
        url=pr.url,
        original_title=pr.title,
        author=pr.author,
        merged_at=pr.merged_at,
        modules=modules,
        kind=kind,
        content=content,
        meta=meta,
    )


def narrative_row(name: str, prs: list[PullRequest], digests: list[PRDigest], s: Settings) -> None:
    """One period: its narrative request's items shown / written, its prompt tokens, bodies."""
    from prhub.weekly.lines import fits, fitted_items, written

    prs = sorted(prs, key=lambda pr: pr.number)
    digests = sorted(digests, key=lambda d: d.number)
    start = min(pr.merged_at or pr.created_at for pr in prs)
    year, week = week_of(prs[0], s.tz)
    begin, end = analyse.week_window(year, week, s.tz)
    facts = analyse.weekly_facts(
        prs,
        {d.number: d for d in digests},
        repo=prs[0].repo,
        start=min(begin, start),
        end=end,
        tz=s.tz,
        year=year,
        week=week,
    )
    room = s.input_budget - narrate._fixed_tokens(facts, s)
    wrote = sum(written(d) for d in digests)
    if fits(digests, s, room):
        picked = fitted_items(digests, s, room)
        shown = sum(n for _, n in picked)
        tokens = room and s.input_budget - room + sum(
            count_tokens(line, s.encoding) + 2 for line, _ in picked
        )
        calls = "1"
    else:
        shown, tokens, calls = 0, 0, "groups"
    cut = 0
    for pr in prs:
        planned = plan(pr, s)
        cut += "（PR 描述过长" in planned.prepared.body
    print(
        f"{name:>12} {len(prs):>4} {shown:>6}/{wrote:<6} {shown / max(1, wrote):>6.0%} "
        f"{tokens:>9,} {calls:>6} {cut:>4}"
    )


def narrative_figures(prs: list[PullRequest], settings: Settings) -> None:
    """Per week, and for the recorded window: the narrative request's items and tokens."""
    answers, window = recorded()
    contents = [answers[n] for n in sorted(answers)]
    print(
        f"{'period':>12} {'PRs':>4} {'shown/written':>13} {'share':>6} {'tokens':>9} "
        f"{'calls':>6} {'cut':>4}   (cut: PR bodies the digest prompt shortens)"
    )
    by_week: defaultdict[tuple[int, int], list[PullRequest]] = defaultdict(list)
    for pr in prs:
        by_week[week_of(pr, settings.tz)].append(pr)
    for (year, week), members in sorted(by_week.items()):
        members = sorted(members, key=lambda pr: pr.number)
        digests = [digest_of(pr, contents[i % len(contents)]) for i, pr in enumerate(members)]
        narrative_row(f"{year}-W{week:02d}", members, digests, settings)
    tz = ZoneInfo(window["tz"])
    lo = datetime.fromisoformat(window["since"]).replace(tzinfo=tz)
    hi = datetime.fromisoformat(window["until"]).replace(tzinfo=tz) + timedelta(days=1)
    inside = [pr for pr in prs if pr.merged_at and lo <= pr.merged_at < hi and pr.number in answers]
    digests = [digest_of(pr, answers[pr.number]) for pr in inside]
    narrative_row("recorded", inside, digests, settings)


if __name__ == "__main__":
    main(sys.argv)
