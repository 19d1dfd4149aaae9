"""The LLM stage: versioned prompts, one OpenAI-compatible client, validated structured output."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import jinja2
import openai
from pydantic import BaseModel, ValidationError

from prhub import retry
from prhub.config import Settings, shown_url
from prhub.errors import ConfigError, LLMInvalidReply, LLMRequestError, LLMUnavailable
from prhub.model import Usage
from prhub.prepare.tokens import count

M = TypeVar("M", bound=BaseModel)

_FENCES = re.compile(r"<(/?)(pr_title|pr_body|diff|notes|file_index|digests|facts)>", re.IGNORECASE)


def untrusted(text: str) -> str:
    """PR text with our fence tags defused, so it cannot close the fence it sits in."""
    return _FENCES.sub(r"<\1\2​>", text or "")


def default_prompt_dir() -> Path:
    """Prompts shipped in the wheel, else the source tree's prompts/ folder."""
    packaged = Path(__file__).parent / "prompts"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[1] / "prompts"


@dataclass(frozen=True)
class Prompt:
    """One version of one task's system and user templates."""

    task: str
    version: str
    system: jinja2.Template
    user: jinja2.Template
    source: str  # both templates' text: what a cache key must name, wherever they came from
    folder: Path

    @property
    def id(self) -> str:
        return f"{self.task}@{self.version}"

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:12]

    def messages(self, **variables: Any) -> list[dict[str, str]]:
        try:
            return [
                {"role": "system", "content": self.system.render(**variables).strip()},
                {"role": "user", "content": self.user.render(**variables).strip()},
            ]
        except jinja2.TemplateError as exc:  # a user's own version naming what we do not pass
            raise ConfigError(
                f"prompt {self.id} in {self.folder} failed to render: {exc}"
            ) from None


def _folders(task: str, prompt_dir: Path | None) -> list[Path]:
    """Where a task's templates are looked for: the user's folder first, then the shipped one."""
    return [*([prompt_dir / task] if prompt_dir else []), default_prompt_dir() / task]


def versions(task: str, prompt_dir: Path | None = None) -> list[str]:
    """The versions of `task` found in the prompt folders, oldest first."""
    found = {
        p.name.split(".")[0] for f in _folders(task, prompt_dir) for p in f.glob("v*.system.j2")
    }
    return sorted(found, key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)


def tasks(prompt_dir: Path | None = None) -> list[str]:
    """Every task with at least one prompt version."""
    roots = [*([prompt_dir] if prompt_dir else []), default_prompt_dir()]
    return sorted({p.parent.name for root in roots for p in root.glob("*/v*.system.j2")})


@cache
def load_prompt(task: str, version: str | None = None, prompt_dir: Path | None = None) -> Prompt:
    """The given version of a task's prompt, or its latest; compiled once a process."""
    known = versions(task, prompt_dir)
    version = version or (known[-1] if known else None)
    if version not in known:
        where = ", ".join(str(f) for f in _folders(task, prompt_dir))
        raise ConfigError(f"no prompt {task}@{version} in {where}")
    folder = next(f for f in _folders(task, prompt_dir) if (f / f"{version}.system.j2").is_file())
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["untrusted"] = untrusted
    names = (f"{version}.system.j2", f"{version}.user.j2")
    try:
        source = "".join((folder / name).read_text(encoding="utf-8") for name in names)
        system, user = (env.get_template(name) for name in names)
    except (OSError, jinja2.TemplateError) as exc:
        raise ConfigError(f"prompt {task}@{version} in {folder} is unusable: {exc}") from None
    return Prompt(task, version, system, user, source, folder)


def message_tokens(messages: list[dict[str, str]], encoding: str) -> int:
    """Prompt tokens of a chat request, as the budget counts them."""
    return count("\n".join(m["content"] for m in messages), encoding)


