"""A run in batch mode: rounds of collecting the batches that finished, digesting from their
answers, and sending what is still unanswered as one batch; --wait polls between rounds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from prhub.llm.batch import Batched, Deferred, Waiting
from prhub.run.book import BatchBook
from prhub.run.run import Run

T = TypeVar("T")
P = ParamSpec("P")


def deferrable(work: Callable[P, T]) -> Callable[P, T | None]:
    """`work`, giving None when it waits for a batch's answer."""

    def run(*args: P.args, **kwargs: P.kwargs) -> T | None:
        try:
            return work(*args, **kwargs)
        except Deferred:
            return None

    return run


def rounds(run: Run, repo: str, work: Callable[[], T]) -> tuple[T, Waiting | None]:
    """What `work` makes from the answers collected so far, and what it still waits for.

    Each round collects the batches that finished, does the work (its calls answered from
    them, or held), and sends what was held as one batch. Without --wait the first round is
    the last; with it, rounds go on until the work waits for nothing or batch_wait passed. A
    map-reduce PR takes two rounds: its chunk notes, then its final call on them.
    """
    settings = run.settings
    deadline = None  # batch_wait counts from the first wait
    while True:
        llm = run.llm
        if llm is None and BatchBook(run.store, settings.endpoint, settings.model).open_batches(
            repo
        ):
            llm = run.llm_client()  # a run the store serves whole needs no key
        if isinstance(llm, Batched):
            llm.to_batch = True
            llm.collect(repo)
        done = work()
        llm = run.llm
        if not isinstance(llm, Batched):
            return done, None  # the store held every answer: no client was needed
        waiting = llm.submit(repo)
        if waiting is None:
            llm.to_batch = False  # what follows (the narrative) goes online
            return done, None
        if not settings.wait:
            return done, waiting
        deadline = deadline or time.monotonic() + settings.batch_wait
        running = llm.wait(
            deadline - time.monotonic(),
            lambda answered, total: run.progress("batch", answered, total),
        )
        if running:
            return done, Waiting(0, running)
