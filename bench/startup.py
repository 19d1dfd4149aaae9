"""Start-up time of the CLI against the floor of any Typer CLI, `python3 -c "import typer"`.

Best of N runs each (default 10), in seconds, with each one's ratio to that floor. The
interpreter is the one running this script, and `prhub` the console script beside it (else
`python -m prhub`). Usage:

    python bench/startup.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path


def best_of(runs: int, commands: dict[str, list[str]]) -> dict[str, float]:
    """Each command's fastest of `runs` runs, in seconds; the commands take turns, so that a
    busy moment of the machine slows them all alike. Each run must succeed."""
    best = dict.fromkeys(commands, float("inf"))
    for _ in range(runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def prhub_command() -> list[str]:
    """The installed console script next to this interpreter, else the package run as a module."""
    script = Path(sys.executable).parent / ("prhub.exe" if os.name == "nt" else "prhub")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "prhub"]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=10, help="runs of each command; the best counts"
    )
    args = parser.parse_args(argv[1:])
    prhub = prhub_command()
    commands = {
        'python3 -c "import typer"': [sys.executable, "-c", "import typer"],
        "prhub --help": [*prhub, "--help"],
        "prhub --version": [*prhub, "--version"],
        "prhub summarize --help": [*prhub, "summarize", "--help"],
        "prhub weekly --help": [*prhub, "weekly", "--help"],
    }
    print(f"best of {args.runs} runs each ({' '.join(prhub)})")
    best = best_of(args.runs, commands)
    floor = best['python3 -c "import typer"']
    for name, seconds in best.items():
        print(f"{name:<28} {seconds:6.3f} s  {seconds / floor:4.2f}x")


if __name__ == "__main__":
    main(sys.argv)
