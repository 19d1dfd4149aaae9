"""Replies: their shape as the prompt shows it; reading them tolerantly, validating strictly."""

from __future__ import annotations

import json
import logging
import re
from types import SimpleNamespace
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from prhub.fields import bare, echo, nothing, unwrapped

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("prhub")

_CLAUSE = re.compile(r"[，,：:；;]")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class ReplyError(ValueError):
    """A reply that holds no object valid for the schema; str() is what to tell the model."""

    def __init__(self, problem: str, detail: str | None = None) -> None:
        super().__init__(problem)
        self.detail = detail or problem  # every validation error, for the log


# The prompts' own wording (v2), for messages rendered without the example.
_SHAPE = (
    "只输出一个 JSON 对象，不要输出思考过程或任何其他文字。按下面的格式填写："
    "尖括号里是说明，要换成你写的内容；数字直接写数字；列表没有内容就写 []。"
    "\n```json\n{example}\n```"
)


def example(schema: type[BaseModel]) -> dict[str, Any]:
    """A compact example of a reply, each value saying what belongs there."""
    root = schema.model_json_schema()

    def value(node: dict[str, Any], note: str = "") -> Any:
        if "$ref" in node:
            node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        note = node.get("description", note)
        if "enum" in node:  # "a|b|c" made a small model answer "a|b"
            return f"<从 {'、'.join(map(str, node['enum']))} 中选一个>"
        kind = node.get("type")
        if kind == "object":
            return {name: value(sub) for name, sub in node.get("properties", {}).items()}
        if kind == "array":
            return [value(node.get("items", {}), note)]
        if kind in ("integer", "number"):
            word = "整数" if kind == "integer" else "数字"
            span = f"{node.get('minimum', '')}–{node.get('maximum', '')}"
            word = f"{span} 的{word}" if len(span) > 1 and span not in note else word
            return f"<{note}，{word}>" if note else f"<{word}>"
        return f"<{note or '文字'}>"

    made: dict[str, Any] = value(root)
    return made


def example_text(schema: type[BaseModel]) -> str:
    """The example as the prompt shows it: indented, a list of one text on one line."""
    text = json.dumps(example(schema), ensure_ascii=False, indent=1)
    return re.sub(r"\[\s+(\"[^\"\n]*\")\s+\]", r"[\1]", text)


def with_example(messages: list[dict[str, str]], schema: type[BaseModel]) -> list[dict[str, str]]:
    """The messages with the reply's example in the system message, unless they carry it."""
    text = example_text(schema)
    if any(text in m["content"] for m in messages):
        return messages
    # Rendered before the endpoint's mode was learned, so the prompt does not show the shape.
    shape = _SHAPE.format(example=text)
    first, *rest = messages
    if first["role"] != "system":
        return [{"role": "system", "content": shape}, *messages]
    return [{**first, "content": f"{first['content']}\n\n{shape}"}, *rest]


def read(reply: str, schema: type[M]) -> M:
    """The first JSON object in `reply` valid as `schema`; else the nearest miss's errors."""
    found = candidates(reply)
    if not found:
        what = "the reply was empty" if not reply.strip() else "the reply holds no JSON object"
        raise ReplyError(f"Invalid JSON: {what}")
    closest: ValidationError | None = None  # what to tell the model: the nearest miss
    notes = example_notes(schema)
    for value in found:
        left: list[str] = []  # an echo or a "none" left in a list means "none here"
        value = _answered(value, notes, left)
        try:
            valid = schema.model_validate(value)
        except ValidationError as exc:
            if closest is None or exc.error_count() < closest.error_count():
                closest = exc
            continue
        copied = {text for text in strings(value) if echo(text, notes)}
        if copied:  # a small model may hand the example back instead of filling it in
            raise ReplyError(f"the example's placeholder was copied, not filled in: {min(copied)}")
        if left:
            log.info(
                "%s: %d list items that say nothing or echo the example read as none: %s",
                schema.__name__,
                len(left),
                " | ".join(left),
            )
        return valid
    errors = closest.errors()[:10] if closest else []  # every object found failed validation
    problems = [
        f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in errors
    ]
    raise ReplyError("\n".join(problems), str(closest))


