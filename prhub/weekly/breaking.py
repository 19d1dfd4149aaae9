"""Why a PR may break its users: a title that says so, config keys removed or renamed (not
moved to another file of the PR), command-line flags removed."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable

from prhub import paths
from prhub.model import FileChange, PullRequest
from prhub.prepare.diff import parse_hunks
from prhub.tags import parse_title

# Config formats whose keys are read for removed or renamed settings.
KEY_EXTS = frozenset({".yaml", ".yml", ".toml", ".json", ".ini", ".cfg"})

# YAML / JSON keys; for YAML list items ("- name: x") the key's column is its indentation.
COLON_KEY = re.compile(
    r"""^(\s*(?:-\s+)?)(?:"([^"]+)"\s*:|'([^']+)'\s*:|([A-Za-z_][\w.-]*)\s*:(?:\s|$))"""
)
# TOML / INI / CFG keys, and their [section] headers.
# "=" but not "==", so requirement lines such as "torch==2.1" in setup.cfg are not keys.
EQUALS_KEY = re.compile(r"""^(\s*)(?:"([^"]+)"|'([^']+)'|([A-Za-z_][\w.-]*))\s*[=:](?!=)""")
SECTION = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+\s*$")
FLAG = re.compile(r"""["'](--[A-Za-z0-9][\w-]*)""")
FLAG_DEFINER = re.compile(r"add_argument\(|add_option\(|\b[Oo]ption\(")
# A config file's hunk as keys: (sign, column, key, dotted key) of each removed or added key line.
Hunk = list[tuple[str, int, str, str]]


def breaking_reasons(pr: PullRequest) -> list[str]:
    """Why a PR may break users: title markers, removed or renamed config keys, removed flags."""
    reasons = []
    if "[breaking]" in pr.title.lower():
        reasons.append("标题标注 [BREAKING]")
    elif parse_title(pr.title).breaking:
        reasons.append("标题带破坏性变更标记")
    added = [text for f in pr.files for sign, text in _lines(f.patch) if sign == "+"]
    keys = {
        f.path: _config_keys(f)
        for f in pr.files
        if posixpath.splitext(f.path)[1].lower() in KEY_EXTS and f.patch
    }
    moved = _moved(keys)
    for change in pr.files:
        hunks = keys.get(change.path, [])
        reasons += _config_reasons(change, hunks, moved) + _flag_reasons(change, added)
    return list(dict.fromkeys(reasons))


def _moved(config: dict[str, list[Hunk]]) -> Callable[[str, str], bool]:
    """Whether a key a config file lost is one another config file of the PR gained (`config`:
    each config file's keys): the same dotted key, or its tail in a file under a folder or name
    of its head (Hydra's config groups: `transfer_queue.metrics` now `metrics` in
    `transfer_queue/transfer_queue.yaml`)."""
    gained = [
        (
            path,
            set(posixpath.splitext(path)[0].split("/")),
            {d for hunk in hunks for sign, _, _, d in hunk if sign == "+"},
        )
        for path, hunks in config.items()
    ]

    def moved(path: str, dotted: str) -> bool:
        names = dotted.split(".")
        for other, parts, keys in gained:
            if other == path:
                continue
            if dotted in keys:
                return True
            for i in range(1, len(names) + 1):
                tail = ".".join(names[i:])
                if set(names[:i]) <= parts and (not tail or tail in keys):
                    return True
        return False

    return moved


def _hunks(patch: str | None) -> list[list[tuple[str, str]]]:
    """The (sign, text) lines of each hunk of a unified diff, comment and blank lines left out."""
    return [
        [(line[:1], line[1:]) for line in hunk.lines if _counts(line)]
        for hunk in parse_hunks(patch)
        if hunk.header
    ]


def _counts(line: str) -> bool:
    sign, text = line[:1], line[1:]
    # Comments explain; they are not an interface.
    return (
        sign in ("-", "+", " ")
        and bool(text.strip())
        and not text.lstrip().startswith(("#", ";", "//"))
    )


def _lines(patch: str | None) -> Iterable[tuple[str, str]]:
    return (line for hunk in _hunks(patch) for line in hunk)


def _config_keys(change: FileChange) -> list[Hunk]:
    """Per hunk, (sign, column, key, dotted key) of each removed or added key line."""
    ext = posixpath.splitext(change.path)[1].lower()
    pattern = COLON_KEY if ext in {".yaml", ".yml", ".json"} else EQUALS_KEY
    result = []
    for hunk in _hunks(change.patch):
        # Parents seen so far on each side of the diff, as (column, key); a section is column -1.
        stacks: dict[str, list[tuple[int, str]]] = {"-": [], "+": []}
        keys = []
        for sign, text in hunk:
            sides = "-+" if sign == " " else sign
            if pattern is EQUALS_KEY and (section := SECTION.match(text)):
                for side in sides:
                    stacks[side] = [(-1, section.group(1))]
                continue
            match = pattern.match(text)
            if not match:
                continue
            column = len(match.group(1))
            key = next(group for group in match.groups()[1:] if group)
            dotted = key
            for side in sides:
                stack = stacks[side]
                while stack and stack[-1][0] >= column:
                    stack.pop()
                # Name the full path only when the hunk shows it up to the top level.
                if stack and stack[0][0] <= 0:
                    dotted = ".".join([k for _, k in stack] + [key])
                stack.append((column, key))
            if sign != " ":
                keys.append((sign, column, key, dotted))
        result.append(keys)
    return result


def _config_reasons(
    change: FileChange, hunks: list[Hunk], moved: Callable[[str, str], bool]
) -> list[str]:
    ext = posixpath.splitext(change.path)[1].lower()
    if (
        ext not in KEY_EXTS
        or change.status in ("added", "removed")
        or paths.is_tooling(change.path)
        or paths.is_machine_made(change)
    ):
        return []
    removed = {key for hunk in hunks for sign, _, key, _ in hunk if sign == "-"}
    added = {key for hunk in hunks for sign, _, key, _ in hunk if sign == "+"}
    reasons = []
    for hunk in hunks:
        # Keys new to the file, in order, are the candidates for the new name of a removed key.
        new = [
            (column, dotted)
            for sign, column, key, dotted in hunk
            if sign == "+" and key not in removed
        ]
        for sign, column, key, dotted in hunk:
            if sign != "-" or key in added or moved(change.path, dotted):
                continue  # a key still present (changed value or moved) is no break
            partner = next((n for n in new if n[0] == column), None)
            if partner:
                new.remove(partner)
                reasons.append(f"配置项改名：{dotted} → {partner[1]}（{change.path}）")
            else:
                reasons.append(f"配置项删除：{dotted}（{change.path}）")
    return reasons


def _flag_reasons(change: FileChange, added: list[str]) -> list[str]:
    if paths.of(change) != "code":
        return []
    reasons = []
    for hunk in _hunks(change.patch):
        old = [(sign, text) for sign, text in hunk if sign != "+"]
        for index, (sign, text) in enumerate(old):
            # Option calls often span lines: look for the call up to three lines above.
            window = old[max(0, index - 3) : index + 1]
            if sign != "-" or not any(FLAG_DEFINER.search(line) for _, line in window):
                continue
            for flag in FLAG.findall(text):
                still = re.compile(re.escape(flag) + r"(?![\w-])")
                if not any(still.search(line) for line in added):
                    reasons.append(f"命令行参数删除：{flag}（{change.path}）")
    return reasons
