"""The HTTP server under every stand-in: records requests, answers them, misbehaves on cue."""

from __future__ import annotations

import json
import random
import re
import socket
import struct
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# A body of bytes is sent as is: for answers that are not JSON, or not whole.
Answer = tuple[int, dict[str, str], Any]


class StandIn:
    """An HTTP server in a daemon thread that records requests and can be scripted to misbehave.

    Scripted items every stand-in takes: "reset" (the connection reset, no answer), ("sleep", s)
    (the normal answer after s seconds), ("trickle", s) and ("trickle", s, n) (the normal answer,
    its body sent n bytes at a time, default 1, every s seconds), and (status, headers, body);
    a body of bytes is sent as is, and headers {"Transfer-Encoding": "chunked"} send it in chunks
    without a Content-Length. A function of the request is called for its item.
    """

    prefix = ""  # path of the API root, part of .url
    fault_kinds: tuple[str, ...] = ()

    def __init__(
        self, *, port: int = 0, fault_rate: float = 0.0, seed: int = 0, trickle: float = 0.0
    ) -> None:
        self.port = port
        self.url = ""
        self.fault_rate = fault_rate
        # Seconds between the bytes of every answer's body: a server that never stalls long
        # enough for a read to time out, yet never finishes.
        self.trickle = trickle
        self.requests: list[dict[str, Any]] = []
        self.faults: list[tuple[str, str]] = []
        # Exceptions raised while answering, i.e. stand-in bugs; the fixtures assert it is empty.
        self.errors: list[str] = []
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._scripts: list[tuple[re.Pattern[str], deque[Any]]] = []
        self._server: ThreadingHTTPServer | None = None
        self._stopping = threading.Event()  # ends trickles, so stop() need not wait for them
        # A file that gets one JSON line a request, for a stand-in run in its own process.
        self.log: Any = None
        # Requests being answered now, and the most there ever were at once.
        self.in_flight = 0
        self.most_in_flight = 0

    def start(self) -> StandIn:
        """Bind 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"standin": self})
        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{self.prefix}"
        # A short poll interval keeps stop() quick; the default makes it wait up to 0.5 s.
        serve = self._server.serve_forever
        threading.Thread(target=serve, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def paths(self) -> Counter[str]:
        """How many requests each path got (query strings aside)."""
        with self._lock:
            return Counter(r["path"] for r in self.requests)

    def _queue(self, pattern: str, responses: list[Any]) -> None:
        with self._lock:
            self._scripts.append((re.compile(pattern), deque(responses)))

    def _scripted(self, path: str) -> Any:
        with self._lock:
            for pattern, queue in self._scripts:
                if queue and pattern.search(path):
                    return queue.popleft()
        return None

    def _fault(self, path: str) -> str | None:
        with self._lock:
            if not self.fault_rate or self._random.random() >= self.fault_rate:
                return None
            kind = self._random.choice(self.fault_kinds)
            self.faults.append((path, kind))
            return kind

    def fault_answer(self, kind: str) -> Answer:
        """The answer for an injected fault of `kind`."""
        raise NotImplementedError

    def scripted_answer(self, item: Any, request: dict[str, Any]) -> Answer:
        """The answer for one scripted item other than "reset", ("sleep", s), ("trickle", ...)."""
        status, headers, body = item
        return status, headers, body

    def answer(self, request: dict[str, Any]) -> Answer:
        """The normal answer to `request`."""
        raise NotImplementedError

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        """Headers sent with every answer; an answer's own headers win."""
        return {"Content-Type": "application/json"}

    def render(self, body: Any) -> Any:
        """The body as sent."""
        return body


class _Handler(BaseHTTPRequestHandler):
    standin: StandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionResetError:
            pass  # a client dropped a kept-alive connection, as clients may; no one to answer

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def _handle(self) -> None:
        standin = self.standin
        with standin._lock:
            standin.in_flight += 1
            standin.most_in_flight = max(standin.most_in_flight, standin.in_flight)
            now = standin.in_flight
        try:
            self._answer(now)
        finally:
            with standin._lock:
                standin.in_flight -= 1

    def _answer(self, in_flight: int) -> None:
        standin = self.standin
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = {
            "method": self.command,
            "path": parts.path,
            "query": parse_qs(parts.query, keep_blank_values=True),
            "headers": {name.lower(): value for name, value in self.headers.items()},
            "body": body,
            "raw": raw.decode("utf-8", "replace"),  # the body as sent: an upload is no JSON
        }
        with standin._lock:
            standin.requests.append(request)
        item = standin._scripted(parts.path)
        if callable(item):  # an answer made from the request: one that echoes it
            item = item(request)
        pace, piece = standin.trickle, 1
        if item is not None and item[0] == "sleep":
            time.sleep(item[1])
            item = None
        elif item is not None and item[0] == "trickle":
            pace, piece = item[1], (*item[2:], 1)[0]
            item = None
        kind = None if item is not None else standin._fault(parts.path)
        if standin.log is not None:
            # With the requests open as this one came, so a bench can tell the most at once.
            line = {"method": self.command, "path": parts.path, "in_flight": in_flight}
            with standin._lock:  # with the injected fault's kind, for a bench to count
                standin.log.write(json.dumps({**line, **({"fault": kind} if kind else {})}) + "\n")
                standin.log.flush()
        if item == "reset":
            return self._reset()
        if kind == "reset":
            return self._reset()
        try:
            if item is not None:
                answer = standin.scripted_answer(item, request)
            else:
                answer = standin.fault_answer(kind) if kind else standin.answer(request)
        except Exception as exc:
            # A stand-in bug must fail the test, not pass for a transient server error.
            with standin._lock:
                standin.errors.append(repr(exc))
            answer = 500, {}, {"message": f"stand-in error: {exc!r}"}
        status, extra, payload = answer
        if isinstance(payload, bytes):
            data = payload
        else:
            rendered = standin.render(payload)
            try:
                data = json.dumps(rendered, ensure_ascii=False).encode()
            except UnicodeEncodeError:  # lone surrogates: valid JSON only as \u escapes
                data = json.dumps(rendered).encode()
        headers = {**standin.headers(request), **extra}
        chunked = headers.get("Transfer-Encoding") == "chunked"
        if not chunked:
            # A scripted Content-Length may lie about the body; closing after it keeps the lie
            # to this one answer instead of leaving stray bytes for the next request to read.
            headers.setdefault("Content-Length", str(len(data)))
            if headers["Content-Length"] != str(len(data)):
                self.close_connection = True
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self._write(data, pace, piece if pace else 2**16, chunked)
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up first (a timeout test); there is no one left to answer.
            self.close_connection = True

    def _write(self, data: bytes, pace: float, piece: int, chunked: bool) -> None:
        """The body, `piece` bytes at a time with `pace` seconds before each, maybe chunked."""
        for start in range(0, len(data), piece):
            if pace and self.standin._stopping.wait(pace):
                self.close_connection = True  # the stand-in stops: the rest never comes
                return
            part = data[start : start + piece]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _reset(self) -> None:
        # SO_LINGER 0 makes close() send RST: the client sees a reset, not a clean EOF.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.rfile.close()
        self.connection.close()
        self.close_connection = True
