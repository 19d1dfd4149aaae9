"""Every secret prhub is given stays masked whatever a server echoes of it: GitHub's REST and
GraphQL errors, the LLM endpoint's and the Batch API's, each chat webhook's refusals, in JSON
and in plain text; nothing of them in any line printed, logged, written or stored."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from tests.factories import GITHUB_TOKEN, OPENAI_KEY, cli_env, prhub, responder
from tests.standins import GitHubStandIn
from tests.standins.batch import BatchStandIn
from tests.standins.server import Answer
from tests.standins.webhook import SECRET, WebhookStandIn

WEEK = ("weekly", "--week", "31", "--year", "2026", "--verbose")
PR = ("summarize", "--pr", "101", "--verbose")
QUERY_KEY = "qk-PRHUBqueryKEY0123456789"  # an endpoint's key in its URL's query (Azure's api-key)


def told(request: dict[str, Any]) -> str:
    """What an echoing server says back: the request's credentials, wherever they were."""
    query = "&".join(f"{k}={v[0]}" for k, v in request["query"].items())
    return (
        f"denied for Authorization: {request['headers'].get('authorization')} "
        f"on {request['method']} {request['path']}?{query}"
    )


def rest(status: int) -> Callable[[dict[str, Any]], Answer]:
    return lambda r: (status, {}, {"message": told(r), "documentation_url": "https://docs"})


def graphql(request: dict[str, Any]) -> Answer:
    return 200, {}, {"data": None, "errors": [{"type": "FORBIDDEN", "message": told(request)}]}


def openai_error(status: int) -> Callable[[dict[str, Any]], Answer]:
    return lambda r: (status, {}, {"error": {"message": told(r), "type": "invalid_request_error"}})


def plain(status: int) -> Callable[[dict[str, Any]], Answer]:
    """A web server's own page, as a proxy in front of a webhook answers: Cannot POST /…"""
    return lambda r: (status, {"Content-Type": "text/plain"}, f"Cannot POST {told(r)}".encode())


def chat_json(request: dict[str, Any]) -> Answer:
    said = f"invalid webhook {told(request)}"
    return 200, {}, {"code": 19001, "msg": said, "errcode": 93000, "errmsg": said}


@pytest.fixture
def llm() -> Iterator[BatchStandIn]:
    with BatchStandIn(api_key=OPENAI_KEY) as server:
        server.responder = responder
        yield server
        gc.collect()
    assert not server.errors, server.errors


def test_no_secret_a_server_echoes_reaches_any_output_log_file_or_store(
    github: GitHubStandIn,
    llm: BatchStandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.INFO)  # what --verbose shows
    store = tmp_path / "store.db"
    env = cli_env(github, f"{llm.url}?api-key={QUERY_KEY}", store, PRHUB_REPO="acme/rocket")
    results: list[Result] = []

    def run(*args: str, **extra: str) -> None:
        results.append(prhub({**env, **extra}, *args))

    # GitHub's REST API: a bad token, no access, a refused request, a failing server.
    for status in (401, 403, 422, 500):
        github.script(r"/pulls/101$", [rest(status)] * (2 if status == 500 else 1))
        run(*PR)
    # GitHub's GraphQL API, posting the week's discussion.
    github.script(r"^/graphql$", [graphql, rest(401)])
    run(*WEEK, "--discuss", "General")
    run(*WEEK, "--discuss", "General", "--refresh")
    # The LLM endpoint: a refused request, a failing server.
    for status in (400, 500):
        llm.script([openai_error(status)] * (2 if status == 500 else 1))
        run(*PR, "--refresh")
    # The Batch API: a refused upload, then error lines that echo the key.
    llm.script_path(r"^/v1/files$", [openai_error(400)])
    run(*WEEK, "--batch", "--refresh", PRHUB_STORE=str(tmp_path / "batch.db"))
    llm.refuse, llm.answer_echo = 2, True
    for _ in range(2):
        run(*WEEK, "--batch", PRHUB_STORE=str(tmp_path / "batch.db"))
    # Each chat webhook, refusing in plain text and in JSON.
    hooks = []
    for service in ("feishu", "dingtalk", "wecom", "slack"):
        with WebhookStandIn(service) as hook:
            hooks.append(hook.hook)
            hook.script([plain(404), chat_json])
            for _ in range(2):
                run(*WEEK, PRHUB_NOTIFY=hook.hook, PRHUB_NOTIFY_FORMAT=service)
    run("runs", "--limit", "100")
    run("runs", "--limit", "100", PRHUB_STORE=str(tmp_path / "batch.db"))

    # Every surface did echo, and failed for it: the runs above tested something.
    codes = [r.exit_code for r in results]
    assert codes == [4, 4, 8, 8, *[19] * 2, 10, 9, 10, 0, 10, *[19] * 8, 0, 0], codes
    echoed = [r.stderr for r in results if "denied for Authorization: " in r.stderr]
    assert len(echoed) >= 15, codes

    secrets = {"GitHub token": GITHUB_TOKEN, "API key": OPENAI_KEY, "key in URL": QUERY_KEY}
    secrets |= {"webhook secret": SECRET, **{f"webhook {i}": h for i, h in enumerate(hooks)}}
    texts = {f"run {i} stdout": r.stdout for i, r in enumerate(results)}
    texts |= {f"run {i} stderr": r.stderr for i, r in enumerate(results)}
    texts["log"] = caplog.text
    written = {str(p): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert any(name.endswith(".db") for name in written) and any(".md" in n for n in written)
    hits = [
        f"{name} in {where}"
        for name, secret in secrets.items()
        for where, text in [*texts.items(), *written.items()]
        if (secret.encode() if isinstance(text, bytes) else secret) in text
    ]
    assert hits == [], f"{len(hits)} hits:\n" + "\n".join(hits)
