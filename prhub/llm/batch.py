"""Batch mode: the client whose requests go into the provider's Batch API and whose answers,
once collected, are read, validated and checked as answers online are."""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, Protocol

import openai
from openai.types.chat import ChatCompletion

from prhub import retry
from prhub.config import Settings
from prhub.errors import LLMRequestError, LLMUnavailable
from prhub.llm import batch_api
from prhub.llm.batch_api import Answer, Sending, Status
from prhub.llm.llm import LLM
from prhub.llm.llm_http import MalformedAnswer, check_completion
from prhub.model import Usage
from prhub.text import plural

log = logging.getLogger("prhub")
# Seconds after which a send the provider holds no batch of is forgotten: a run sending it
# now would have recorded it long since.
STALE = 86_400.0


class Deferred(Exception):  # noqa: N818 (a request put off, not an error)
    """A request whose answer is not in yet: it goes into the run's batch, or waits for the
    batch it is in. No PrhubError: it fails no PR, and the run says what it waits for."""


class Book(Protocol):
    """What the store keeps of batches: their ids, the requests in each, their answers."""

    def answer(self, key: str) -> Answer | None:
        """The collected answer to the request `key`, if one came back."""
        ...

    def first_read(self, key: str) -> bool:
        """Marks the answer read; whether no run read it before (its cost counts once)."""
        ...

    def in_flight(self, key: str) -> str | None:
        """The id of the batch not yet collected that holds the request, if one does."""
        ...

    def open_batches(self, repo: str) -> list[str]:
        """The batches not yet collected that hold `repo`'s requests."""
        ...

    def sending(self, ident: str, run: str, requests: dict[str, str]) -> tuple[Sending, bool]:
        """Keeps that a batch of `requests` (each key with its repository) is being sent, before
        anything is; the send, and whether an earlier run began the same one."""
        ...

    def uploaded(self, ident: str, file_id: str) -> None:
        """Keeps the file a send's requests were uploaded as."""
        ...

    def unsent(self) -> list[tuple[Sending, dict[str, str]]]:
        """Sends begun and never recorded as a batch (a run interrupted), with their requests."""
        ...

    def unsend(self, ident: str) -> None:
        """Forgets a send the provider made nothing of."""
        ...

    def discard(self, key: str) -> None:
        """Forgets a collected answer that cannot be used: the request is sent again."""
        ...

    def submitted(self, batch_id: str, requests: dict[str, str]) -> None:
        """Keeps a new batch and its requests' keys, each with its repository; its send is over."""
        ...

    def collected(self, batch_id: str, status: str, answers: dict[str, Answer]) -> int:
        """Keeps a finished batch's answers and closes it; its requests left without one are
        free to be sent again. Returns how many were left."""
        ...


class Waiting(NamedTuple):
    """What a run waits for: the batches it submitted or found running, and their states."""

    submitted: int  # requests this run put into a new batch
    batches: list[Status]

    def line(self) -> str:
        """The run's last line, saying what it waits for."""
        running = self.batches[1:] if self.submitted else self.batches
        said = (
            [f"submitted {plural(self.submitted, 'request')} in batch {self.batches[0].id}"]
            if self.submitted
            else []
        )
        if running:
            states = "; ".join(f"{b.id} {b.status} ({b.done}/{b.total} answered)" for b in running)
            said.append(f"batch {states}")
        return f"{'; '.join(said)}; rerun to collect (the report is not written yet)"


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back while the block runs, then delivered: what it records of a
    batch the provider made is whole. Only the main thread takes signals; elsewhere, or under
    handlers not set from Python, the block runs as it is."""
    kinds = (signal.SIGINT, signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {kind: signal.getsignal(kind) for kind in kinds}
    if any(h is None for h in handlers.values()):
        yield
        return
    caught: list[int] = []
    for kind in kinds:
        signal.signal(kind, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for kind, handler in handlers.items():
            signal.signal(kind, handler)
        if caught:
            signal.raise_signal(caught[0])


def request_key(body: dict[str, Any]) -> str:
    """The custom_id of a request: a hash of all it sends, so the same request is one key."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return "prhub-" + hashlib.sha256(text.encode()).hexdigest()[:32]


