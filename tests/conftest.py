"""Shared fixtures: stand-in servers, a hermetic environment and the shared corpus."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from prhub import retry
from tests.standins import GitHubStandIn, LLMStandIn

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GITHUB_TOKEN = "ghp_FAKEtoken0000000000000000000000000000"
OPENAI_KEY = "sk-FAKEkey0000000000000000000000"
# prhub reads these; a developer's own values, or the CI runner's, must not leak into tests.
ENV_VARS = ("GH_TOKEN", "PRHUB_CONFIG", "CI", "GITHUB_ACTIONS")


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prhub-cache")


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, _session_cache: Path) -> None:
    if not os.environ.get("PRHUB_CACHE_DIR"):
        monkeypatch.setenv("PRHUB_CACHE_DIR", str(_session_cache))
    from prhub.config import ENV

    for name in (*ENV.values(), *ENV_VARS):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _not_halted() -> None:
    """Each test starts as a new process would: no run has halted requests."""
    retry.resume()


@pytest.fixture
def github() -> Iterator[GitHubStandIn]:
    """A GitHub stand-in over fixtures/github that accepts only GITHUB_TOKEN."""
    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN) as server:
        yield server
        gc.collect()  # a client left open now fails the test that leaked it
    assert not server.errors, server.errors


@pytest.fixture
def llm() -> Iterator[LLMStandIn]:
    """An OpenAI stand-in that accepts only OPENAI_KEY."""
    with LLMStandIn(api_key=OPENAI_KEY) as server:
        yield server
        gc.collect()  # a client left open now fails the test that leaked it
    assert not server.errors, server.errors


@pytest.fixture
def corpus_dir() -> Path:
    """The shared corpus of real PRs next to the repository; skips when it is absent."""
    path = ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.skip(f"shared corpus not found at {path}")
    return path


def cli_env(github: GitHubStandIn, llm: LLMStandIn, store: Path, **extra: str) -> dict:
    """The environment a CLI run against the stand-ins gets: every prhub variable cleared, then
    the stand-ins, the fake credentials and `store`, then `extra`."""
    from prhub.config import ENV

    env: dict[str, str | None] = dict.fromkeys([*ENV.values(), "PRHUB_CONFIG"])
    env.update(
        GITHUB_TOKEN=GITHUB_TOKEN,
        OPENAI_API_KEY=OPENAI_KEY,
        OPENAI_BASE_URL=llm.url,
        GITHUB_API_URL=github.url,
        PRHUB_STORE=str(store),
        **extra,
    )
    return env
