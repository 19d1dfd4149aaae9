"""The provider's Batch API through the openai SDK: one JSONL file of requests uploaded to
/v1/files, one batch of it in /v1/batches, its state, and the answers its output and error
files hold; every call under the one retry policy, every refusal one line.

A request that makes something (an upload, a batch) is paid for: after a lost answer it is
made again only once a look at what the provider holds (GET /files, GET /batches) finds
nothing made of the same requests."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple, TypeVar

import httpx2
import openai
from openai.types import Batch

from prhub import retry
from prhub.config import Settings
from prhub.defaults import OPENAI_URL
from prhub.errors import LLMRequestError, LLMUnavailable
from prhub.llm import llm_http
from prhub.logmask import shown_url

T = TypeVar("T")
log = logging.getLogger("prhub")

ENDPOINT: Final = "/v1/chat/completions"
WINDOW: Final = "24h"  # the one completion window OpenAI, Azure OpenAI and DashScope all take
# States after which a batch changes no more; "missing" is prhub's, for one the endpoint lost.
FINISHED = frozenset({"completed", "expired", "failed", "cancelled", "missing"})
KEPT = "what was collected is kept"
IDENTITY: Final = "prhub_requests"  # the metadata key of a batch's request-set hash
RUN: Final = "prhub_run"  # the metadata key of the run that made it
# How much older than a send's start a listed batch or file may be and still be that send's:
# the provider's clock and this machine's may differ. Lists come newest first.
SKEW: Final = 3600.0
PAGE: Final = 100  # items a page of a list asks for


class Answer(NamedTuple):
    """One request's answer as a batch returned it: the status and JSON body it would have
    had online."""

    status: int
    body: Any


class Status(NamedTuple):
    """A batch as the endpoint last showed it."""

    id: str
    status: str
    done: int  # requests answered, well or not
    total: int
    output_file: str | None = None
    error_file: str | None = None
    problem: str = ""  # why the endpoint failed the batch, when it did


class Sending(NamedTuple):
    """A batch being sent: its requests' identity, the run sending it, when it started (Unix
    time), and the file its requests were uploaded as, once the upload answered."""

    ident: str
    run: str
    since: float
    file_id: str | None = None


def identity(keys: Iterator[str] | list[str] | dict[str, Any]) -> str:
    """The hash of a set of request keys: the same requests are one batch, whoever sends them."""
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:32]


def file_name(ident: str) -> str:
    """The name a batch's input file is uploaded under, by which a lost upload is found."""
    return f"prhub-{ident}.jsonl"


def jsonl(requests: dict[str, dict[str, Any]]) -> bytes:
    """The batch's input file: one line a request, named by its key."""
    lines = (
        json.dumps(
            {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body},
            ensure_ascii=False,
        )
        for key, body in requests.items()
    )
    return "".join(f"{line}\n" for line in lines).encode()


def submit(
    client: openai.OpenAI,
    requests: dict[str, dict[str, Any]],
    sending: Sending,
    settings: Settings,
    stop: retry.StopToken | None,
    uploaded: Callable[[str], None],
    *,
    maybe_made: bool = False,
) -> str:
    """Uploads the requests as one JSONL file and makes a batch of it, each at most once; the
    batch's id. `uploaded` keeps the file's id as soon as it is known; `maybe_made` says an
    earlier run may have uploaded the file already (it is looked for first)."""
    data = jsonl(requests)
    name = file_name(sending.ident)
    file_id = sending.file_id
    if file_id is None:
        upload = call(
            _once(
                lambda: client.files.create(
                    file=(name, data, "application/jsonl"), purpose="batch"
                ),
                lambda: find_file(client, sending, len(data)),
                maybe_made,
            ),
            settings,
            stop,
            "uploading the batch's requests (POST /files)",
        )
        file_id = upload.id if isinstance(upload, Found) else getattr(upload, "id", None)
        if not isinstance(file_id, str) or not file_id:
            raise LLMUnavailable(
                f"{_where(settings)} answered the upload without a file id; {KEPT}"
            )
        uploaded(file_id)
        sending = sending._replace(file_id=file_id)
    metadata = {IDENTITY: sending.ident, RUN: sending.run}
    batch = call(
        _once(
            lambda: client.batches.create(
                input_file_id=str(file_id),
                endpoint=ENDPOINT,
                completion_window=WINDOW,
                metadata=metadata,
            ),
            lambda: find(client, sending),
            False,
        ),
        settings,
        stop,
        "creating the batch (POST /batches)",
    )
    if isinstance(batch, Found):
        log.warning("batch %s was made by an attempt whose answer was lost: it is kept", batch.id)
        return batch.id
    batch_id = getattr(batch, "id", None)
    if not isinstance(batch, Batch) or not isinstance(batch_id, str) or not batch_id:
        raise LLMUnavailable(f"{_where(settings)} answered POST /batches with no batch; {KEPT}")
    log.info("submitted %d requests in batch %s", len(requests), batch_id)
    return batch_id


