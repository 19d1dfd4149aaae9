"""The narrative's request shows every item of every digest when the budget allows: measured on
a strong model's recorded digests of real PRs (the corpus), and on a week too big to show whole,
where each PR keeps a fair share."""

from __future__ import annotations

import json
from pathlib import Path

from prhub.config import Settings
from prhub.github.source_payload import pull_request_from_payload
from prhub.model import Coverage, DigestContent, DigestMeta, PRDigest, PullRequest, Usage
from prhub.tags import parse_title
from prhub.weekly import analyse, narrate
from prhub.weekly.lines import SECTIONS, fits, fitted_items, written
from tests.factories import ROOT

RECORDED = ROOT / "tests" / "replies" / "strong" / "verl-2026-07-28.json"


def recorded_week(corpus: Path) -> list[PRDigest]:
    """The recorded window's PRs from the corpus, each with the digest a strong model wrote."""
    record = json.loads(RECORDED.read_text(encoding="utf-8"))
    pulls = corpus / "verl-project" / "verl" / "pulls"
    made = []
    for a in record["answers"]:
        if a["kind"] != "digest":
            continue
        n = a["pr"]
        pr: PullRequest = pull_request_from_payload(
            record["repo"],
            json.loads((pulls / f"{n}.json").read_text()),
            json.loads((pulls / f"{n}.files.json").read_text()),
        )
        modules, kind, *_ = parse_title(pr.title)
        meta = DigestMeta(
            prompt="", model="", usage=Usage(), coverage=Coverage(), created_at=pr.created_at
        )
        made.append(
            PRDigest(
                repo=pr.repo,
                number=n,
                url=pr.url,
                original_title=pr.title,
                author=pr.author,
                merged_at=pr.merged_at,
                modules=modules,
                kind=kind,
                content=DigestContent.model_validate(a["content"]),
                meta=meta,
            )
        )
    return sorted(made, key=lambda d: d.number)


def test_the_recorded_weeks_request_holds_every_item_of_every_digest(corpus_dir):
    digests = recorded_week(corpus_dir)
    settings = Settings()
    start, end = analyse.week_window(2026, 31, settings.tz)
    facts = analyse.weekly_facts(
        [], {}, repo="verl-project/verl", start=start, end=end, tz=settings.tz, year=2026, week=31
    ).model_copy(update={"prs": [d.number for d in digests], "pr_count": len(digests)})
    room = settings.input_budget - narrate._fixed_tokens(facts, settings)
    assert fits(digests, settings, room)
    lines = fitted_items(digests, settings, room)
    assert sum(n for _, n in lines) == sum(map(written, digests)) >= 60
    asked = narrate._messages(facts, [line for line, _ in lines], [], settings, "json_object")
    text = asked[-1]["content"]
    for d in digests:
        for _, name in SECTIONS:
            for item in getattr(d.content, name):
                assert " ".join(item.split()) in text, (d.number, item)
    assert "另有" not in text


def test_a_week_too_big_to_show_whole_gives_each_pr_a_fair_share(corpus_dir):
    digests = recorded_week(corpus_dir)
    settings = Settings(input_budget=6_000)
    room = 3_000
    lines = fitted_items(digests, settings, room)
    shown = sum(n for _, n in lines)
    assert 0 < shown < sum(map(written, digests))
    # Every PR shows some of its lists, and none is cut inside an item.
    for (line, n), d in zip(lines, digests, strict=True):
        assert n >= min(1, written(d)), d.number
        assert "\ufffd" not in line
