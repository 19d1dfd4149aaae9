"""Batch mode: a run's digest requests through the provider's Batch API on the stand-in."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.factories import OPENAI_KEY, prhub
from tests.standins.batch import BatchStandIn

WEEK = ("weekly", "--week", "31", "--year", "2026")


@pytest.fixture
def llm() -> Iterator[BatchStandIn]:
    """The LLM stand-in with the files and batches endpoints."""
    with BatchStandIn(api_key=OPENAI_KEY) as server:
        yield server
        gc.collect()
    assert not server.errors, server.errors


def test_smoke(env, llm, tmp_path):
    first = prhub(env, *WEEK, "--batch")
    print(first.stderr, first.exception)
    second = prhub(env, *WEEK, "--batch")
    print(second.stderr, second.exception)
    assert 0
