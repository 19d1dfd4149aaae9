"""The provider's Batch API through the openai SDK: one JSONL file of requests uploaded to
/v1/files, one batch of it in /v1/batches, its state, and the answers its output and error
files hold; every call under the one retry policy, every refusal one line."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
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
    settings: Settings,
    stop: retry.StopToken | None,
) -> str:
    """Uploads the requests as one JSONL file and makes a batch of it; the batch's id."""
    data = jsonl(requests)
    upload = _call(
        lambda: client.files.create(
            file=("prhub-batch.jsonl", data, "application/jsonl"), purpose="batch"
        ),
        settings,
        stop,
        "uploading the batch's requests (POST /files)",
    )
    file_id = getattr(upload, "id", None)
    if not isinstance(file_id, str) or not file_id:
        raise LLMUnavailable(f"{_where(settings)} answered the upload without a file id; {KEPT}")
    batch = _call(
        lambda: client.batches.create(
            input_file_id=file_id, endpoint=ENDPOINT, completion_window=WINDOW
        ),
        settings,
        stop,
        "creating the batch (POST /batches)",
    )
    batch_id = getattr(batch, "id", None)
    if not isinstance(batch, Batch) or not isinstance(batch_id, str) or not batch_id:
        raise LLMUnavailable(f"{_where(settings)} answered POST /batches with no batch; {KEPT}")
    log.info("submitted %d requests in batch %s", len(requests), batch_id)
    return batch_id


def retrieve(
    client: openai.OpenAI, batch_id: str, settings: Settings, stop: retry.StopToken | None
) -> Status:
    """The batch's state; "missing" when the endpoint no longer knows it."""
    try:
        batch = _call(
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


def answers(
    client: openai.OpenAI, status: Status, settings: Settings, stop: retry.StopToken | None
) -> dict[str, Answer]:
    """The answers a finished batch's output and error files hold, by request key.

    Requests that ran out of time, were cancelled, or met a transient error (429, 5xx) are
    left out, as are lines prhub cannot read: they are sent again, never taken as answered.
    """
    found: dict[str, Answer] = {}
    for kind, file_id in (("output", status.output_file), ("error", status.error_file)):
        if not file_id:
            continue
        content = _call(
            lambda file_id=file_id: client.files.content(file_id),  # type: ignore[misc]
            settings,
            stop,
            f"reading batch {status.id}'s {kind} file (GET /files/{file_id}/content)",
        )
        text = content.content.decode("utf-8", "replace")
        unread = _read_lines(text, found)
        if unread:
            log.warning(
                "batch %s: %d lines of its %s file are not answers prhub can read (no JSON, "
                "or no custom_id or status): their requests are sent again",
                status.id,
                unread,
                kind,
            )
    return found


def _read_lines(text: str, found: dict[str, Answer]) -> int:
    """Adds the answers of one file's lines to `found`; how many lines could not be read."""
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
        response = item.get("response")
        if item.get("error") or not isinstance(response, dict):
            continue  # expired, cancelled, or failed before an answer: sent again
        code = response.get("status_code")
        if not isinstance(code, int) or isinstance(code, bool):
            unread += 1
            continue
        if code in (408, 429) or code >= 500:
            continue  # what a retry online would cure: sent again
        found.setdefault(key, Answer(code, response.get("body")))
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


def _call(
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
