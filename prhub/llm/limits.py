"""A prompt longer than the model's context: the endpoint's error, read for the limit it
reports, and the input budget that would fit."""

from __future__ import annotations

import re

from prhub.errors import LLMRequestError


class ContextTooLong(LLMRequestError):
    """The endpoint said the prompt exceeds the model's context."""

    def __init__(
        self,
        message: str,
        *,
        sent: int | None = None,
        limit: int | None = None,
        used: int | None = None,
        reserved: int = 0,
    ) -> None:
        super().__init__(message)
        self.sent = sent  # prompt tokens as prhub counted them
        self.limit = limit  # the model's context, as the endpoint reported it
        self.used = used  # the prompt's tokens as the endpoint counted them
        self.reserved = reserved  # reply tokens the endpoint counts against the context

    def smaller_budget(self, budget: int) -> int | None:
        """An input budget, in prhub's tokens, that fits the context reported; None if unknown."""
        if not (self.sent and self.limit and self.used):
            return None
        # Scaled by how the endpoint's tokenizer counts ours; 5 % spare for chat-format overhead.
        fit = int((self.limit - self.reserved) * self.sent / self.used * 0.95)
        return fit if 0 < fit < min(budget, self.sent) else None


# How OpenAI, vLLM, DeepSeek and llama.cpp word a context overflow.
CONTEXT_LIMIT = re.compile(r"maximum context length is (\d+)|context size \((\d+) tokens\)")
PROMPT_USED = re.compile(
    r"(\d+) in the messages|messages resulted in (\d+) tokens|request \((\d+) tokens\)"
)
REPLY_RESERVED = re.compile(r"(\d+) in the completion")


def first_number(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    return int(next(g for g in match.groups() if g)) if match else None
