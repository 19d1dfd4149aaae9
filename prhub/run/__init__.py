"""Floor run: the use cases, each written once (`commands`), with a run's lifecycle, batching,
fan-out, dry runs and figures. Knows no terminal and no argv: the CLI prints what it returns.

The names of formats are here for the CLI, which reaches no stage."""

from prhub.publish.formats import SUFFIX, SUFFIXES, Format

__all__ = ["SUFFIX", "SUFFIXES", "Format"]
