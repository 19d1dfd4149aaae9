"""OpenAI's Batch API on the LLM stand-in: POST /v1/files (a multipart upload), GET /v1/files
(a list), GET /v1/files/{id}/content, POST /v1/batches (with its metadata), GET /v1/batches (a
list, newest first, paged with `after`, `limit` and `has_more`), GET /v1/batches/{id}. Each
batch's lines are answered as POST /v1/chat/completions answers them online, so a run in batch
mode reads the same answers; a batch may stay running for some looks, run out of time for some
requests, or write lines no client can read; an upload or a batch may be made and its answer
lost (a 500, or none within the client's timeout)."""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import defaultdict, deque
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from tests.standins.llm import LLMStandIn, error
from tests.standins.server import Answer

ENDPOINT = "/v1/chat/completions"
_ids = itertools.count(1)
BAD = "invalid_request_error"


def multipart(request: dict[str, Any]) -> dict[str, tuple[str | None, bytes]]:
    """A multipart/form-data body's fields: name -> (filename, content)."""
    kind = request["headers"].get("content-type", "")
    head = f"Content-Type: {kind}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + request["raw"].encode())
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        data = part.get_payload(decode=True)
        fields[str(name)] = (part.get_filename(), data if isinstance(data, bytes) else b"")
    return fields