def schema_text(settings: Settings, schema: type[BaseModel]) -> str | None:
    """The JSON Schema to spell out in the prompt, for endpoints without json_schema mode."""
    if settings.response_mode == "json_schema":
        return None
    return json.dumps(schema.model_json_schema(), ensure_ascii=False, indent=1)


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
_CONTEXT_LIMIT = re.compile(r"maximum context length is (\d+)|context size \((\d+) tokens\)")
_PROMPT_USED = re.compile(
    r"(\d+) in the messages|messages resulted in (\d+) tokens|request \((\d+) tokens\)"
)
_REPLY_RESERVED = re.compile(r"(\d+) in the completion")
_CUT_OFF = (
    "上一条回复超出了 {limit} 个 token 的输出上限，在中途被截断了。"
    "请重新输出完整的 JSON 对象，并写得更短：每个字段只写最要紧的内容，列表只留最重要的几项。"
    "只输出 JSON，不要其他文字。"
)


class LLM:
    """Asks an OpenAI-compatible endpoint for replies that validate against a pydantic model."""

    def __init__(
        self,
        settings: Settings,
        client: openai.OpenAI | None = None,
        counter: retry.RetryCounter | None = None,
    ) -> None:
        if client is None:
            if not settings.openai_api_key:
                raise ConfigError(
                    "OPENAI_API_KEY is not set: export it (any value for a local server)"
                )
            client = openai.OpenAI(
                api_key=settings.openai_api_key.get_secret_value(),
                base_url=settings.openai_base_url,
                max_retries=0,  # one policy owns retries: prhub.retry
                timeout=settings.timeout,
            )
        self.settings = settings
        self.client = client
        self.counter = counter

    def close(self) -> None:
        self.client.close()

    def complete(self, messages: list[dict[str, str]], schema: type[M]) -> tuple[M, Usage]:
        """A reply validated as `schema`; one corrective retry when it does not validate."""
        tokens = message_tokens(messages, self.settings.encoding)
        if tokens > self.settings.input_budget:
            raise ContextTooLong(
                f"prompt of {tokens} tokens exceeds the input budget {self.settings.input_budget}"
            )
        usage = Usage()
        reply, call_usage, cut = self._ask(messages, schema)
        usage += call_usage
        try:
            return _parse(reply, schema), usage
        except ValueError as problem:
            if cut:  # the reply hit max_tokens: the fix is a shorter reply, not a corrected one
                correction = _CUT_OFF.format(limit=self.settings.output_tokens)
            else:
                correction = (
                    f"上一条回复没有通过校验：\n{problem}\n"
                    "请修正后重新输出完整的 JSON 对象，只输出 JSON，不要其他文字。"
                )
            retry_messages = [
                *messages,
                {"role": "assistant", "content": reply},
                {"role": "user", "content": correction},
            ]
            reply, call_usage, cut = self._ask(retry_messages, schema)
            usage += call_usage
            try:
                return _parse(reply, schema), usage
            except ValueError as again:
                if cut:
                    raise LLMInvalidReply(
                        "the model's reply was cut off at the output limit "
                        f"({self.settings.output_tokens} tokens) twice: raise "
                        "PRHUB_OUTPUT_TOKENS or use a model that writes less"
                    ) from None
                first = str(again).splitlines()[0]
                raise LLMInvalidReply(
                    f"the model's reply failed validation twice ({first}); try another model "
                    "or --response-mode json_object"
                ) from None

    def _ask(
        self, messages: list[dict[str, str]], schema: type[BaseModel]
    ) -> tuple[str, Usage, bool]:
        """The reply's text, its usage, and whether it was cut off at the output limit."""
        if self.settings.response_mode == "json_schema":
            response_format: Any = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.__name__,
                    "schema": schema.model_json_schema(),
                    "strict": True,
                },
            }
        else:
            response_format = {"type": "json_object"}

        def send() -> Any:
            return self.client.chat.completions.create(
                model=self.settings.model,
                messages=messages,  # type: ignore[arg-type]
                response_format=response_format,
                max_tokens=self.settings.output_tokens,
                temperature=0.2,
            )

        try:
            response = retry.call(
                send, self.settings, _retry_hint, what="LLM call", counter=self.counter
            )
        except openai.APIStatusError as exc:
            raise self._translate(exc, messages) from None
        except openai.APIConnectionError as exc:
            kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "is unreachable"
            raise LLMUnavailable(
                f"the LLM endpoint {self._where()} {kind}: check OPENAI_BASE_URL and rerun"
            ) from None
        choice = response.choices[0]
        content = choice.message.content or ""
        usage = response.usage
        return (
            content,
            Usage(
                calls=1,
                tokens_in=usage.prompt_tokens if usage else message_tokens(messages, "o200k_base"),
                tokens_out=usage.completion_tokens if usage else count(content),
            ),
            choice.finish_reason == "length",
        )

    def _where(self) -> str:
        return shown_url(self.settings.openai_base_url) or "https://api.openai.com/v1"

    def _translate(self, exc: openai.APIStatusError, messages: list[dict[str, str]]) -> Exception:
        detail = _error_message(exc)
        code = _error_code(exc)
        if exc.status_code in (401, 403):
            return LLMRequestError(
                f"the LLM endpoint rejected the API key ({exc.status_code}): check OPENAI_API_KEY"
            )
        if exc.status_code == 404:
            return LLMRequestError(
                f"model {self.settings.model!r} not found at {self._where()} ({detail}): "
                "check --model / PRHUB_MODEL"
            )
        if "insufficient_quota" in code:
            return LLMRequestError(
                f"the LLM account is out of quota ({detail}): check its plan and billing"
            )
        if exc.status_code == 429:
            return LLMUnavailable(
                f"the LLM endpoint kept refusing with 429 ({detail}): rerun later, or lower --jobs"
            )
        if exc.status_code >= 500:
            return LLMUnavailable(
                f"the LLM endpoint kept failing ({exc.status_code}: {detail}); rerun later"
            )
        if "context" in code or re.search(r"context.{0,20}(length|size|window)", detail.lower()):
            limit, used, reserved = (
                _first_number(pattern, detail)
                for pattern in (_CONTEXT_LIMIT, _PROMPT_USED, _REPLY_RESERVED)
            )
            return ContextTooLong(
                f"the prompt is too long for the model: {detail}",
                sent=message_tokens(messages, self.settings.encoding),
                limit=limit,
                used=used,
                reserved=self.settings.output_tokens if reserved is None else reserved,
            )
        if "response_format" in detail or "json_schema" in detail:
            return LLMRequestError(
                f"the endpoint refused structured output ({detail}): "
                "try --response-mode json_object"
            )
        return LLMRequestError(
            f"the LLM endpoint refused the request ({exc.status_code}: {detail})"
        )


