"""An OpenAI chat-completions stand-in on 127.0.0.1 that answers with schema-valid JSON; as
another server (`flavour`) it refuses json_schema, and `replay` serves recorded reply bodies."""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prhub.prepare import tokens
from tests.standins.github import Answer, StandIn

MODEL = "gpt-4o-mini"
PLACEHOLDER = "示例说明"
FORMATS = {
    "date-time": "2026-08-03T00:00:00Z",
    "date": "2026-08-03",
    "time": "00:00:00",
    "uri": "https://example.com/",
    "email": "someone@example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_ids = itertools.count(1)
# How servers without json_schema refuse it. Only llama-cpp-python's also takes the schema in
# {"type": "json_object", "schema": ...} and enforces it with a grammar; OpenAI refuses that key.
REFUSALS = {
    "deepseek": (400, "This response_format type is unavailable now", "invalid_request_error"),
    "llama-cpp-python": (  # as recorded, traceback left out
        500,
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
        "'ctx': {'expected': \"'text' or 'json_object'\"}}",
        "internal_server_error",
    ),
}


def error(status: int, message: str, kind: str, param: str | None, code: str | None) -> Answer:
    """An answer carrying OpenAI's error object."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return status, {}, body


def _number(schema: dict[str, Any], integer: bool) -> int | float:
    """1, or the nearest value inside the schema's bounds."""
    value: float = 1
    step = 1 if integer else 0.5
    if "minimum" in schema:
        value = max(value, schema["minimum"])
    if "exclusiveMinimum" in schema:
        value = max(value, schema["exclusiveMinimum"] + step)
    if "maximum" in schema:
        value = min(value, schema["maximum"])
    if "exclusiveMaximum" in schema:
        value = min(value, schema["exclusiveMaximum"] - step)
    return int(value) if integer else float(value)


def schema_instance(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A deterministic instance of a JSON Schema as pydantic v2 emits it."""
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return schema_instance(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return schema_instance(options[0], root)
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: schema_instance(sub, root) for name, sub in properties.items()}
    if kind == "array":
        if "prefixItems" in schema:
            return [schema_instance(sub, root) for sub in schema["prefixItems"]]
        count = max(1, schema.get("minItems", 0))
        count = min(count, schema.get("maxItems", count))
        return [schema_instance(schema.get("items", {}), root) for _ in range(count)]
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if schema.get("format") in FORMATS:
        return FORMATS[schema["format"]]
    length = max(schema.get("minLength", 0), len(PLACEHOLDER))
    length = min(length, schema.get("maxLength", length))
    return (PLACEHOLDER * (length // len(PLACEHOLDER) + 1))[:length]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def prompt_text(body: dict[str, Any]) -> str:
    """Every message's text, joined with newlines: what the stand-in counts as the prompt."""
    return "\n".join(_text(m) for m in body.get("messages", []))


def _fenced(text: str) -> list[Any]:
    """The JSON values of a prompt's ```json fences, in order."""
    values = []
    for block in re.findall(r"```json\s*\n(.*?)```", text, re.DOTALL):
        try:
            values.append(json.loads(block))
        except ValueError:
            continue
    return values


def embedded_schema(text: str) -> dict[str, Any] | None:
    """The last JSON Schema object (one with "properties") written into a prompt."""
    fenced = [v for v in _fenced(text) if isinstance(v, dict) and "properties" in v]
    if fenced:
        return fenced[-1]
    found, decoder = None, json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict) and "properties" in value:
            found = value
    return found


def embedded_example(text: str) -> dict[str, Any] | None:
    """The last example reply (a ```json fence holding no JSON Schema) written into a prompt."""
    fenced = [v for v in _fenced(text) if isinstance(v, dict) and "properties" not in v]
    return fenced[-1] if fenced else None


def follow_example(value: Any) -> Any:
    """What a model that follows an example writes: the first choice, numbers for numbers."""
    if isinstance(value, dict):
        return {key: follow_example(item) for key, item in value.items()}
    if isinstance(value, list):
        return [follow_example(item) for item in value]
    if not isinstance(value, str):
        return value
    if value.startswith("<") and re.search(r"(整数|数字)>$", value):
        low = re.search(r"(\d+(?:\.\d+)?)–", value)
        number = float(low.group(1)) if low else 1.0
        return int(max(number, 1)) if value.endswith("整数>") else max(number, 1.0)
    choice = re.fullmatch(r"<从 (.+?)、.* 中选一个>", value)
    if choice:
        return choice.group(1)
    return PLACEHOLDER if value.startswith("<") else value


def default_responder(body: dict[str, Any]) -> str:
    """JSON that fits the requested schema, or the example or schema the prompt carries."""
    response_format = body.get("response_format") or {}
    text = prompt_text(body)
    if response_format.get("type") == "json_schema":
        reply = schema_instance(response_format["json_schema"]["schema"])
    elif isinstance(response_format.get("schema"), dict):  # llama.cpp's grammar-enforced form
        reply = schema_instance(response_format["schema"])
    elif (example := embedded_example(text)) is not None:
        reply = follow_example(example)
    else:
        schema = embedded_schema(text)
        reply = schema_instance(schema) if schema else {}
    return json.dumps(_written(reply, text), ensure_ascii=False)


def _written(reply: Any, prompt: str) -> Any:
    """Top-level texts as a model writes them: Chinese sentences naming the diff's first file."""
    if not isinstance(reply, dict):
        return reply
    path = re.search(
        r"^(?:### )?(\S+) \((?:added|modified|removed|renamed)|^(\S+/) — \d", prompt, re.MULTILINE
    )  # a file's header in the diff or the index, else a folder's line in the index
    named = f"，详见 `{path.group(1) or path.group(2)}`" if path else ""
    sentence = f"{PLACEHOLDER}：这里概括这个改动的要点、影响和值得注意的风险{named}。"
    written = {
        key: sentence if value == PLACEHOLDER and key != "title" else value
        for key, value in reply.items()
    }
    if "carried_over" in written and not re.search(r"^<last>$", prompt, re.MULTILINE):
        written["carried_over"] = []  # as the prompt asks: nothing to look back at
    if written.get("verdict") == "精读":  # the schema's first choice: a model weighs it
        written["verdict"] = "快速浏览"
    return written


def _strict_problem(schema: dict[str, Any], where: tuple[str, ...] = ()) -> str | None:
    """What OpenAI's strict structured outputs would refuse in `schema`, if anything."""
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={where}, 'additionalProperties' is required to be supplied and to "
                "be false."
            )
        required = schema.get("required", [])
        missing = [name for name in schema.get("properties", {}) if name not in required]
        if missing:
            return (
                f"In context={where}, 'required' is required to be supplied and to be an array "
                f"including every key in properties. Missing '{missing[0]}'."
            )
    children: list[tuple[tuple[str, ...], Any]] = []
    for key in ("properties", "$defs"):
        children += [((*where, key, name), sub) for name, sub in schema.get(key, {}).items()]
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children += [((*where, key, str(i)), sub) for i, sub in enumerate(schema.get(key, []))]
    if isinstance(schema.get("items"), dict):
        children.append(((*where, "items"), schema["items"]))
    for path, sub in children:
        problem = _strict_problem(sub, path)
        if problem:
            return problem
    return None


