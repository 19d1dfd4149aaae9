"""bench/scale.py over the project's fixtures: a synthetic organisation of one and two names."""

from __future__ import annotations

import re

import pytest

from bench import scale
from tests.factories import FIXTURES, REPO

LIMIT = 30  # core requests an hour: one repository's week fits in it, two do not


def table(out: str) -> tuple[list[str], dict[str, list[str]]]:
    """The sizes and each row's cells of the printed table."""
    lines = out.split("\n\n")[1].splitlines()
    rows = [re.split(r"\s{2,}", line) for line in lines[1:]]
    return lines[0].split(), {cells[0]: cells[1:] for cells in rows}


def numbers(cells: list[str]) -> list[float]:
    return [float(cell.replace(",", "")) for cell in cells]


@pytest.mark.slow
def test_two_sizes_of_an_organisation_wait_revalidate_and_batch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    scale.main([str(FIXTURES / "github"), "--source", REPO, "--sizes", "1,2", "--limit", "30"])
    out = capsys.readouterr().out
    assert out.startswith(f"{REPO} week 2026-W31 under N names; GitHub: {LIMIT} core requests")
    sizes, rows = table(out)
    assert sizes == ["N=1", "N=2"]
    one, two = prs = numbers(rows["PRs"])
    assert one > 0 and two == 2 * one  # the same PRs under each name

    sent = numbers(rows["first run: GitHub requests"])
    assert sent[1] == 2 * sent[0] and sent[0] <= LIMIT < sent[1]
    each = numbers(rows["first run: GitHub requests per PR"])
    assert each[0] == each[1] >= 3  # the pull, its files, its reviews, and a share of the rest
    assert rows["first run: refused by the limit"] == ["0", "0"]  # it waited before GitHub refused
    alone, together = rows["first run: waited for the limit (simulated)"]
    assert alone == "none"
    assert re.fullmatch(r"(59 min|1 h 0[01] min) \(1 core\)", together), together  # the hour out

    assert numbers(rows["rerun: saved by revalidation (304s)"]) == prs  # every stored PR a 304
    assert all(n < 1 for n in numbers(rows["rerun: limit requests per PR"]))

    calls = numbers(rows["online: LLM calls"])
    assert all(c > p for c, p in zip(calls, prs, strict=True))  # a digest each, and the week's
    split = [numbers(c.split(" / ")) for c in rows["batch: LLM calls in batch / online"]]
    # A digest request each in the batches; the narrative online, once they are in.
    assert all(batch >= p and online > 0 for (batch, online), p in zip(split, prs, strict=True))
    assert all(runs >= 2 for runs in numbers(rows["batch: runs until complete"]))  # sent, collected
    costs = zip(numbers(rows["cost online (USD)"]), numbers(rows["cost batch (USD)"]), strict=True)
    assert all(0 < batch < online for online, batch in costs)
    assert all(re.fullmatch(r"[1-9]\d* MiB", cell) for cell in rows["peak RSS of a prhub run"])
    # One search a repository-week: GitHub's count comes with the first page.
    assert numbers(rows["first run: searches per repository-week"]) == [1.0, 1.0]
    assert numbers(rows["rerun: searches per repository-week"]) == [1.0, 1.0]
    growth = out.split("\n\n")[2]
    assert re.match(r"peak RSS per added repository, N=1 to N=2: -?\d+\.\d\d MiB \(first", growth)