class Batched(LLM):
    """An LLM client whose calls are answered from collected batches: a call not answered yet
    raises Deferred and its request is held for the next batch.

    The narrative (`to_batch` off) and, with --batch-corrections online, corrective calls go
    online through the same client, so the learned response mode and the usage stay one.
    """

    def __init__(
        self,
        settings: Settings,
        book: Book,
        client: openai.OpenAI | None = None,
        stop: retry.StopToken | None = None,
        mode: str | None = None,
    ) -> None:
        super().__init__(settings, client, stop, mode)
        self.book = book
        self.to_batch = True
        self.batch_spent = Usage()  # the part of `spent` answered in a batch
        self._deferred: dict[str, dict[str, Any]] = {}  # not answered, in no running batch
        self._waiting: set[str] = set()  # running batches holding requests this run needs
        self._running: dict[str, Status] = {}  # running batches as last seen
        self._sizes: dict[str, int] = {}  # requests in each batch this run sent
        self._local = threading.local()  # how the call this thread makes now is answered
        self.run_id = uuid.uuid4().hex[:12]  # named in the metadata of the batches it makes

    def _create(
        self, messages: list[dict[str, str]], response_format: Any, correction: bool = False
    ) -> Any:
        online = correction and self.settings.batch_corrections == "online"
        if online or not self.to_batch:
            self._local.kind = "online"
            return super()._create(messages, response_format)
        body = self.body(messages, response_format)
        key = request_key(body)
        found = self.book.answer(key)
        if found is None:
            with self._lock:
                held = self.book.in_flight(key)
                if held:
                    self._waiting.add(held)
                else:
                    self._deferred[key] = body
            raise Deferred(key)
        self._local.kind = "batch" if self.book.first_read(key) else "again"
        return self._replayed(key, found, body)

    def _replayed(self, key: str, found: Answer, body: dict[str, Any]) -> Any:
        """The collected answer as the SDK gives an online one: a completion, or the error
        the endpoint would have raised (a refused response_format falls back as online).

        An answer that cannot be used (a refusal, a malformed completion) fails its request in
        this run, as online, and is not kept: the next run asks again in its batch."""
        what = f"the LLM endpoint {self._where()} (in a batch)"
        try:
            if found.status != 200:
                raise batch_api.status_error(found, self.settings.openai_base_url)
            check_completion(found.body, body.get("max_tokens"), what)
        except (openai.APIStatusError, MalformedAnswer):
            self.book.discard(key)
            raise
        return ChatCompletion.construct(**found.body)

    def _spend(self, call: Usage) -> int:
        kind = getattr(self._local, "kind", "online")
        with self._lock:
            if kind == "again":  # read by an earlier run, which counted what it cost
                return self.spent.calls
            if kind == "batch":
                self.batch_spent += call
        return super()._spend(call)

    def collect(self, repo: str) -> list[Status]:
        """Reads every finished batch holding `repo`'s requests into the store; returns the
        batches still running."""
        running = []
        settings = self.settings
        for batch_id in self.book.open_batches(repo):
            status = batch_api.retrieve(self.client, batch_id, settings, self.stop_token)
            if status.status not in batch_api.FINISHED:
                running.append(status)
                continue
            answers, doubled = batch_api.answers(self.client, status, settings, self.stop_token)
            left = self.book.collected(batch_id, status.status, answers)
            if doubled:  # what is kept is kept; the requests answered twice go out again
                key, lines = next(iter(doubled.items()))
                raise LLMUnavailable(
                    f"batch {batch_id}'s files answer {plural(len(doubled), 'request')} on more "
                    f"than one line (request {key} on {lines}): prhub takes none of them and "
                    "sends them again in the next batch; the other answers are kept, rerun"
                )
            if left:
                log.warning(
                    "batch %s ended %s with %d of %d requests unanswered: they go into the "
                    "next batch",
                    batch_id,
                    status.status,
                    left,
                    status.total,
                )
            if status.status == "failed":
                raise LLMRequestError(
                    f"the provider refused batch {batch_id} ({status.problem or 'no reason given'})"
                    ": check that the model takes batch requests, or run without --batch"
                )
        with self._lock:
            self._running = {s.id: s for s in running}
        return running

    def submit(self, repo: str) -> Waiting | None:
        """Sends the requests held this run as one batch; what the run waits for, or None
        when it waits for nothing."""
        with self._lock:
            held, self._deferred = self._deferred, {}
            waiting = set(self._waiting)
            running = dict(self._running)
        statuses = []
        maybe_made = False
        for sent, requests in self.book.unsent():  # left by a run interrupted while sending
            if found := self._made(sent):
                with signals_held():
                    self.book.submitted(found, requests)
                if requests.keys() & held.keys():
                    waiting.add(found)
                held = {k: b for k, b in held.items() if k not in requests}
            elif sent.ident == batch_api.identity(held):
                maybe_made = True  # its upload may be there, to be found by its name
            elif time.time() - sent.since > STALE:  # younger, it may be another run's, sending
                self.book.unsend(sent.ident)
        if held:
            batch_id = self._dispatch(held, repo, maybe_made)
            statuses.append(Status(batch_id, "validating", 0, len(held)))
            self._sizes[batch_id] = len(held)
        for batch_id in sorted(waiting):
            statuses.append(running.get(batch_id) or self._retrieve(batch_id))
        with self._lock:
            self._waiting = waiting | {s.id for s in statuses}
        return Waiting(len(held), statuses) if statuses else None

    def _dispatch(self, held: dict[str, dict[str, Any]], repo: str, maybe_made: bool) -> str:
        """Sends `held` as one batch, kept in the store as being sent before anything goes
        out, and recorded the moment the provider's answer is in; the batch's id."""
        requests = dict.fromkeys(held, repo)
        sending, begun = self.book.sending(batch_api.identity(held), self.run_id, requests)
        batch_id = batch_api.submit(
            self.client,
            held,
            sending,
            self.settings,
            self.stop_token,
            lambda file_id: self.book.uploaded(sending.ident, file_id),
            maybe_made=maybe_made or begun,
        )
        # An interrupt before this line leaves the send kept, and the next run finds its batch.
        with signals_held():
            self.book.submitted(batch_id, requests)
        return batch_id

    def _made(self, sent: Sending) -> str | None:
        """The batch the provider made of a send an interrupted run began, if it made one."""
        return batch_api.call(
            lambda: batch_api.find(self.client, sent),
            self.settings,
            self.stop_token,
            "looking for a batch an interrupted run may have made (GET /batches)",
        )

    def wait(self, seconds: float, tick: Callable[[int, int], None]) -> list[Status]:
        """Polls the batches this run waits for until all finished or `seconds` passed; the
        ones still running (none: all finished). `tick` gets the requests answered and their
        total at each look."""
        deadline = time.monotonic() + seconds
        while True:
            with self._lock:
                ids = sorted(self._waiting)
            states = [self._retrieve(i) for i in ids]
            # A batch being validated may count no requests yet: this run knows how many.
            tick(
                sum(s.done for s in states),
                sum(s.total or self._sizes.get(s.id, 0) for s in states),
            )
            running = [s for s in states if s.status not in batch_api.FINISHED]
            left = deadline - time.monotonic()
            if not running or left <= 0:
                with self._lock:
                    self._waiting = {s.id for s in running}
                    self._running = {s.id: s for s in running}
                return running
            retry.pause(min(self.settings.batch_poll, left), self.stop_token)

    def _retrieve(self, batch_id: str) -> Status:
        return batch_api.retrieve(self.client, batch_id, self.settings, self.stop_token)
