"""GitHub's rate limits per token and host: read from every answer, planned for, waited out."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from prhub import retry
from prhub.config import Settings
from prhub.errors import GitHubUnavailable
from prhub.text import plural

log = logging.getLogger("prhub")

# GitHub: past a secondary limit without Retry-After, wait at least a minute, longer each time.
SECONDARY_WAIT = 60.0
# The reset is given to the second, and which part of that second is not said.
RESET_MARGIN = 1.0
COUNTDOWN_FROM = 5.0  # a shorter wait is one log line, no countdown
COUNTDOWN_STEP = 1.0  # seconds between the countdown's ticks
HALT_CHECK = 0.1  # seconds a thread waiting for another's countdown goes without a look at halts
Countdown = Callable[[int, int], None]  # seconds waited, seconds to wait in all
Sleep = Callable[[float], None]


class LimitReached(GitHubUnavailable):
    """GitHub's rate limit would hold the run longer than allowed: it stops, to be rerun."""


class Limited(Exception):  # noqa: N818 (a signal to wait, not an error)
    """No request may go to GitHub before `until` (on the budget's clock): a bucket is spent, or
    GitHub asked for a pause (a secondary limit). `refused` when GitHub refused a request."""

    def __init__(
        self, kind: str, resource: str, until: float, *, refused: bool, strikes: int = 0
    ) -> None:
        super().__init__(f"{kind} rate limit of {resource} requests until {until:.0f}")
        self.kind = kind  # "primary" or "secondary"
        self.resource = resource
        self.until = until
        self.refused = refused
        self.strikes = strikes  # refusals in a row, this one included


@dataclass
class Bucket:
    """One of GitHub's primary limits (core, search, ...) as its answers last told it."""

    limit: int
    left: int  # the fewest remaining any answer of this window reported
    reset: float  # when the window ends, in epoch seconds
    used: int = 0


class Validators(NamedTuple):
    """What revalidates a stored answer: its ETag and Last-Modified, as GitHub sent them."""

    etag: str = ""
    last_modified: str = ""

    def headers(self) -> dict[str, str]:
        """The headers that ask for the answer only if it changed, as PyGithub's own
        conditional update() sends them."""
        asked = {}
        if self.etag:
            asked["If-None-Match"] = self.etag
        if self.last_modified:
            asked["If-Modified-Since"] = self.last_modified
        return asked


def budget_for(settings: Settings) -> Budget:
    """A request budget for the token and host of `settings`, with the wait they allow."""
    advice = "" if settings.github_token else "; export GITHUB_TOKEN for a higher limit"
    return Budget(settings.github_wait, settings.max_attempts, advice=advice)


def pr_requests(hit: dict[str, Any]) -> int:
    """The requests fetching a PR takes, as far as its search hit tells: the pull, its files
    and its reviews (a page each, for most PRs), and its conversation when it has some."""
    return 3 + bool(hit.get("comments"))


def resource(path: str) -> str:
    """The bucket a request to an API `path` (after the base URL's own path) spends."""
    if path.startswith("/search/code"):
        return "code_search"
    if path.startswith("/search/"):
        return "search"
    if path.endswith("/graphql"):
        return "graphql"
    return "core"


def is_rate_limit(status: int, headers: Mapping[str, str], message: str) -> bool:
    """Whether an answer is one of GitHub's rate-limit refusals (403 or 429), as its docs
    describe them; `headers` with lower-case names."""
    if status not in (403, 429):
        return False
    return (
        status == 429
        or "retry-after" in headers
        or headers.get("x-ratelimit-remaining") == "0"
        or "rate limit" in message.lower()
    )


def local(when: float) -> str:
    """An epoch time as HH:MM on this machine's clock."""
    return f"{datetime.fromtimestamp(when).astimezone():%H:%M}"


def span(seconds: float) -> str:
    """A wait in words: `45 s`, `12 min`."""
    if seconds < 120:
        return f"{math.ceil(seconds)} s"
    return f"{math.ceil(seconds / 60)} min"