class Found(NamedTuple):
    """What an earlier attempt made, found by a look at what the provider holds."""

    id: str


def _once(
    make: Callable[[], T], look: Callable[[], str | None], looked: bool
) -> Callable[[], T | Found]:
    """An attempt at `make` that, once an attempt may have made it (`looked`, or any attempt
    before this one), first looks for what was made: its id, else a new one."""
    tried = [looked]

    def attempt() -> T | Found:
        if tried[0] and (found := look()) is not None:
            return Found(found)
        tried[0] = True
        return make()

    return attempt


def find(client: openai.OpenAI, sending: Sending) -> str | None:
    """The id of the batch made of `sending`'s requests (its metadata's identity, or its input
    file), listed by GET /batches newest first; None when none was made."""
    for batch in _listed(lambda after: client.batches.list(limit=PAGE, after=after), "batches"):
        told = batch.metadata or {}
        if told.get(IDENTITY) == sending.ident or (
            sending.file_id and batch.input_file_id == sending.file_id
        ):
            return str(batch.id)
        if batch.created_at < sending.since - SKEW:
            return None
    return None


def find_file(client: openai.OpenAI, sending: Sending, size: int) -> str | None:
    """The id of the file `sending`'s requests were uploaded as, by its name and size."""
    name = file_name(sending.ident)
    pages = _listed(
        lambda after: client.files.list(purpose="batch", limit=PAGE, order="desc", after=after),
        "files",
    )
    for item in pages:
        if item.filename == name and item.bytes == size and item.status != "error":
            return str(item.id)
        if item.created_at < sending.since - SKEW:
            return None
    return None


def _listed(page: Callable[[str | openai.Omit], Any], what: str) -> Iterator[Any]:
    """Every item of a list endpoint, page after page (`after` the last id seen)."""
    after: str | openai.Omit = openai.omit
    while True:
        try:
            got = page(after)
        except openai.APIStatusError as exc:
            if exc.status_code in (404, 405, 501):  # no list here: whether it was made is unknown
                raise LLMRequestError(
                    f"the endpoint cannot list its {what} (GET /{what} answered "
                    f"{exc.status_code}), so prhub cannot tell whether an earlier attempt made "
                    f"the batch: look in the provider's console, then rerun with --refresh to "
                    f"send it anew"
                ) from None
            raise
        items = list(got.data or [])
        yield from items
        if not items or not getattr(got, "has_more", False):
            return
        after = str(items[-1].id)


def retrieve(
    client: openai.OpenAI, batch_id: str, settings: Settings, stop: retry.StopToken | None
) -> Status:
    """The batch's state; "missing" when the endpoint no longer knows it."""
    try:
        batch = call(
            lambda: client.batches.retrieve(batch_id),
            settings,
            stop,
            f"reading batch {batch_id} (GET /batches/{batch_id})",
            missing_ok=True,
        )
    except _Missing:
        where = _where(settings)
        log.warning("batch %s is unknown to %s: its requests are sent again", batch_id, where)
        return Status(batch_id, "missing", 0, 0)
    if not isinstance(batch, Batch) or not isinstance(batch.status, str):
        raise LLMUnavailable(
            f"{_where(settings)} answered GET /batches/{batch_id} with no batch; rerun later"
        )
    counts = batch.request_counts
    done = (counts.completed or 0) + (counts.failed or 0) if counts else 0
    errors = batch.errors.data if batch.errors and batch.errors.data else []
    problem = "; ".join(str(e.message or e.code) for e in errors[:3])
    return Status(
        batch_id,
        batch.status,
        done,
        counts.total if counts else 0,
        batch.output_file_id,
        batch.error_file_id,
        problem,
    )


