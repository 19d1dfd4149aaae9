"""Tags of a PR as reports count them: parsed from titles, folded by aliases."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

_TITLE = re.compile(r"^\s*((?:\[[^\]]*\]\s*)+)?\s*([A-Za-z]+)?(?:\([^)]*\))?(!)?\s*:\s*")

# A title that opens, after any [module] tags, with the imperative Revert: `Revert "x"` (GitHub's
# button), `Revert #12`, `Reverts the cache change`. "Reverting …" and "Reverted …" describe a
# change (a behaviour restored), and `revert: x` is a type the convention reads.
_REVERT = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*reverts?\b(?!-)", re.I)
# Types in titles, as readers call them.
KIND_TAGS = {
    **dict.fromkeys(("feat", "feature"), "feature"),
    **dict.fromkeys(("fix", "bugfix", "hotfix"), "bugfix"),
    **dict.fromkeys(("refactor",), "refactor"),
    **dict.fromkeys(("perf",), "perf"),
    **dict.fromkeys(("doc", "docs"), "docs"),
    **dict.fromkeys(("test", "tests"), "test"),
    **dict.fromkeys(("ci",), "ci"),
    **dict.fromkeys(("chore", "misc"), "chore"),
    **dict.fromkeys(("build",), "build"),
    **dict.fromkeys(("style",), "style"),
    **dict.fromkeys(("revert",), "revert"),
}


# Tags that name the same thing, as repositories spell them in titles and labels.
TAG_ALIASES = {
    "doc": "docs",
    "documentation": "docs",
    "tests": "test",
    "bug": "bugfix",
    "enhancement": "feature",
}


def tag_name(raw: str, aliases: Mapping[str, str] | None = None) -> str:
    """A tag as reports count it: lower case, the repository's aliases then ours folded."""
    name = raw.strip().lower()
    name = (aliases or {}).get(name, name)
    return TAG_ALIASES.get(name, name)


class Title(NamedTuple):
    """What a title says by convention: `[mod, mod2] type(scope)!: subject`, or a revert."""

    modules: list[str]
    kind: str | None
    breaking: bool
    revert: bool
    subject: str  # the title without its convention's prefix


def parse_title(title: str) -> Title:
    """Module tags, readable type, breaking and revert flags from `[mod] type: text` titles."""
    flagged = "[breaking]" in title.lower()
    match = _TITLE.match(title)
    if not match:  # `Revert "[mod] fix: x"`: the tags in quotes are the reverted PR's
        revert = bool(_REVERT.match(title))
        return Title([], "revert" if revert else None, flagged, revert, title.strip())
    modules: list[str] = []
    breaking = bool(match.group(3)) or flagged  # `feat!:`, or [BREAKING] anywhere
    for group in re.findall(r"\[([^\]]*)\]", match.group(1) or ""):
        for tag in group.split(","):
            tag = tag_name(tag)
            if tag == "breaking":  # [vllm, breaking]
                breaking = True
            elif tag and tag not in modules:
                modules.append(tag)
    raw = (match.group(2) or "").lower()
    kind = KIND_TAGS.get(raw, raw or None)
    return Title(modules, kind, breaking, kind == "revert", title[match.end() :].strip())
