"""prhub: Chinese digests of merged GitHub pull requests, one per PR and one per ISO week."""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from prhub.config import Settings
    from prhub.configfile import load_settings
    from prhub.errors import PrhubError
    from prhub.model import PRDigest, PullRequest, WeeklyReport

__all__ = ["PRDigest", "PrhubError", "PullRequest", "Settings", "WeeklyReport", "load_settings"]
__version__ = "0.1.0"

# Where each exported name lives. They load on first use, so that `prhub --help`, which imports
# this package, does not pay for pydantic (start-up time).
_HOMES = {
    "PRDigest": "prhub.model",
    "PrhubError": "prhub.errors",
    "PullRequest": "prhub.model",
    "Settings": "prhub.config",
    "WeeklyReport": "prhub.model",
    "load_settings": "prhub.configfile",
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'prhub' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
