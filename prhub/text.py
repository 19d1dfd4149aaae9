"""Text rules every stage shares: sentences, PR counts, PR numbers."""

from __future__ import annotations

import re

# A sentence: up to and with its end marks (a line break ends one too), or the text's end. An
# ASCII mark ends one only before a space or the end: `!=5.6.0` and `a;b` go on.
SENTENCE = re.compile(
    r"(?:[^。！？；!?;\n]|[!?;](?=\S))+(?:[。！？；\n]+|[!?;]+(?=\s|$)|$)|[。！？；\n]+|[!?;]+"
)
# "N 个 PR" and the like: a number of pull requests stated in prose.
PR_COUNT = re.compile(r"(?<![\d.])(\d+)(\s*(?:个|项)?\s*(?:PR|pr|合并请求|拉取请求))")
NUMBER = re.compile(r"#(\d+)")


def sentences(text: str) -> list[str]:
    """The text as sentences, each with its end marks; joined they give the text back."""
    return SENTENCE.findall(text)


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 PR`, `2 PRs`: a count with its noun in the right number."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"
