"""Tags of a PR as reports count them: parsed from titles, folded by aliases."""

from __future__ import annotations

import re
from collections.abc import Mapping

_TITLE = re.compile(r"^\s*((?:\[[^\]]*\]\s*)+)?\s*([A-Za-z]+)?(?:\([^)]*\))?(!)?\s*:\s*")
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


def parse_title(title: str) -> tuple[list[str], str | None, bool]:
    """Module tags, readable type and breaking flag from `[mod, mod2] type: text` titles."""
    if title.lstrip().lower().startswith("revert"):
        return [], "revert", "[breaking]" in title.lower()
    match = _TITLE.match(title)
    if not match:
        return [], None, "[breaking]" in title.lower()
    modules: list[str] = []
    breaking = bool(match.group(3))
    for group in re.findall(r"\[([^\]]*)\]", match.group(1) or ""):
        for tag in group.split(","):
            tag = tag_name(tag)
            if tag == "breaking":
                breaking = True
            elif tag and tag not in modules:
                modules.append(tag)
    raw = (match.group(2) or "").lower()
    return modules, KIND_TAGS.get(raw, raw or None), breaking