class Budget:
    """GitHub's limits for one token on one host, shared by every thread, client and repository
    that uses that token there: each bucket as the answers' X-RateLimit-* headers tell it, the
    requests in flight against it, and the pause a secondary limit asks for.

    `wait` is the longest wait for a limit the run accepts (0: never wait); `attempts` the
    refusals in a row (no answer between them) it takes before it stops. `clock` and `sleep`
    are injectable, so that tests wait in scaled time."""

    def __init__(
        self,
        wait: float,
        attempts: int = 5,
        *,
        advice: str = "",
        clock: Callable[[], float] = time.time,
        sleep: Sleep | None = None,
    ) -> None:
        self.wait_limit = wait
        self.attempts = attempts
        self.advice = advice  # appended to the stop's message: how to get a higher limit
        self.clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)  # a countdown ended
        self.buckets: dict[str, Bucket] = {}
        self._flight: Counter[str] = Counter()
        self._paused_until = 0.0
        self._paused_at = -math.inf  # when the latest secondary pause was decided
        self._strikes = 0
        self._counting = False  # a thread shows the countdown
        self.waited = 0.0  # seconds the run waited for GitHub's limits

    def left(self, name: str) -> int | None:
        """Requests of bucket `name` left in its window, those in flight counted as spent;
        None when no answer told it, or its window has ended."""
        with self._lock:
            return self._left(name, self.clock())

    def _left(self, name: str, now: float) -> int | None:
        bucket = self.buckets.get(name)
        if bucket is None or bucket.reset <= now:
            return None
        return bucket.left - self._flight[name]

    def admit(self, name: str) -> float:
        """Before a request that spends bucket `name`: raises Limited when the bucket is known
        spent or GitHub asked for a pause; else counts it in flight and returns the time."""
        with self._lock:
            now = self.clock()
            if self._paused_until > now:
                raise Limited("secondary", name, self._paused_until, refused=False)
            left = self._left(name, now)
            if left is not None and left <= 0:
                until = self.buckets[name].reset + RESET_MARGIN
                raise Limited("primary", name, until, refused=False)
            self._flight[name] += 1
            return now

    def settle(
        self,
        name: str,
        sent: float,
        status: int | None,
        headers: Mapping[str, str],
        message: str = "",
    ) -> Limited | None:
        """After a request admitted at `sent` (its `status` None when it got no answer): reads
        the answer's X-RateLimit-* headers (lower-case names); the Limited to wait for when the
        answer is a rate-limit refusal."""
        with self._lock:
            self._flight[name] -= 1
            self._observe(name, headers)
            if status is None:
                return None
            if status < 400 and sent > self._paused_at:
                self._strikes = 0  # a request sent after the last pause passed
            if not is_rate_limit(status, headers, message):
                return None
            return self._refusal(name, sent, headers)

    def _observe(self, name: str, headers: Mapping[str, str]) -> None:
        try:
            limit = int(headers["x-ratelimit-limit"])
            left = int(headers["x-ratelimit-remaining"])
            reset = float(headers["x-ratelimit-reset"])
        except (KeyError, ValueError):
            return
        name = headers.get("x-ratelimit-resource") or name
        used = int(headers.get("x-ratelimit-used", "0") or 0)
        bucket = self.buckets.get(name)
        if bucket is None or reset > bucket.reset:  # a new window
            self.buckets[name] = Bucket(limit, left, reset, used)
        elif reset == bucket.reset:
            # Answers come back in any order: the fewest left is the latest count.
            bucket.left, bucket.used = min(bucket.left, left), max(bucket.used, used)

    def _refusal(self, name: str, sent: float, headers: Mapping[str, str]) -> Limited:
        now = self.clock()
        if sent > self._paused_at:  # not one more answer of a burst already waited for
            self._strikes += 1
            self._paused_at = now
            new = True
        else:
            new = False
        after = retry.retry_after(headers.get("retry-after"))
        reset = headers.get("x-ratelimit-reset", "")
        spent = headers.get("x-ratelimit-remaining") == "0"
        if after is None and spent and reset.isdigit() and int(reset) + RESET_MARGIN > now:
            until = int(reset) + RESET_MARGIN
            return Limited("primary", name, until, refused=True, strikes=self._strikes)
        # A secondary limit, or a spent bucket whose reset this clock has passed (a clock
        # behind GitHub's): a pause for every request, longer each time it is refused again.
        if new:
            wait = after if after is not None else SECONDARY_WAIT * 2 ** (self._strikes - 1)
            self._paused_until = max(self._paused_until, now + wait)
        return Limited("secondary", name, self._paused_until, refused=True, strikes=self._strikes)

    def wait(
        self,
        limited: Limited,
        what: str,
        stop: retry.StopToken | None = None,
        countdown: Countdown | None = None,
    ) -> None:
        """Waits until `limited` passes, one thread showing a countdown; raises LimitReached
        when that is longer than allowed, or GitHub refused too many times in a row."""
        seconds = limited.until - self.clock()
        if limited.strikes > self.attempts or seconds > self.wait_limit:
            raise LimitReached(self._stop_text(limited, seconds))
        if limited.refused and stop is not None:
            stop.count_retry()  # a request GitHub refused is asked again
        if seconds <= 0:
            return
        while True:  # one thread counts down, the others wait for it to end
            retry.check(stop)  # a halt, or the run's stop, ends this wait too
            with self._done:
                if self.clock() >= limited.until:
                    return
                if not self._counting:
                    self._counting = True
                    seconds = limited.until - self.clock()
                    break
                self._done.wait(HALT_CHECK)
        try:
            log.warning(
                "GitHub's %s: waiting %s, until %s, before %s",
                self._limit_text(limited),
                span(seconds),
                local(limited.until),
                what,
            )
            self._count_down(limited.until, stop, countdown)
        finally:
            with self._done:
                self._counting = False
                self.waited += seconds
                self._done.notify_all()

    def _count_down(
        self, until: float, stop: retry.StopToken | None, countdown: Countdown | None
    ) -> None:
        total = math.ceil(until - self.clock())
        shown = countdown if total >= COUNTDOWN_FROM else None
        while (left := until - self.clock()) > 0:
            if shown:
                shown(total - math.ceil(left), total)
            step = min(left, COUNTDOWN_STEP)
            if self._sleep is not None:
                self._sleep(step)
            else:
                retry.pause(step, stop)
        if shown:
            shown(total, total)

    def _limit_text(self, limited: Limited) -> str:
        """What holds the run, in words."""
        if limited.kind == "secondary":
            return "secondary rate limit asks for a pause"
        bucket = self.buckets.get(limited.resource)
        size = f" of {bucket.limit:,}" if bucket else ""
        return f"rate limit for {limited.resource} requests is spent (0{size} left)"

    def _stop_text(self, limited: Limited, seconds: float) -> str:
        at = local(limited.until)
        if limited.strikes > self.attempts:
            why = f"GitHub's rate limit refused {plural(limited.strikes, 'request')} in a row"
        else:
            why = (
                f"GitHub's {self._limit_text(limited)} until {at}, in {span(seconds)}, longer "
                f"than the {span(self.wait_limit)} wait allowed (PRHUB_GITHUB_WAIT)"
            )
        return f"{why}: what was fetched is kept{self.advice}; rerun after {at} (local time)"

    def plan(self, needed: int, what: str, name: str = "core") -> None:
        """Logs what `what` needs of bucket `name` against what is left of it, and what the
        run will do when that is not enough."""
        with self._lock:
            now = self.clock()
            left = self._left(name, now)
            bucket = self.buckets.get(name)
        if left is None or bucket is None:
            log.info("GitHub: %s needs about %s", what, plural(needed, f"{name} request"))
            return
        at = local(bucket.reset)
        if needed <= left:
            log.info(
                "GitHub: %s needs about %s; %d of %d are left until %s",
                what,
                plural(needed, f"{name} request"),
                left,
                bucket.limit,
                at,
            )
            return
        wait = bucket.reset + RESET_MARGIN - now
        then = (
            f"the run waits for the reset ({span(wait)}) when they are spent"
            if wait <= self.wait_limit
            else f"the run stops when they are spent (the reset is past the "
            f"{span(self.wait_limit)} wait allowed, PRHUB_GITHUB_WAIT); rerun after {at}"
        )
        log.warning(
            "GitHub: %s needs about %s and %d are left until %s: %s",
            what,
            plural(needed, f"{name} request"),
            left,
            at,
            then,
        )