def candidates(reply: str) -> list[dict[str, Any]]:
    """The JSON objects a reply carries, most likely answer first."""
    text = _THINK.sub("", reply or "")
    closing = text.lower().rfind("</think>")
    last_first = False
    if closing >= 0:  # the server's chat template opened the block, so only its end shows
        text = text[closing + len("</think>") :]
    elif text.lstrip().lower().startswith("<think>"):  # never closed: the answer comes last
        text, last_first = text.lstrip()[len("<think>") :], True
    found = _objects(text)  # a ```json fence or prose around the object is passed over
    if last_first:
        found.reverse()
    # A lone object wrapped in one key ({"DigestContent": {...}}) is tried as itself too.
    for obj in list(found):
        inner = next(iter(obj.values())) if len(obj) == 1 else None
        if isinstance(inner, dict) and inner not in found:
            found.insert(found.index(obj) + 1, inner)
    return found


def _objects(text: str) -> list[dict[str, Any]]:
    """Every complete top-level JSON object in `text`, in order."""
    decoder = json.JSONDecoder()
    found, start = [], text.find("{")
    while start >= 0:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", end)
    return found


def strings(value: Any) -> set[str]:
    """Every text in a JSON value."""
    if isinstance(value, str):
        return {value}
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return set().union(*map(strings, items))


def example_notes(schema: type[BaseModel]) -> frozenset[str]:
    """The wording of the example's notes, whole and by clause: what an echo repeats."""
    notes = {bare(s) for s in strings(example(schema)) if s.startswith("<")}
    clauses = {c.strip() for note in notes for c in _CLAUSE.split(note)}
    return frozenset(n for n in notes | clauses if len(n) >= 3)


def _answered(value: Any, notes: frozenset[str], left: list[str]) -> Any:
    """The reply without the list items that are none, at any depth; they go into `left`.
    A text that opens with one of the example's clauses ("值不值得读，…") goes on after it."""
    if isinstance(value, dict):
        return {k: _answered(v, notes, left) for k, v in value.items()}
    if isinstance(value, str) and not echo(value, notes):
        value = unwrapped(value)  # an answer written inside the example's brackets
        head, mark, rest = _CLAUSE.split(value, maxsplit=1)[0], "", ""
        fragments = {f for note in notes for f in re.split(r"[、/]", note) if len(f) >= 3}
        if len(head) < len(value) and bare(head) in notes | fragments:
            mark, rest = value[len(head)], value[len(head) + 1 :].strip()
        if rest:
            left.append(head + mark)
            return rest
        return value
    if not isinstance(value, list):
        return value
    kept = []
    for item in value:
        if nothing(item, notes) or (isinstance(item, dict) and _hollow(item, notes)):
            left.append(item if isinstance(item, str) else json.dumps(item, ensure_ascii=False))
        else:
            kept.append(_answered(item, notes, left))
    return kept


def _hollow(value: dict[str, Any], notes: frozenset[str]) -> bool:
    texts = [v for v in value.values() if not isinstance(v, (dict, list))]
    return bool(texts) and all(isinstance(v, str) and nothing(v, notes) for v in texts)


def cached_tokens(usage: Any) -> int:
    """Prompt tokens the provider served from its prefix cache, as it reports them."""
    details = getattr(usage, "prompt_tokens_details", None)
    if isinstance(details, dict):  # a server the SDK does not know: extra fields stay dicts
        details = SimpleNamespace(**details)
    cached = getattr(details, "cached_tokens", None)
    if cached is None:  # DeepSeek names it otherwise
        cached = getattr(usage, "prompt_cache_hit_tokens", None)
    return cached if isinstance(cached, int) and cached > 0 else 0
