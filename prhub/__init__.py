"""prhub: Chinese digests of merged GitHub pull requests, one per PR and one per ISO week."""

from prhub.config import Settings, load_settings
from prhub.errors import PrhubError
from prhub.model import PRDigest, PullRequest
from prhub.report import WeeklyReport

__all__ = ["PRDigest", "PrhubError", "PullRequest", "Settings", "WeeklyReport", "load_settings"]
__version__ = "0.1.0"