class Collected(NamedTuple):
    """What a finished batch's files hold: the answers by request key, and the keys more than
    one line answered (none of those lines is taken: which is the answer cannot be told)."""

    found: dict[str, Answer]
    doubled: dict[str, int]


def answers(
    client: openai.OpenAI, status: Status, settings: Settings, stop: retry.StopToken | None
) -> Collected:
    """The answers a finished batch's output and error files hold, by request key.

    Requests that ran out of time, were cancelled, or met a transient error (429, 5xx) are
    left out, as are lines prhub cannot read: they are sent again, never taken as answered.
    """
    found: dict[str, Answer] = {}
    lines: dict[str, int] = {}  # lines naming each request, in both files
    for kind, file_id in (("output", status.output_file), ("error", status.error_file)):
        if not file_id:
            continue
        content = call(
            lambda file_id=file_id: client.files.content(file_id),  # type: ignore[misc]
            settings,
            stop,
            f"reading batch {status.id}'s {kind} file (GET /files/{file_id}/content)",
        )
        text = content.content.decode("utf-8", "replace")
        unread = _read_lines(text, found, lines)
        if unread:
            log.warning(
                "batch %s: %d lines of its %s file are not answers prhub can read (no JSON, "
                "or no custom_id or status): their requests are sent again",
                status.id,
                unread,
                kind,
            )
    doubled = {key: n for key, n in lines.items() if n > 1}
    return Collected({k: a for k, a in found.items() if k not in doubled}, doubled)


def _read_lines(text: str, found: dict[str, Answer], lines: dict[str, int]) -> int:
    """Adds the answers of one file's lines to `found`, counting the lines of each request in
    `lines`; how many lines could not be read."""
    unread = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            unread += 1
            continue
        key = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(key, str):
            unread += 1
            continue
        lines[key] = lines.get(key, 0) + 1
        response = item.get("response")
        if item.get("error") or not isinstance(response, dict):
            continue  # expired, cancelled, or failed before an answer: sent again
        code = response.get("status_code")
        if not isinstance(code, int) or isinstance(code, bool):
            unread += 1
            continue
        if code in (408, 429) or code >= 500:
            continue  # what a retry online would cure: sent again
        found[key] = Answer(code, response.get("body"))
    return unread


def status_error(found: Answer, base_url: str | None) -> openai.APIStatusError:
    """The error the SDK would have raised for this answer online."""
    url = f"{(base_url or OPENAI_URL).rstrip('/')}/chat/completions"
    body = found.body if isinstance(found.body, dict) else {"error": {"message": str(found.body)}}
    response = httpx2.Response(found.status, request=httpx2.Request("POST", url), json=body)
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return openai.APIStatusError(
        f"Error code: {found.status} - {message or body}", response=response, body=body
    )


class _Missing(Exception):
    """The endpoint answered 404 for a batch it once made."""


def call(
    fn: Callable[[], T],
    settings: Settings,
    stop: retry.StopToken | None,
    what: str,
    *,
    missing_ok: bool = False,
) -> T:
    """One call of the Batch API under the retry policy; its refusal as one prhub error."""
    try:
        return retry.call(fn, settings, llm_http.retry_hint, what=what, stop=stop)
    except openai.APIStatusError as exc:
        if missing_ok and exc.status_code == 404:
            raise _Missing() from None
        raise _refused(exc, what, settings) from None
    except openai.APIConnectionError:  # timeouts included
        raise LLMUnavailable(
            f"{what}: {_where(settings)} is unreachable or did not answer in time; rerun "
            f"later ({KEPT})"
        ) from None


def _refused(exc: openai.APIStatusError, what: str, settings: Settings) -> Exception:
    code, detail = exc.status_code, llm_http.error_message(exc)[:200]
    if code in (401, 403):
        return LLMRequestError(
            f"{what}: the endpoint rejected the API key ({code}): check OPENAI_API_KEY"
        )
    if code in (404, 405, 501):
        return LLMRequestError(
            f"{what}: {_where(settings)} answered {code} ({detail}): it has no OpenAI Batch API "
            "(/files and /batches); run without --batch"
        )
    if code in (408, 429) or code >= 500:
        return LLMUnavailable(
            f"{what}: the endpoint kept failing ({code}: {detail}); rerun later ({KEPT})"
        )
    return LLMRequestError(f"{what}: the endpoint refused it ({code}: {detail})")


def _where(settings: Settings) -> str:
    return shown_url(settings.openai_base_url) or OPENAI_URL
