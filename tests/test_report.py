"""Report types: dry-run totals."""

from __future__ import annotations

from prhub.report import DryRun, PlannedPR


def test_dry_run_totals_include_the_narrative():
    plan = DryRun(
        repo="o/r",
        prs=[
            PlannedPR(number=1, cached=False, calls=3, tokens_in=9000),
            PlannedPR(number=2, cached=True, calls=0, tokens_in=0),
            PlannedPR(number=3, cached=False, calls=1, tokens_in=1500),
        ],
        narrative_calls=2,
        narrative_tokens_in=4000,
    )
    assert plan.calls == 6
    assert plan.tokens_in == 14_500
    assert DryRun(repo="o/r", prs=[]).calls == 0
