"""Shared fixtures: stand-in servers, a hermetic environment, clients on the stand-ins and the
shared corpus. The builders and data they use are in `factories.py`."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prhub import retry
from tests.factories import FIXTURES, GITHUB_TOKEN, OPENAI_KEY, ROOT, MakeLLM, cli_env, settings
from tests.standins import GitHubStandIn, LLMStandIn

# prhub reads these; a developer's own values, or the CI runner's, must not leak into tests.
ENV_VARS = ("GH_TOKEN", "PRHUB_CONFIG", "CI", "GITHUB_ACTIONS")


def collect() -> None:
    """A full collection, so a client left open warns (and fails) in the test that leaked it;
    what survives it is frozen, so the next collection looks only at what is new. Without
    this, each collection walks every object the session ever kept: seconds a test."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prhub-cache")


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, _session_cache: Path) -> None:
    if not os.environ.get("PRHUB_CACHE_DIR"):
        monkeypatch.setenv("PRHUB_CACHE_DIR", str(_session_cache))
    from prhub.defaults import ENV

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
        collect()  # a client left open now fails the test that leaked it
    assert not server.errors, server.errors


@pytest.fixture
def llm() -> Iterator[LLMStandIn]:
    """An OpenAI stand-in that accepts only OPENAI_KEY."""
    with LLMStandIn(api_key=OPENAI_KEY) as server:
        yield server
        collect()  # a client left open now fails the test that leaked it
    assert not server.errors, server.errors


@pytest.fixture
def corpus_dir() -> Path:
    """The shared corpus of real PRs next to the repository; skips when it is absent."""
    path = ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.skip(f"shared corpus not found at {path}")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """Where a CLI run keeps its store."""
    return tmp_path / "store.db"


@pytest.fixture
def env(
    github: GitHubStandIn,
    llm: LLMStandIn,
    store: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, str | None]:
    """The environment of a CLI run for acme/rocket on the stand-ins, in `tmp_path` (where
    reports/ and any prhub.toml go)."""
    monkeypatch.chdir(tmp_path)
    return cli_env(github, llm, store, PRHUB_REPO="acme/rocket")


@pytest.fixture
def make_llm(llm: LLMStandIn) -> Iterator[MakeLLM]:
    """Builds LLM clients on the stand-in (settings overridable) and closes them after."""
    from prhub.llm.llm import LLM

    made: list[LLM] = []

    def make(mode: str | None = None, **overrides: Any) -> LLM:
        client = LLM(settings(llm, **overrides), stop=retry.StopToken(), mode=mode)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def make_source(github: GitHubStandIn) -> Iterator[Any]:
    """Builds GitHub sources on the stand-in (settings overridable) and closes them after."""
    from prhub.github.source import GitHubSource

    made: list[GitHubSource] = []

    def make(**overrides: Any) -> GitHubSource:
        source = GitHubSource(settings(github, **overrides), stop=retry.StopToken())
        made.append(source)
        return source

    yield make
    for source in made:
        source.close()
