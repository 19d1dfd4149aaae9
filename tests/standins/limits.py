"""GitHub's rate limits and conditional requests, as the GitHub stand-in answers them."""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from tests.standins.server import Answer

DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
PRIMARY = (
    "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please "
    "include the request ID 0000:STANDIN and timestamp."
)
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID 0000:STANDIN."
)


def bucket_of(path: str) -> str | None:
    """The primary limit a request spends; None for GET /rate_limit, which spends none."""
    if path == "/rate_limit":
        return None
    if path == "/graphql":
        return "graphql"
    return "search" if path.startswith("/search/") else "core"


def secondary_limit(status: int = 403, retry_after: int | None = None) -> Answer:
    """GitHub's answer past a secondary limit, with its Retry-After when given one."""
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    url = f"{DOCS}#about-secondary-rate-limits"
    return status, headers, {"message": SECONDARY, "documentation_url": url, "status": str(status)}


class Limits:
    """GitHub's primary limits (core, search, graphql) counted on `clock`: a window starts at
    the first request after the last one ended and lasts its seconds; past its limit a request
    is refused with `status` (GitHub sends 403 or 429). A 304 to an authorized request spends
    nothing.

    Each request is marked with what it cost (`request["charge"]`): its bucket, "free"
    (a 304, GET /rate_limit) or "refused"."""

    def __init__(
        self,
        clock: Callable[[], float],
        core: tuple[int, float] = (5000, 3600.0),
        search: tuple[int, float] = (30, 60.0),
        status: int = 403,
    ) -> None:
        self.clock = clock
        self.status = status
        self._lock = threading.Lock()
        # bucket -> [limit, window seconds, used, reset epoch]
        self._buckets: dict[str, list[Any]] = {
            "core": [core[0], core[1], 0, 0],
            "search": [search[0], search[1], 0, 0],
            "graphql": [5000, 3600.0, 0, 0],
        }

    def _bucket(self, name: str) -> list[Any]:
        """The bucket, its window started again once the last one ended (under the lock)."""
        bucket = self._buckets[name]
        now = self.clock()
        if now >= bucket[3]:
            bucket[2], bucket[3] = 0, math.ceil(now + bucket[1])  # GitHub resets on a second
        return bucket

    def charge(self, request: dict[str, Any], refuse: bool = True) -> Answer | None:
        """Spends the request's bucket; GitHub's refusal when it is spent (and `refuse`)."""
        name = bucket_of(request["path"])
        if name is None:
            request["charge"] = "free"
            return None
        with self._lock:
            bucket = self._bucket(name)
            if refuse and bucket[2] >= bucket[0]:
                request["charge"] = "refused"
                return self._refusal(name)
            bucket[2] += 1
        request["charge"] = name
        return None

    def settle(self, request: dict[str, Any], answer: Answer) -> Answer:
        """Gives back what a 304 to an authorized request spent, as GitHub does."""
        name = bucket_of(request["path"])
        authorized = bool(request["headers"].get("authorization"))
        if answer[0] == 304 and authorized and name and request.get("charge") == name:
            with self._lock:
                self._bucket(name)[2] -= 1
            request["charge"] = "free"
        return answer

    def _refusal(self, name: str) -> Answer:
        body = {"message": PRIMARY, "documentation_url": DOCS, "status": str(self.status)}
        return self.status, {}, body

    def headers(self, path: str) -> dict[str, str]:
        """The X-RateLimit-* headers of an answer to `path`: its bucket as it is now."""
        name = bucket_of(path) or "core"
        limit, used, reset = self.state(name)
        return {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(limit - used, 0)),
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Resource": name,
        }

    def state(self, name: str) -> tuple[int, int, int]:
        """Limit, used and reset time of bucket `name`."""
        with self._lock:
            bucket = self._bucket(name)
            return bucket[0], bucket[2], bucket[3]

    def overview(self) -> dict[str, Any]:
        """GET /rate_limit's body."""
        resources = {}
        for name in self._buckets:
            limit, used, reset = self.state(name)
            resources[name] = {
                "limit": limit,
                "used": used,
                "remaining": max(limit - used, 0),
                "reset": reset,
            }
        return {"resources": resources, "rate": resources["core"]}


def charged(requests: Iterable[dict[str, Any]]) -> Counter[str]:
    """How many requests cost what: "core", "search", "free" or "refused"."""
    return Counter(str(r.get("charge", "")) for r in requests)


def revalidated(request: dict[str, Any], answer: Answer) -> Answer:
    """A 200 to a GET with its ETag (and Last-Modified, for what has an updated_at); a 304
    without a body when the request's If-None-Match (else If-Modified-Since) says the client
    holds it already."""
    status, headers, body = answer
    if request["method"] != "GET" or status != 200 or isinstance(body, bytes):
        return answer
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]
    tag = f'W/"{digest}"'
    told = {"ETag": tag}
    updated = body.get("updated_at") if isinstance(body, dict) else None
    when = datetime.fromisoformat(updated.replace("Z", "+00:00")) if updated else None
    if when is not None:
        told["Last-Modified"] = email.utils.format_datetime(when, usegmt=True)
    matches = request["headers"].get("if-none-match")
    since = request["headers"].get("if-modified-since")
    if matches is not None:
        fresh = matches.strip() == "*" or tag in [m.strip() for m in matches.split(",")]
    else:
        fresh = bool(since and when and email.utils.parsedate_to_datetime(since) >= when)
    if fresh:
        return 304, told, b""
    return status, {**headers, **told}, body
