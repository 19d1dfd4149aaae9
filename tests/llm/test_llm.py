"""LLM.complete through the openai SDK against the LLM stand-in; prompts as versioned data."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from prhub import retry
from prhub.errors import ConfigError, LLMRequestError, LLMUnavailable
from prhub.llm import llm as llm_module
from prhub.llm.limits import ContextTooLong
from prhub.llm.llm import LLM
from prhub.llm.prompt import message_tokens
from prhub.model import ChunkNotes, DigestContent, Usage, WeeklyNarrative
from prhub.prepare import tokens
from tests.factories import (
    MESSAGES,
    OPENAI_KEY,
    VALID,
    MakeLLM,
    Rating,
    closed_port_url,
    digest_messages,
    prepared,
    settings,
)
from tests.standins import LLMStandIn
from tests.standins.llm import prompt_text

SERVER_ERROR = (500, {}, {"error": {"message": "The server had an error", "type": "server_error"}})


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the retry policy asked for, recorded instead of slept."""
    waits: list[float] = []
    real_call = retry.call

    def call(*args: Any, **kwargs: Any) -> Any:
        return real_call(*args, **kwargs, sleep=waits.append)

    monkeypatch.setattr(retry, "call", call)
    return waits


# Structured replies


def test_complete_returns_the_validated_model_and_its_usage(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    llm.script([("content", VALID)])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert rating == Rating(verdict="可跳过", score=2)
    [body] = llm.bodies
    # The stand-in reports these counts in the response's usage.
    assert usage == Usage(
        calls=1, tokens_in=tokens.count(prompt_text(body)), tokens_out=tokens.count(VALID)
    )


def test_request_asks_for_strict_json_schema(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    make_llm().complete(MESSAGES, Rating)
    [body] = llm.bodies
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Rating", "schema": Rating.model_json_schema(), "strict": True},
    }
    assert body["messages"] == MESSAGES


def test_json_object_mode_shows_an_example_not_the_schema(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    client = make_llm(response_mode="json_object")
    example = llm_module.schema_text(client.settings, DigestContent) or ""
    assert '"verdict": "<从 精读、快速浏览、可跳过 中选一个>"' in example
    assert "properties" not in example
    assert client.schema_text(DigestContent) == example
    [system, _] = digest_messages(prepared("body"), schema=example)
    assert example in system["content"]
    client.complete([system, MESSAGES[1]], DigestContent)
    [body] = llm.bodies
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == system  # the prompt carries the example: nothing added


def test_schema_text_is_none_when_the_endpoint_enforces_the_schema(make_llm: MakeLLM) -> None:
    assert llm_module.schema_text(make_llm().settings, Rating) is None
    assert llm_module.schema_text("json_schema", Rating) is None


def test_the_schema_sent_requires_every_field_and_has_no_defaults() -> None:
    for model in (DigestContent, ChunkNotes, WeeklyNarrative):
        schema = model.model_json_schema()
        for node in [schema, *schema.get("$defs", {}).values()]:
            assert node["required"] == list(node["properties"])
            assert node["additionalProperties"] is False
            assert not any("default" in sub for sub in node["properties"].values())


# Endpoint capabilities


def refused(bodies: list[dict[str, Any]]) -> int:
    return sum(b["response_format"]["type"] == "json_schema" for b in bodies)


@pytest.mark.parametrize(
    ("flavour", "learned"),
    [("deepseek", "json_object"), ("llama-cpp-python", "json_object_schema")],
)
def test_a_refused_json_schema_costs_one_request_a_run(
    flavour: str, learned: str, caplog: pytest.LogCaptureFixture
) -> None:
    with LLMStandIn(api_key=OPENAI_KEY, flavour=flavour, latency=0.05) as server:
        client = LLM(settings(server), stop=retry.StopToken())
        try:
            with ThreadPoolExecutor(8) as pool:
                replies = list(
                    pool.map(lambda _: client.complete(MESSAGES, DigestContent), range(8))
                )
        finally:
            client.close()
        bodies = server.bodies
    assert len(replies) == 8 and len(bodies) == 9
    assert refused(bodies) == 1  # the refusal is neither retried nor sent again by other threads
    assert client.mode == learned and client.stop_token and client.stop_token.retries == 0
    later = [b["response_format"] for b in bodies if b["response_format"]["type"] != "json_schema"]
    assert all(("schema" in f) == (learned == "json_object_schema") for f in later)
    warnings = [r for r in caplog.records if r.levelname == "WARNING" and r.name == "prhub"]
    assert len(warnings) == 1
    assert "gpt-4o-mini" in warnings[0].getMessage()
    assert "switched to json_object" in warnings[0].getMessage()
    assert not server.errors


def test_after_the_switch_the_prompt_gets_the_example() -> None:
    with LLMStandIn(flavour="deepseek") as server:
        client = LLM(settings(server, openai_api_key="sk-any"))
        try:
            client.complete(MESSAGES, DigestContent)  # rendered for json_schema: no example
        finally:
            client.close()
        first, second = server.bodies
    assert first["messages"] == MESSAGES
    system = second["messages"][0]["content"]
    assert system.startswith(MESSAGES[0]["content"])
    assert llm_module.schema_text("json_object", DigestContent) in system


def test_a_known_mode_is_used_from_the_first_request(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    client = make_llm(mode="json_object")
    client.complete(MESSAGES, DigestContent)
    assert [b["response_format"] for b in llm.bodies] == [{"type": "json_object"}]
    with pytest.raises(ConfigError, match="unknown response mode"):
        make_llm(mode="xml")


def test_a_refused_schema_key_falls_back_to_plain_json_object(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    client = make_llm(mode="json_object_schema")  # OpenAI does not take llama.cpp's key
    client.complete(MESSAGES, DigestContent)
    first, second = (b["response_format"] for b in llm.bodies)
    assert "schema" in first and second == {"type": "json_object"}
    assert client.mode == "json_object"


def test_a_refused_json_object_is_a_request_error(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    # LM Studio's wording: it has json_schema but no JSON mode.
    message = "'response_format.type' must be 'json_schema' or 'text'"
    llm.script([(400, {}, {"error": {"message": message, "type": "invalid_request_error"}})])
    with pytest.raises(LLMRequestError, match="refused response_format json_object") as error:
        make_llm(mode="json_object").complete(MESSAGES, Rating)
    assert "--response-mode json_object" not in str(error.value)
    assert len(llm.bodies) == 1


def test_usage_counted_locally_uses_the_configured_encoding(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "local",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": VALID},
                "finish_reason": "stop",
            }
        ],
    }
    llm.script([(200, {}, body)])
    _, usage = make_llm(encoding="cl100k_base").complete(MESSAGES, Rating)
    assert usage.tokens_in == message_tokens(MESSAGES, "cl100k_base")
    assert usage.tokens_out == tokens.count(VALID, "cl100k_base") != tokens.count(VALID)


def test_cached_prompt_tokens_are_read_from_usage(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    def completion(usage: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, Any]]:
        message = {"role": "assistant", "content": VALID}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        body = {"id": "c", "object": "chat.completion", "created": 1, "model": "m"}
        return 200, {}, {**body, "choices": [choice], "usage": usage}

    counts = {"prompt_tokens": 2000, "completion_tokens": 9}
    llm.script(
        [
            completion({**counts, "prompt_tokens_details": {"cached_tokens": 1536}}),  # OpenAI
            completion({**counts, "prompt_cache_hit_tokens": 1024}),  # DeepSeek
            completion({**counts, "prompt_tokens_details": None}),
            completion({**counts, "prompt_tokens_details": {"cached_tokens": 9999}}),
        ]
    )
    client = make_llm()
    cached = [client.complete(MESSAGES, Rating)[1].tokens_cached for _ in range(4)]
    assert cached == [1536, 1024, 0, 2000]  # never more than the prompt
    assert client.spent.tokens_cached == 1536 + 1024 + 2000


def test_a_malformed_cached_count_is_a_malformed_answer(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    message = {"role": "assistant", "content": VALID}
    usage = {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": "lots"}}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}], "usage": usage}
    llm.script([(200, {}, body)] * 3)
    with pytest.raises(LLMUnavailable):
        make_llm().complete(MESSAGES, Rating)


def test_digest_prompts_share_a_prefix_a_provider_can_cache() -> None:
    """The instructions come first and are the same for every PR: only the data differs."""
    first = digest_messages(prepared("first body"))
    second = digest_messages(prepared("another body").model_copy(update={"number": 2}))
    assert first[0] == second[0]  # the system prompt holds no PR data
    assert "#1" not in first[0]["content"] and "acme/rocket" not in first[0]["content"]


# Retries


def test_429_waits_as_retry_after_says(
    make_llm: MakeLLM, llm: LLMStandIn, sleeps: list[float]
) -> None:
    limited = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}
    llm.script([(429, {"Retry-After": "0.2"}, limited)])
    rating, usage = make_llm().complete(MESSAGES, Rating)
    assert isinstance(rating, Rating) and usage.calls == 1
    assert sleeps == [0.2]
    assert len(llm.bodies) == 2


def test_a_500_is_retried(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([SERVER_ERROR])
    client = make_llm()
    rating, _ = client.complete(MESSAGES, Rating)
    assert isinstance(rating, Rating)
    assert len(llm.bodies) == 2
    assert client.stop_token is not None and client.stop_token.retries == 1


def test_a_timeout_is_retried(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([("sleep", 1.0)])
    client = make_llm(timeout=0.3)
    rating, _ = client.complete(MESSAGES, Rating)
    assert isinstance(rating, Rating)
    assert len(llm.bodies) == 2
    assert client.stop_token is not None and client.stop_token.retries == 1


def test_a_timeout_names_prhub_timeout(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([("sleep", 1.0)])
    with pytest.raises(LLMUnavailable, match="PRHUB_TIMEOUT"):
        make_llm(timeout=0.3, max_attempts=1).complete(MESSAGES, Rating)


def test_persistent_failures_give_up_after_max_attempts(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([SERVER_ERROR] * 6)
    with pytest.raises(LLMUnavailable, match="kept failing"):
        make_llm(max_attempts=4).complete(MESSAGES, Rating)
    assert len(llm.bodies) == 4


def test_the_sdk_does_not_retry_on_its_own(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    llm.script([SERVER_ERROR])
    with pytest.raises(LLMUnavailable):
        make_llm(max_attempts=1).complete(MESSAGES, Rating)
    assert len(llm.bodies) == 1


def test_unreachable_endpoint(make_llm: MakeLLM) -> None:
    with pytest.raises(LLMUnavailable, match="unreachable"):
        make_llm(openai_base_url=closed_port_url()).complete(MESSAGES, Rating)


# Refusals


def test_a_rejected_key_names_openai_api_key(make_llm: MakeLLM, llm: LLMStandIn) -> None:
    with pytest.raises(LLMRequestError, match="OPENAI_API_KEY"):
        make_llm(openai_api_key="sk-wrong").complete(MESSAGES, Rating)
    assert len(llm.bodies) == 1  # not retried


def test_a_login_in_the_base_url_is_named_when_the_key_is_rejected(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    url = llm.url.replace("http://", "http://gateway:hunter2@")
    with pytest.raises(LLMRequestError, match="login in OPENAI_BASE_URL") as caught:
        make_llm(openai_base_url=url).complete(MESSAGES, Rating)
    assert "hunter2" not in str(caught.value)
    assert llm.requests[0]["headers"]["authorization"].startswith("Basic ")


def test_a_query_in_the_base_url_goes_with_every_request(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    client = make_llm(openai_base_url=f"{llm.url}?api-version=2024-06-01&api-key=k")
    client.complete(MESSAGES, Rating)
    client.complete(MESSAGES, Rating)
    assert [r["path"] for r in llm.requests] == ["/v1/chat/completions"] * 2
    assert all(
        r["query"] == {"api-version": ["2024-06-01"], "api-key": ["k"]} for r in llm.requests
    )


def test_a_missing_key_is_a_config_error(llm: LLMStandIn) -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LLM(settings(llm, openai_api_key=None))


def test_context_length_refusal_is_context_too_long() -> None:
    with LLMStandIn(api_key=OPENAI_KEY, context_limit=5) as small:
        client = LLM(settings(small))
        try:
            with pytest.raises(ContextTooLong, match="maximum context length"):
                client.complete(MESSAGES, Rating)
        finally:
            client.close()
    assert len(small.bodies) == 1  # not retried
    assert not small.errors


def test_prompt_over_the_input_budget_fails_before_any_request(
    make_llm: MakeLLM, llm: LLMStandIn
) -> None:
    long = [{"role": "user", "content": "word " * 200}]
    with pytest.raises(ContextTooLong, match="input budget 50"):
        make_llm(input_budget=50).complete(long, Rating)
    assert llm.requests == []


def test_a_request_waiting_for_a_slot_is_not_sent_once_the_run_stopped() -> None:
    import threading
    import time

    with LLMStandIn(latency=0.5, responder=lambda body: VALID) as slow:
        counter = retry.StopToken()
        client = LLM(settings(slow, jobs=1), stop=counter, mode="json_schema")  # no probe
        outcomes: list[object] = []

        def ask() -> None:
            try:
                outcomes.append(client.complete(MESSAGES, Rating)[0])
            except retry.Halted as exc:
                outcomes.append(exc)

        first = threading.Thread(target=ask)
        first.start()
        while not slow.bodies:  # the first holds the only slot
            time.sleep(0.01)
        second = threading.Thread(target=ask)
        second.start()
        time.sleep(0.1)
        counter.stop()  # an error elsewhere ends the run while the second waits
        first.join(5)
        second.join(5)
        client.close()
        assert len(slow.bodies) == 1
    assert sorted(type(o).__name__ for o in outcomes) == ["Halted", "Rating"]
