"""Text rules every stage shares: sentences, PR counts, PR references."""

from __future__ import annotations

import re

# A sentence: up to and with its end marks (a line break ends one too), or the text's end. An
# ASCII mark ends one only before a space or the end: `!=5.6.0` and `a;b` go on.
SENTENCE = re.compile(
    r"(?:[^。！？；!?;\n]|[!?;](?=\S))+(?:[。！？；\n]+|[!?;]+(?=\s|$)|$)|[。！？；\n]+|[!?;]+"
)
# "N 个 PR" and the like: a number of pull requests stated in prose.
PR_COUNT = re.compile(r"(?<![\d.])(\d+)(\s*(?:个|项)?\s*(?:PR|pr|合并请求|拉取请求))")
# A reference to a pull request or an issue, its number the first group: `#12`,
# `owner/repo#12`, or the address of one (`https://github.com/owner/repo/pull/12`, `…/issues/12`,
# any host: GitHub Enterprise's differ). Not one: `C#12`, `a#12`, an HTML entity `&#12;`, a page's
# fragment `docs/#12`. Grounding, rendering, the brief, body reading and payloads all ask this.
PR_REF = re.compile(
    r"(?:https?://[\w.-]+(?::\d+)?/[\w.-]+/[\w.-]+/(?:pull|issues)/"
    r"|(?<![\w/&#.-])(?:[A-Za-z0-9][\w-]*/[\w.-]*\w)?#)(\d+)(?!\d)",
    re.ASCII,  # `见#12`: a Chinese character before it is no part of a word here
)


def ref_repo(match: re.Match[str]) -> str | None:
    """The repository a PR reference names (owner/name), or None for a bare `#12`."""
    found = match.group(0)
    if found.startswith(("http://", "https://")):
        owner, name = found.split("/")[3:5]
        return f"{owner}/{name}"
    return found[: found.rindex("#")] or None


def in_repo(match: re.Match[str], repo: str) -> bool:
    """Whether a PR reference is to `repo`: a bare `#12`, or one naming it (in any case)."""
    named = ref_repo(match)
    return named is None or named.lower() == repo.lower()


def refs(text: str, repo: str | None = None, after: re.Pattern[str] | None = None) -> list[int]:
    """The PR numbers `text` refers to, in order, each once: only those to `repo` when given,
    only those that `after` (a pattern ending in `$`) matches just before when given."""
    found = []
    for m in PR_REF.finditer(text):
        if repo is not None and not in_repo(m, repo):
            continue
        if after is not None and not after.search(text, max(0, m.start() - 40), m.start()):
            continue
        found.append(int(m.group(1)))
    return list(dict.fromkeys(found))


def cited(text: str) -> list[int]:
    """The PR and issue numbers `text` refers to, in order, each once."""
    return list(dict.fromkeys(int(m.group(1)) for m in PR_REF.finditer(text)))


def sentences(text: str) -> list[str]:
    """The text as sentences, each with its end marks; joined they give the text back."""
    return SENTENCE.findall(text)


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 PR`, `2 PRs`: a count with its noun in the right number."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"
