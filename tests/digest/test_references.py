"""The content checks calibrated on the references: what the user showed as good output passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from prhub.digest import checks

REFERENCE = Path(__file__).resolve().parents[2].parent / "shared" / "reference"


def digests() -> list[tuple[str, str]]:
    """(title, advice) of every digest in the references: a repository line, then the pairs.

    The weekly reports (a heading where the repository line would be) hold no digest titles.
    """
    pairs = []
    for path in sorted(REFERENCE.glob("*.txt")):
        head, *paragraphs = path.read_text(encoding="utf-8").strip().split("\n\n")
        if "/" not in head.split(" ")[0]:  # "执行摘要", "Prhub": a weekly report
            continue
        pairs += zip(paragraphs[::2], paragraphs[1::2], strict=True)
    return pairs


@pytest.fixture
def references() -> list[tuple[str, str]]:
    """The references' digests; skips when the shared references are absent."""
    if not REFERENCE.is_dir():
        pytest.skip(f"shared references not found at {REFERENCE}")
    found = digests()
    assert len(found) >= 20, "the references' layout changed: read them again"
    return found


def test_every_reference_title_passes_the_title_checks(references: list[tuple[str, str]]) -> None:
    failing = {title: checks.title_failures(title) for title, _ in references}
    assert {t: f for t, f in failing.items() if f} == {}


def test_reference_titles_fit_the_length_rule_with_headroom(
    references: list[tuple[str, str]],
) -> None:
    longest = max(checks.title_length(title) for title, _ in references)
    assert longest <= checks.TITLE_MAX - 5


def test_every_reference_advice_passes_the_text_checks(references: list[tuple[str, str]]) -> None:
    failing = {advice[:40]: checks.text_failures(advice) for _, advice in references}
    assert {a: f for a, f in failing.items() if f} == {}


def test_no_reference_title_would_cost_a_corrective_call(
    references: list[tuple[str, str]],
) -> None:
    assert not any(checks.needs_correction(checks.title_failures(t)) for t, _ in references)
