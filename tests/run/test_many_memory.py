"""`weekly --all` keeps no repository's report once it is shown: its memory does not grow with
the repositories done, and the index still shows each one's counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from prhub.config import Settings
from prhub.publish.formats import Format
from prhub.run import many
from tests.factories import FIXTURES, GITHUB_TOKEN, REPO, settings
from tests.standins import GitHubStandIn, LLMStandIn

NAMES = ("acme/one", "acme/two", "acme/three")


@pytest.fixture
def mirrored(llm: LLMStandIn) -> GitHubStandIn:
    server = GitHubStandIn(
        FIXTURES / "github", token=GITHUB_TOKEN, mirrors=dict.fromkeys(NAMES, REPO)
    )
    return server


def test_each_repository_is_shown_then_let_go(
    llm: LLMStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[int] = []

    class Show(many.Silent):
        def finished(self, outcome: many.Outcome) -> None:
            assert outcome.report is not None  # whole while it is shown
            seen.append(len(outcome.report.digests))

    with GitHubStandIn(
        FIXTURES / "github", token=GITHUB_TOKEN, mirrors=dict.fromkeys(NAMES, REPO)
    ) as github:
        base: Settings = settings(github, llm, tmp_path, repos=NAMES)
        done = many.weekly_all(
            base,
            lambda name: base.model_copy(update={"repo": name}),
            {"year": 2026, "week": 31, "since": None, "until": None},
            Format.markdown,
            Show(),
        )
    assert done.exit_code == 0 and seen == [6, 6, 6]
    assert [o.report for o in done.outcomes] == [None, None, None]  # each in its file
    index = (tmp_path / "reports" / "index.md").read_text(encoding="utf-8")
    for name in NAMES:
        assert f"| {name} | [2026-W31.md]({name}/2026-W31.md) | 6 |" in index