def _parse(reply: str, schema: type[M]) -> M:
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:  # some servers wrap JSON in a fence even in JSON mode
        text = fenced.group(1)
    try:
        return schema.model_validate_json(text)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()[:10]
        ]
        raise ValueError("\n".join(problems)) from None


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    message = error.get("message") if isinstance(error, dict) else None
    return str(message or exc.message)[:300]


def _error_code(exc: openai.APIStatusError) -> str:
    """The error's code or type (e.g. context_length_exceeded), lowercased; "" if none."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body)
    if not isinstance(error, dict):
        return ""
    return f"{error.get('code') or ''} {error.get('type') or ''}".strip().lower()


def _first_number(pattern: re.Pattern[str], text: str) -> int | None:
    match = pattern.search(text)
    return int(next(g for g in match.groups() if g)) if match else None


def _retry_hint(exc: BaseException) -> float | None:
    """Seconds to wait before retrying an LLM failure, or None when retrying cannot help."""
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return 0.0
    if isinstance(exc, openai.APIStatusError) and "insufficient_quota" in _error_code(exc):
        return None  # a 429 that waiting does not cure
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429 or exc.status_code >= 500 or exc.status_code == 408:
            headers = exc.response.headers
            if headers.get("retry-after-ms"):
                return float(headers["retry-after-ms"]) / 1000
            wait = retry.retry_after(headers.get("retry-after"))
            return 0.0 if wait is None else wait
    return None
