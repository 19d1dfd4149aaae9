"""The console script: signals, a closed standard output, and anything unforeseen as one line."""

from __future__ import annotations

import errno
import io
import os
import signal
import sys

import typer

from prhub.cli.group import app
from prhub.errors import Interrupted, OutputError


def main() -> None:
    """The console script: anything unforeseen is one line and exit 1, unless --verbose."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    if sys.stdout is None:  # started with stdout closed (>&-)
        _close_stdout()
    try:
        app(prog_name="prhub")
    except SystemExit:
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click's mark of a broken pipe
            os._exit(128 + signal.SIGPIPE)  # quietly, as a tool the pipe killed; nothing to flush
        raise
    except Interrupted as exc:
        kept = f" ({exc.kept})" if exc.kept else ""
        typer.echo(f"prhub: interrupted; what was done is kept{kept}, rerun to go on", err=True)
        sys.stderr.flush()
        sys.stdout.flush()
        # Requests still in flight are abandoned: their threads must not hold the exit.
        os._exit(exc.exit_code)
    except Exception as exc:
        if isinstance(exc, OSError) and isinstance(sys.stdout, _ClosedStdout):
            typer.echo(f"prhub: error: cannot write to standard output: {exc.strerror}", err=True)
            sys.exit(OutputError.exit_code)
        if "--verbose" in sys.argv or "-v" in sys.argv:
            raise
        typer.echo(
            f"prhub: error: unexpected {type(exc).__name__} (a bug; --verbose shows where)",
            err=True,
        )
        sys.exit(1)


class _ClosedStdout(io.TextIOBase):
    """Standard output when there is none: each write fails as a closed file's would."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "it is closed")


def _close_stdout() -> None:
    # File descriptor 1 is held open on /dev/null, so no file prhub opens (the store) becomes
    # stdout; writes fail and say so.
    fd = os.open(os.devnull, os.O_WRONLY)
    if fd != 1:
        os.dup2(fd, 1)
        os.close(fd)
    sys.stdout = _ClosedStdout()


_signalled: list[int] = []


def _interrupt(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM stops new requests and unwinds; a second exits at once."""
    if _signalled:
        os._exit(128 + signum)
    _signalled.append(signum)
    if "prhub.retry" in sys.modules:  # nothing can be in flight before it is loaded
        sys.modules["prhub.retry"].halt()
    raise Interrupted(signum)
