"""How a reply's fields are read: lists that may be none, numbers in words, choices with notes.

The models' own validators: tolerant in what they take, never inventing what is not there.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict

# List items that say "nothing here" rather than name something.
PLACEHOLDERS = frozenset(
    {"", "-", "--", "—", "/", "none", "null", "nil", "n/a", "na", "nothing", "not applicable"}
    | {"无", "暂无", "没有", "不适用", "无。"}
)
_NOTHING = re.compile(
    r"(?:无|暂无|没有|未发现)(?:明显|需要|其他|特别|任何|相关)?的?"
    r"(?:后续(?:动作|跟进)?|风险点?|设计决策|(?:评审)?讨论(?:要点)?|跟进|相关\s*pr)"
)
_NOTHING_EN = re.compile(
    r"no(?: (?:obvious|notable|known|other))? "
    r"(?:risks?|follow[- ]?ups?|discussions?|design decisions?|related prs?)"
)
# A text wholly in angle brackets is an example's note, never an answer: "<无风险点>".
_BRACKETED = re.compile(r"\s*[<＜][^<>＜＞]*[>＞]\s*")
# What the example writes where a field has no note of its own.
_GENERIC = frozenset({"文字", "整数", "数字", "text", "string", "number", "integer"})
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_OUT_OF_TEN = re.compile(r"\s*(-?\d+(?:\.\d+)?)\s*/\s*10\s*")


def echo(text: str, notes: frozenset[str] = frozenset()) -> bool:
    """A text that is the example's own note: its wording (`notes`), or in angle brackets
    around nothing else than a note or a "none" (`<无风险点>`). A real answer a model set in
    the example's brackets is no echo: `unwrapped` gives it back."""
    inside = bare(text)
    if _BRACKETED.fullmatch(text):
        return not inside or inside in notes or nothing(inside) or inside in _GENERIC
    return inside in notes


def unwrapped(text: str) -> str:
    """A text wholly in the example's angle brackets without them; any other as it is."""
    return bare(text) if _BRACKETED.fullmatch(text) and not echo(text) else text


def nothing(value: Any, notes: frozenset[str] = frozenset()) -> bool:
    """An item that is none: it says so (无, N/A, 无后续动作, 暂无风险) or echoes the example."""
    if not isinstance(value, str):
        return False
    text = value.strip().rstrip("。.").lower()
    said_none = text in PLACEHOLDERS or _NOTHING.fullmatch(text) or _NOTHING_EN.fullmatch(text)
    return bool(said_none) or echo(value, notes)


def bare(text: str) -> str:
    return text.strip().strip("<>＜＞").strip().rstrip("。.")


def listed(value: Any) -> Any:
    """A list as models write it: null or a placeholder for none, one text for a list of one."""
    if value is None or nothing(value):
        return []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list):
        return [v.strip() if isinstance(v, str) else v for v in value if not nothing(v)]
    return value


def number(value: Any) -> Any:
    """The number in "7.5", "8/10", "约 10 分钟" or "#123"; anything else as given."""
    if not isinstance(value, str):
        return value
    out_of_ten = _OUT_OF_TEN.fullmatch(value)
    found = [out_of_ten.group(1)] if out_of_ten else _NUMBER.findall(value)
    if len(found) != 1:  # "5-10 分钟" is no one number: let validation say so
        return value
    return float(found[0]) if "." in found[0] else int(found[0])


def one_of(options: tuple[str, ...]) -> BeforeValidator:
    """Accepts a choice with notes after it ("精读（约 10 分钟）") when no other choice is named."""

    def choose(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        named = [option for option in options if option in text]
        if len(named) == 1 and text.startswith(named[0]):  # not "不必精读" nor "精读或可跳过"
            return named[0]
        return text

    return BeforeValidator(choose)


def strict_schema(schema: dict[str, Any]) -> None:
    """Every property required, no defaults, no other keys: the subset strict endpoints accept."""
    properties = schema.get("properties", {})
    for sub in properties.values():
        sub.pop("default", None)
    schema["required"] = list(properties)
    schema["additionalProperties"] = False


Listed = BeforeValidator(listed)
Number = BeforeValidator(number)
Texts = Annotated[list[str], Listed]
Numbers = Annotated[list[Annotated[int, Number]], Listed]
# Reply models: extra keys ignored, lists optional, every field required in the schema sent.
REPLY = ConfigDict(extra="ignore", json_schema_extra=strict_schema)
