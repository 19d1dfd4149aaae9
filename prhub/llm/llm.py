"""The LLM stage: one OpenAI-compatible client, endpoint capabilities, validated replies."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from contextlib import nullcontext
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel

from prhub import retry
from prhub.config import Settings
from prhub.defaults import OPENAI_URL, RESPONSE_MODES
from prhub.errors import ConfigError, LLMInvalidReply, LLMRequestError, LLMUnavailable, set_secret
from prhub.llm.limits import (
    CONTEXT_LIMIT,
    PROMPT_USED,
    REPLY_RESERVED,
    ContextTooLong,
    first_number,
)
from prhub.llm.prompt import afresh, message_tokens
from prhub.llm.reply import ReplyError, cached_tokens, example_text, read, with_example
from prhub.logmask import shown_url
from prhub.model import Usage
from prhub.prepare.tokens import count

if TYPE_CHECKING:
    import openai

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger("prhub")

# How the reply's shape is asked for: the modes a user may choose, then the one prhub learns.
# json_schema: the endpoint enforces the schema. json_object: JSON mode; the prompt carries an
# example of the reply. json_object_schema: JSON mode plus the schema in llama-cpp-python's own
# `schema` key, which it enforces with a grammar (OpenAI refuses that key, so it is sent only
# where it is known).
MODES = (*RESPONSE_MODES, "json_object_schema")
# Where a mode goes when the endpoint refuses it.
_FALLBACK = {"json_schema": "json_object", "json_object_schema": "json_object"}
# llama-cpp-python's server refuses json_schema with this and accepts json_object with `schema`.
_LLAMA_CPP_PYTHON = re.compile(r"Input should be 'text' or 'json_object'")


def schema_text(mode: Settings | str, schema: type[BaseModel]) -> str | None:
    """The prompt's `schema` variable: an example reply in JSON modes, None where the endpoint
    enforces the schema. `mode` is a mode name or the settings whose response_mode applies."""
    name = mode.response_mode if isinstance(mode, Settings) else mode
    if name == "json_schema":
        return None
    return example_text(schema)


_CUT_OFF = (
    "上一条回复超出了 {limit} 个 token 的输出上限，在中途被截断了。"
    "请重新输出完整的 JSON 对象，并写得更短：每个字段只写最要紧的内容，列表只留最重要的几项。"
    "只输出 JSON，不要其他文字。"
)


class LLM:
    """Asks an OpenAI-compatible endpoint for replies that validate against a pydantic model.

    `mode` is how the reply's shape is asked for (see MODES): give the one learned in an earlier
    run, else settings.response_mode is tried. An endpoint that refuses it moves this object to
    a JSON mode for the rest of the run; read `mode` at the end to remember it.
    """

    def __init__(
        self,
        settings: Settings,
        client: openai.OpenAI | None = None,
        stop: retry.StopToken | None = None,
        mode: str | None = None,
    ) -> None:
        if mode is not None and mode not in MODES:
            raise ConfigError(f"unknown response mode {mode!r}: choose one of {', '.join(MODES)}")
        self.settings = settings
        if client is None:
            if not settings.openai_api_key:
                raise ConfigError(
                    f"OPENAI_API_KEY is not set: {set_secret('OPENAI_API_KEY')} "
                    "(any value for a local server)"
                )
            base_url, query = _http().endpoint(settings.openai_base_url)
            client = _sdk().OpenAI(
                api_key=settings.openai_api_key.get_secret_value(),
                base_url=base_url,
                default_query=query,
                max_retries=0,  # one policy owns retries: prhub.retry
                timeout=settings.timeout,
                # Checks every answer; settings.timeout bounds the whole answer, not each read.
                http_client=_http().http_client(settings.timeout, self._where()),
            )
        self.client = client
        self.stop_token = stop
        self._mode: str = mode or settings.response_mode
        # A remembered mode is trusted; a tried one is probed by one call at a time, so that
        # many threads starting at once cost at most one refused request.
        self._known = mode is not None
        self._probe = threading.Lock()
        # Why the probe failed when the endpoint did not answer it: the calls waiting behind
        # it fail alike at once, rather than each waiting out its own timeouts in turn.
        self._down: str | None = None
        self._lock = threading.Lock()
        # --jobs bounds the requests in flight across the run, map calls of big PRs included;
        # a request waiting for a slot is not yet sent, so its deadline has not started.
        self._slots = threading.BoundedSemaphore(settings.jobs)
        self.spent = Usage()  # every answered request of this client, rejected replies too
        self.answered: Callable[[int], None] = lambda calls: None  # after each answer, for progress

    @property
    def mode(self) -> str:
        """How the reply's shape is asked for now; changes at most twice a run."""
        return self._mode

    def schema_text(self, schema: type[BaseModel]) -> str | None:
        """The prompt's `schema` variable for the mode in use."""
        return schema_text(self._mode, schema)

    def close(self) -> None:
        self.client.close()

    def complete(
        self, messages: list[dict[str, str]], schema: type[M], *, correction: bool = False
    ) -> tuple[M, Usage]:
        """A reply validated as `schema`; one corrective retry when it does not validate.

        `correction`: the call asks again after a reply failed a check (batch mode may send
        such calls online)."""
        tokens = message_tokens(messages, self.settings.encoding)
        if tokens > self.settings.input_budget:
            raise ContextTooLong(
                f"prompt of {tokens} tokens exceeds the input budget {self.settings.input_budget}"
            )
        usage, sent, tries, first = Usage(), messages, 0, None
        while True:
            reply, call_usage, cut = self._ask(sent, schema, correction or tries > 0)
            usage += call_usage
            try:
                return read(reply, schema), usage
            except ReplyError as problem:
                self._log_rejected(reply, problem)
                # A correction answered with the very reply it corrects is asked once more
                # afresh, without that reply in the context the model keeps copying.
                if tries == 1 and reply == first and not cut:
                    sent, tries = afresh(messages), 2
                    continue
                if tries:
                    raise self._invalid(problem, cut) from None
                sent = [
                    *messages,
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": self._correction(problem, cut)},
                ]
                tries, first = 1, reply

    def _correction(self, problem: ReplyError, cut: bool) -> str:
        if cut:  # the reply hit max_tokens: the fix is a shorter reply, not a corrected one
            return _CUT_OFF.format(limit=self.settings.output_tokens)
        return (
            f"上一条回复没有通过校验：\n{problem}\n"
            "请修正后重新输出完整的 JSON 对象，只输出 JSON，不要其他文字。"
        )

    def _invalid(self, problem: ReplyError, cut: bool) -> LLMInvalidReply:
        if cut:
            return LLMInvalidReply(
                "the model's reply was cut off at the output limit "
                f"({self.settings.output_tokens} tokens) twice: raise "
                "PRHUB_OUTPUT_TOKENS or use a model that writes less"
            )
        first = str(problem).splitlines()[0]
        other = " or --response-mode json_object" if self._mode == "json_schema" else ""
        return LLMInvalidReply(
            f"the model's reply failed validation twice ({first}); try another "
            f"model{other}; --verbose logs the replies"
        )

    def _log_rejected(self, reply: str, problem: ReplyError) -> None:
        log.info(
            "reply of %s rejected: %s\n--- reply, first 2000 characters ---\n%s",
            self.settings.model,
            problem.detail,
            reply[:2000],
        )

    def _ask(
        self, messages: list[dict[str, str]], schema: type[BaseModel], correction: bool = False
    ) -> tuple[str, Usage, bool]:
        """The reply's text, its usage, and whether it was cut off at the output limit."""
        response, sent = self._request(messages, schema, correction)
        choice = response.choices[0]
        # Only the answer: reasoning servers put their thinking in a reasoning_content field.
        content = choice.message.content or ""
        usage = response.usage
        encoding = self.settings.encoding
        tokens_in = getattr(usage, "prompt_tokens", None)  # some servers leave either out
        tokens_out = getattr(usage, "completion_tokens", None)
        tokens_in = message_tokens(sent, encoding) if tokens_in is None else tokens_in
        call = Usage(
            calls=1,
            tokens_in=tokens_in,
            tokens_out=count(content, encoding) if tokens_out is None else tokens_out,
            tokens_cached=min(cached_tokens(usage), tokens_in),
        )
        self.answered(self._spend(call))
        return content, call, choice.finish_reason == "length"

    def _spend(self, call: Usage) -> int:
        """Counts an answered call in what this client spent; the calls so far."""
        with self._lock:
            self.spent += call
            return self.spent.calls

    def _request(
        self, messages: list[dict[str, str]], schema: type[BaseModel], correction: bool = False
    ) -> tuple[Any, list[dict[str, str]]]:
        """The endpoint's response and the messages sent, in the first mode it accepts."""
        while True:
            probing = not self._known and self._mode in _FALLBACK
            with self._probe if probing else nullcontext():
                if probing and self._known:
                    continue  # learned while this call waited
                if probing and self._down:
                    raise LLMUnavailable(self._down)
                mode = self._mode
                sent = messages if mode == "json_schema" else with_example(messages, schema)
                try:
                    response = self._send(sent, schema, mode, correction)
                except _sdk().APIStatusError as exc:
                    if self._fall_back(mode, exc):
                        continue
                    raise self._translate(exc, messages) from None
                except LLMUnavailable as exc:
                    if probing:
                        self._down = str(exc)
                    raise
                self._known = True
                return response, sent

    def _send(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        mode: str,
        correction: bool = False,
    ) -> Any:
        wire = schema.model_json_schema()
        response_format: Any = {"type": "json_object"}
        if mode == "json_schema":
            spec = {"name": schema.__name__, "schema": wire, "strict": True}
            response_format = {"type": "json_schema", "json_schema": spec}
        elif mode == "json_object_schema":
            response_format["schema"] = wire

        def send() -> Any:
            with self._slots:
                retry.check(self.stop_token)  # the run may have stopped while this one waited
                return self._create(messages, response_format, correction)

        try:
            return retry.call(
                send, self.settings, _http().retry_hint, what="LLM call", stop=self.stop_token
            )
        except _sdk().APITimeoutError:
            raise LLMUnavailable(
                f"the LLM endpoint {self._where()} did not answer in full within "
                f"{self.settings.timeout:g} s: raise PRHUB_TIMEOUT (local models may need "
                "minutes per prompt) or check the server"
            ) from None
        except _sdk().APIConnectionError:
            raise LLMUnavailable(
                f"the LLM endpoint {self._where()} is unreachable: check OPENAI_BASE_URL and rerun"
            ) from None

    def _create(
        self, messages: list[dict[str, str]], response_format: Any, correction: bool = False
    ) -> Any:
        return self.client.chat.completions.create(**self.body(messages, response_format))

    def body(self, messages: list[dict[str, str]], response_format: Any) -> dict[str, Any]:
        """The chat completion request's parameters, as sent online or written into a batch."""
        return {
            "model": self.settings.model,
            "messages": messages,
            "response_format": response_format,
            "max_tokens": self.settings.output_tokens,
            "temperature": 0.2,
        }

    def _fall_back(self, mode: str, exc: openai.APIStatusError) -> bool:
        """Moves off a response_format the endpoint refused; False when it refused no such thing
        or there is nothing left to try."""
        if not _http().refuses_format(exc):
            return False
        with self._lock:
            if self._mode != mode:
                return True  # another call has moved on already: try its mode
            if mode not in _FALLBACK:
                return False
            grammar = mode == "json_schema" and _LLAMA_CPP_PYTHON.search(_http().detail(exc))
            self._mode = "json_object_schema" if grammar else _FALLBACK[mode]
            self._known = False
        log.warning(
            "model %s at %s refused response_format %s (%s: %s); prhub switched to %s for this run",
            self.settings.model,
            self._where(),
            mode,
            exc.status_code,
            _http().error_message(exc)[:200],
            "json_object with the schema in its `schema` key" if grammar else "json_object",
        )
        return True

    def _where(self) -> str:
        return shown_url(self.settings.openai_base_url) or OPENAI_URL

    def _translate(self, exc: openai.APIStatusError, messages: list[dict[str, str]]) -> Exception:
        detail = _http().error_message(exc)
        code = _http().error_code(exc)
        if exc.status_code in (401, 403):
            # httpx sends a URL's login in the key's place (the SDK hides the header it sent)
            url = urlsplit(self.settings.openai_base_url or "")
            login = bool(url.username or url.password)
            return LLMRequestError(
                f"the LLM endpoint rejected the API key ({exc.status_code}): check OPENAI_API_KEY"
                + ("; the login in OPENAI_BASE_URL was sent instead of it" if login else "")
            )
        if exc.status_code in (404, 405, 501) and not _names_model(exc, detail):
            return LLMRequestError(
                f"{self._where()} answered {exc.status_code} ({detail[:120]}) to a chat "
                "completion: is OPENAI_BASE_URL an OpenAI-compatible API? (it usually ends in /v1)"
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
        if _http().refuses_format(exc):
            return LLMRequestError(
                f"model {self.settings.model!r} at {self._where()} refused response_format "
                f"{self._mode} ({exc.status_code}: {detail}): use a server with JSON mode"
            )
        if exc.status_code >= 500:
            return LLMUnavailable(
                f"the LLM endpoint kept failing ({exc.status_code}: {detail}); rerun later"
            )
        if "context" in code or re.search(r"context.{0,20}(length|size|window)", detail.lower()):
            limit, used, reserved = (
                first_number(pattern, detail)
                for pattern in (CONTEXT_LIMIT, PROMPT_USED, REPLY_RESERVED)
            )
            return ContextTooLong(
                f"the prompt is too long for the model: {detail}",
                sent=message_tokens(messages, self.settings.encoding),
                limit=limit,
                used=used,
                reserved=self.settings.output_tokens if reserved is None else reserved,
            )
        return LLMRequestError(
            f"the LLM endpoint refused the request ({exc.status_code}: {detail})"
        )


def _names_model(exc: openai.APIStatusError, detail: str) -> bool:
    """Whether an error is an API's answer about the model, not a server that is no such API."""
    return "model" in _http().error_code(exc) or "model" in detail.lower()


def _sdk() -> ModuleType:
    """The openai SDK, imported at first use: a run the store answers whole never loads it."""
    import openai

    return openai


def _http() -> ModuleType:
    """The HTTP layer under the SDK, imported with it."""
    from prhub.llm import llm_http

    return llm_http