class LLMStandIn(StandIn):
    """OpenAI's POST /v1/chat/completions and GET /v1/models, answering through a responder."""

    prefix = "/v1"
    fault_kinds = ("429", "500", "503", "reset")

    def __init__(
        self,
        *,
        api_key: str | None = None,
        latency: float = 0.0,
        responder: Callable[[dict[str, Any]], str] | None = None,
        context_limit: int | None = None,
        port: int = 0,
        fault_rate: float = 0.0,
        seed: int = 0,
        flavour: str = "openai",
        trickle: float = 0.0,
        prefix_cache: bool = False,
    ) -> None:
        super().__init__(port=port, fault_rate=fault_rate, seed=seed, trickle=trickle)
        self.api_key = api_key
        self.latency = latency
        self.responder = responder or default_responder
        self.context_limit = context_limit
        self.flavour = flavour  # "openai", or a key of REFUSALS
        # As OpenAI's prompt cache: a prefix of 1,024+ tokens seen before, counted by 128s.
        self.prefix_cache = prefix_cache
        self._prefixes: list[str] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat completion requests received so far."""
        with self._lock:
            return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def script(self, responses: list[Any]) -> None:
        """Answer the next chat completion requests with `responses`, in order."""
        self._queue(r"/chat/completions$", responses)

    def replay(self, path: Path) -> dict[str, Any]:
        """Answer the next requests with a recorded reply file's responses; its record."""
        record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        self.script([(r["status"], {}, r["body"]) for r in record["responses"]])
        return record

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "x-request-id": f"req_standin{len(self.requests):08d}",
            "openai-processing-ms": str(int(self.latency * 1000)),
            "openai-version": "2020-10-01",
        }

    def scripted_answer(self, item: Any, request: dict[str, Any]) -> Answer:
        if item[0] == "content":
            return self._completion(request["body"] or {}, item[1])
        return super().scripted_answer(item, request)

    def fault_answer(self, kind: str) -> Answer:
        if kind == "429":
            message = (
                f"Rate limit reached for {MODEL} in organization org-standin on tokens per min "
                "(TPM): Limit 200000, Used 200000, Requested 1000. Please try again in 0s."
            )
            status, _, body = error(429, message, "tokens", None, "rate_limit_exceeded")
            return status, {"Retry-After": "0"}, body
        if kind == "500":
            message = "The server had an error while processing your request. Sorry about that!"
            return error(500, message, "server_error", None, None)
        message = "The engine is currently overloaded, please try again later."
        return error(503, message, "server_error", None, None)

    def unauthorized(self, request: dict[str, Any]) -> Answer | None:
        """OpenAI's 401 for a request without the stand-in's key; None when it has it."""
        if self.api_key is None:
            return None
        auth = request["headers"].get("authorization", "")
        if auth == f"Bearer {self.api_key}":
            return None
        given = auth.removeprefix("Bearer ")
        message = (
            f"Incorrect API key provided: {given[:3]}{'*' * 8}{given[-4:]}. "
            "You can find your API key at https://platform.openai.com/account/api-keys."
        )
        return error(401, message, "invalid_request_error", None, "invalid_api_key")

    def answer(self, request: dict[str, Any]) -> Answer:
        if (refused := self.unauthorized(request)) is not None:
            return refused
        route = (request["method"], request["path"])
        if route == ("GET", "/v1/models"):
            model = {"id": MODEL, "object": "model", "created": 1721172741, "owned_by": "system"}
            return 200, {}, {"object": "list", "data": [model]}
        if route != ("POST", "/v1/chat/completions"):
            message = f"Invalid URL ({request['method']} {request['path']})"
            return error(404, message, "invalid_request_error", None, None)
        if self.latency:
            time.sleep(self.latency)
        body = request["body"]
        problem = self._refusal(body)
        if problem:
            return problem
        prompt = tokens.count(prompt_text(body))
        if self.context_limit is not None and prompt > self.context_limit:
            message = (
                f"This model's maximum context length is {self.context_limit} tokens. However, "
                f"your messages resulted in {prompt} tokens. Please reduce the length of the "
                "messages."
            )
            code = "context_length_exceeded"
            return error(400, message, "invalid_request_error", "messages", code)
        return self._completion(body, self.responder(body))

    def _refusal(self, body: Any) -> Answer | None:
        """The error the server gives for a request it does not take, or None."""
        bad = "invalid_request_error"
        if not isinstance(body, dict):
            return error(400, "We could not parse the JSON body of your request.", bad, None, None)
        if not body.get("model"):
            return error(400, "you must provide a model parameter", bad, None, None)
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            message = "Missing required parameter: 'messages'."
            return error(400, message, bad, "messages", "missing_required_parameter")
        if body.get("stream"):
            return error(400, "The stand-in does not stream.", bad, "stream", None)
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_object" and self.flavour != "llama-cpp-python":
            if "json" not in prompt_text(body).lower():
                message = (
                    "'messages' must contain the word 'json' in some form, to use "
                    "'response_format' of type 'json_object'."
                )
                return error(400, message, bad, "messages", None)
        if response_format.get("type") == "json_schema" and self.flavour in REFUSALS:
            status, message, kind = REFUSALS[self.flavour]
            return error(status, message, kind, None, None)
        if "schema" in response_format and self.flavour != "llama-cpp-python":
            message = "Unknown parameter: 'response_format.schema'."
            return error(400, message, bad, "response_format.schema", "unknown_parameter")
        if response_format.get("type") == "json_schema":
            spec = response_format.get("json_schema") or {}
            if "name" not in spec or not isinstance(spec.get("schema"), dict):
                message = "Missing required parameter: 'response_format.json_schema.name'."
                return error(400, message, bad, "response_format", "missing_required_parameter")
            problem = spec.get("strict") and _strict_problem(spec["schema"])
            if problem:
                message = f"Invalid schema for response_format '{spec['name']}': {problem}"
                return error(400, message, bad, "response_format", None)
        return None

    def _completion(self, body: dict[str, Any], content: str) -> Answer:
        """A chat.completion carrying `content`, cut to the request's output limit."""
        prompt = tokens.count(prompt_text(body))
        produced = tokens.count(content)
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        finish = "stop"
        if limit is not None and produced > limit:
            content, produced, finish = tokens.truncate(content, limit), limit, "length"
        choice = {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": content,
                "refusal": None,
                "annotations": [],
            },
            "finish_reason": finish,
            "logprobs": None,
        }
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": produced,
            "total_tokens": prompt + produced,
            "prompt_tokens_details": {"cached_tokens": self._cached(body), "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        completion = {
            "id": f"chatcmpl-standin{next(_ids):08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", MODEL),
            "choices": [choice],
            "usage": usage,
            "service_tier": "default",
            "system_fingerprint": "fp_standin",
        }
        return 200, {}, completion

    def _cached(self, body: dict[str, Any]) -> int:
        """Prompt tokens a provider's prefix cache would serve: the longest prefix (the reply
        format, then the messages in order) shared with an earlier request."""
        if not self.prefix_cache:
            return 0
        text = json.dumps(body.get("response_format"), sort_keys=True) + prompt_text(body)
        with self._lock:
            shared = max((len(os.path.commonprefix([text, p])) for p in self._prefixes), default=0)
            self._prefixes.append(text)
        cached = tokens.count(text[:shared])
        return cached // 128 * 128 if cached >= 1024 else 0
