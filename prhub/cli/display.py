"""What prhub shows on the terminal while it runs: a progress bar, or plain lines in a log."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

STAGES = {
    "fetch": "fetching PRs",
    "batch": "batch requests answered",
    "summarize": "summarising",
    "calls": "LLM calls",
    "narrate": "weekly narrative",
    "github_wait": "seconds waited for GitHub's rate limit",
}
QUIET_PLAIN = ("calls",)  # stages with no lines in a log: one a call would flood it
EVERY_PLAIN = ("batch",)  # stages with a line at each look: a wait must show it goes on


class _Above:
    """A stream for log lines that prints them above the live bar, never into it."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def write(self, text: str) -> int:
        self.console.print(text, end="", markup=False, highlight=False, emoji=False)
        return len(text)

    def flush(self) -> None:
        self.console.file.flush()


class Display:
    """A progress bar on a terminal, plain lines elsewhere, nothing when quiet.

    While the bar is live, log lines bound for its stream are printed above it."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.shown: dict[str, int] = {}
        self._moved: list[logging.StreamHandler[Any]] = []
        if not quiet and self.stream.isatty():
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self.bar.start()
            above = _Above(self.bar.console)
            for handler in logging.getLogger().handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream is self.stream:
                    handler.setStream(above)
                    self._moved.append(handler)

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Shows a stage's progress; a total of 0 is a count without an end (calls)."""
        if self.quiet or (total == 0 and stage not in QUIET_PLAIN):
            return
        name = STAGES.get(stage, stage)
        if self.bar is not None:
            if stage not in self.tasks:
                self.tasks[stage] = self.bar.add_task(name, total=total or None)
            self.bar.update(self.tasks[stage], completed=done, total=total or None)
            return
        if stage in QUIET_PLAIN:
            return
        step = max(1, total // 10)  # about ten lines a stage in a CI log
        if done in (0, total) or done - self.shown.get(stage, 0) >= step or stage in EVERY_PLAIN:
            self.shown[stage] = done
            self.line(f"{name} {done}/{total}")

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def line(self, text: str) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            _Above(self.bar.console).write(f"prhub: {text}\n")
        else:
            # One write: print() writes the line and its newline apart, and a log line from
            # another thread lands between them.
            self.stream.write(f"prhub: {text}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
        for handler in self._moved:
            handler.setStream(self.stream)
        self._moved = []


class Repos:
    """What `weekly --all` shows of each repository: its name, a display while it runs, then
    its lines at once (`said`)."""

    def __init__(self, quiet: bool, said: Callable[[Any, bool, str], None]) -> None:
        self.quiet = quiet
        self.said = said
        self.display: Display | None = None

    def started(self, settings: Any, i: int, n: int) -> Display:
        if not self.quiet:
            sys.stderr.write(f"prhub: {settings.require_repo()} ({i}/{n})\n")
            sys.stderr.flush()
        self.display = Display(self.quiet)
        return self.display

    def finished(self, outcome: Any) -> None:
        if self.display is not None:
            self.display.close()
        self.said(outcome, self.quiet, f"{outcome.repo}: ")
