"""Stage prepare: noise filter, secret redaction, ranking and packing into a token budget."""

from prhub.prepare.core import BODY_BUDGET, TITLE_BUDGET, body_budget, input_key, prepare
from prhub.prepare.redact import redact

__all__ = ["BODY_BUDGET", "TITLE_BUDGET", "body_budget", "input_key", "prepare", "redact"]