class BatchStandIn(LLMStandIn):
    """The LLM stand-in with OpenAI's files and batches endpoints.

    `polls`: looks at a batch that find it in progress before it is done. `expire`: requests
    left unanswered when the next batches run out of their window; `fail`: requests the next
    batches answer with a server error (both used up as batches take them). `garbage` and
    `nameless`: lines of the next output file that are no JSON, or lack their custom_id;
    `doubled`: requests of the next output file answered on two lines. `refuse`: requests the
    next batches answer with a 400 refusal.

    `lose("POST /v1/batches", "500", "hold", ...)`: the next such requests are done, then their
    answers lost: a 500, or held back ("hold") until `held_for` seconds passed or the stand-in
    stops; `acted` is set each time one is done. `answer_echo`: a batch's error lines repeat
    the request's Authorization header, as some gateways' do.
    """

    def __init__(self, *, polls: int = 0, expire: int = 0, fail: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.polls = polls
        self.expire = expire
        self.fail = fail
        self.garbage = 0
        self.nameless = 0
        self.doubled = 0
        self.refuse = 0
        self.answer_echo = False
        self.held_for = 30.0
        self.acted = threading.Event()
        self._losses: dict[str, deque[str]] = defaultdict(deque)
        self.names: dict[str, str] = {}  # each file's name, as uploaded
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.looks: dict[str, int] = {}
        self.inputs: dict[str, list[dict[str, Any]]] = {}  # each batch's request lines
        self.answered: list[dict[str, Any]] = []  # every output line written, usage included
        self.online_usage: list[dict[str, Any]] = []  # of each chat completion answered online

    def script_path(self, pattern: str, responses: list[Any]) -> None:
        """Answer the next requests whose path matches `pattern` with `responses`."""
        self._queue(pattern, responses)

    def lose(self, request: str, *kinds: str) -> None:
        """Do the next `request`s ("POST /v1/batches", "POST /v1/files"), then lose each answer
        as `kinds` says: "500" or "hold"."""
        with self._lock:
            self._losses[request].extend(kinds)

    def _lost(self, request: dict[str, Any], answer: Answer) -> Answer:
        """`answer`, or its loss when one is scripted for the request, once it is done."""
        with self._lock:
            losses = self._losses[f"{request['method']} {request['path']}"]
            kind = losses.popleft() if losses and answer[0] == 200 else None
        if kind is None:
            return answer
        self.acted.set()
        if kind == "hold":  # no answer within any timeout a test gives its client
            self._stopping.wait(self.held_for)
            return answer
        return 500, {}, {"error": {"message": "The server had an error", "type": "server_error"}}

    def answer(self, request: dict[str, Any]) -> Answer:
        path, method = request["path"], request["method"]
        if not path.startswith(("/v1/files", "/v1/batches")):
            status, headers, body = super().answer(request)
            if status == 200 and isinstance(body, dict) and "usage" in body:
                self.online_usage.append(body["usage"])
            return status, headers, body
        if (refused := self.unauthorized(request)) is not None:
            return refused
        if (method, path) == ("POST", "/v1/files"):
            return self._lost(request, self._upload(request))
        if (method, path) == ("GET", "/v1/files"):
            return self._list(self._files(request), request)
        if (method, path) == ("GET", "/v1/batches"):
            return self._list(list(reversed(self.batches.values())), request)
        if method == "GET" and (found := re.fullmatch(r"/v1/files/([^/]+)/content", path)):
            if found.group(1) not in self.files:
                return error(404, f"No such File object: {found.group(1)}", BAD, "id", None)
            return 200, {"Content-Type": "application/octet-stream"}, self.files[found.group(1)]
        if (method, path) == ("POST", "/v1/batches"):
            return self._lost(request, self._create(request["body"]))
        if method == "GET" and (found := re.fullmatch(r"/v1/batches/([^/]+)", path)):
            return self._look(found.group(1), request)
        return error(404, f"Invalid URL ({method} {path})", BAD, None, None)

    def _upload(self, request: dict[str, Any]) -> Answer:
        fields = multipart(request)
        if fields.get("purpose", (None, b""))[1] != b"batch" or "file" not in fields:
            return error(400, "'purpose' must be 'batch' and a file given", BAD, "purpose", None)
        name, data = fields["file"]
        file_id = f"file-standin{next(_ids):06d}"
        self.files[file_id] = data
        self.names[file_id] = name or "upload.jsonl"
        return 200, {}, self._file(file_id, self.names[file_id], data)

    def _file(self, file_id: str, name: str, data: bytes, purpose: str = "batch") -> dict:
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }

    def _files(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """The uploaded files as GET /v1/files lists them: of the purpose asked, in its order."""
        purpose = request["query"].get("purpose", [None])[0]
        listed = [self._file(i, name, self.files[i]) for i, name in self.names.items()]
        listed = [f for f in listed if purpose in (None, f["purpose"])]
        return listed if request["query"].get("order", ["desc"])[0] == "asc" else listed[::-1]

    @staticmethod
    def _list(items: list[dict[str, Any]], request: dict[str, Any]) -> Answer:
        """One page of a list, as OpenAI pages one: `limit` items after the id `after`."""
        query = request["query"]
        limit = int(query.get("limit", ["20"])[0])
        after = query.get("after", [None])[0]
        ids = [item["id"] for item in items]
        start = ids.index(after) + 1 if after in ids else 0
        page = items[start : start + limit]
        return 200, {}, {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": start + limit < len(items),
        }  # fmt: skip

    def _create(self, body: Any) -> Answer:
        if not isinstance(body, dict) or body.get("input_file_id") not in self.files:
            return error(400, "No such input file", BAD, "input_file_id", None)
        if body.get("endpoint") != ENDPOINT or body.get("completion_window") != "24h":
            return error(400, "endpoint or completion_window not supported", BAD, None, None)
        metadata = body.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= 16
            and all(isinstance(k, str) and len(k) <= 64 for k in metadata)
            and all(isinstance(v, str) and len(v) <= 512 for v in metadata.values())
        ):
            return error(400, "Invalid 'metadata': at most 16 string pairs", BAD, "metadata", None)
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].splitlines() if x]
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids) or any(
            line.get("method") != "POST" or line.get("url") != ENDPOINT for line in lines
        ):
            return error(400, "custom_id must be unique, each line a POST to it", BAD, None, None)
        batch_id = f"batch_standin{next(_ids):06d}"
        self.inputs[batch_id] = lines
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": ENDPOINT,
            "errors": None,
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "in_progress_at": None,
            "expires_at": int(time.time()) + 86_400,
            "finalizing_at": None,
            "completed_at": None,
            "failed_at": None,
            "expired_at": None,
            "cancelling_at": None,
            "cancelled_at": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": metadata,
        }
        self.looks[batch_id] = 0
        return 200, {}, self.batches[batch_id]

    def _look(self, batch_id: str, request: dict[str, Any]) -> Answer:
        batch = self.batches.get(batch_id)
        if batch is None:
            return error(404, f"No batch found with id '{batch_id}'.", BAD, None, None)
        self.looks[batch_id] += 1
        if batch["status"] in ("validating", "in_progress"):
            if self.looks[batch_id] <= self.polls:
                batch.update(status="in_progress", in_progress_at=int(time.time()))
            else:
                self._run(batch, request)
        return 200, {}, batch

    def _run(self, batch: dict[str, Any], request: dict[str, Any]) -> None:
        """Answers every line as the online endpoint would, or lets it expire."""
        lines = self.inputs[batch["id"]]
        expired, self.expire = min(self.expire, len(lines)), max(0, self.expire - len(lines))
        out: list[str] = ["{not json"] * self.garbage
        errors: list[str] = []
        for number, line in enumerate(lines):
            if number < expired:
                message = "This request could not be executed before the completion window expired."
                item = {"code": "batch_expired", "message": message}
                errors.append(json.dumps({"id": f"batch_req_{next(_ids):06d}",
                                          "custom_id": line["custom_id"], "response": None,
                                          "error": item}))  # fmt: skip
                continue
            online = {**request, "method": "POST", "path": ENDPOINT, "body": line["body"]}
            status, _, body = super().answer(online)
            if self.fail:
                self.fail -= 1
                status, _, body = self.fault_answer("500")
            elif self.refuse:
                self.refuse -= 1
                message = "Your request was rejected as a result of our safety system."
                status, _, body = error(400, message, BAD, None, "content_policy_violation")
            if status != 200 and self.answer_echo:
                header = request["headers"].get("authorization")
                said = f"{body['error']['message']} (Authorization: {header})"
                body = {"error": {**body["error"], "message": said}}
            written = {
                "id": f"batch_req_{next(_ids):06d}",
                "custom_id": line["custom_id"],
                "response": {
                    "status_code": status,
                    "request_id": f"req_standin{next(_ids):06d}",
                    "body": body,
                },
                "error": None,
            }
            if status == 200:
                self.answered.append(written)
            if status == 200 and len(out) - self.garbage < self.nameless:
                del written["custom_id"]
            (out if status == 200 else errors).append(json.dumps(written, ensure_ascii=False))
            if status == 200 and self.doubled and out[-1].startswith('{"id"'):
                self.doubled -= 1
                out.append(json.dumps({**written, "id": f"batch_req_{next(_ids):06d}"}))
        self.garbage = self.nameless = self.doubled = 0
        now = int(time.time())
        failed = len(errors)
        for kind, text in (("output_file_id", out), ("error_file_id", errors)):
            if text:
                file_id = f"file-standin{next(_ids):06d}"
                self.files[file_id] = "".join(f"{t}\n" for t in text).encode()
                batch[kind] = file_id
        batch["request_counts"] = {"total": len(lines), "completed": len(lines) - failed,
                                   "failed": failed}  # fmt: skip
        done = "expired" if expired else "completed"
        batch.update(status=done, finalizing_at=now, **{f"{done}_at": now})
