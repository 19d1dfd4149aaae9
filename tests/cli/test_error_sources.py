"""Errors that name their real source, through the CLI and the stand-ins."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.factories import assert_fails, cli_env, summarize
from tests.standins import GitHubStandIn


@pytest.fixture
def not_an_api(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """`python -m http.server`: a web server that answers POST with 501."""
    seen: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_request(self, code: object = "-", size: object = "-") -> None:
            seen.append(self.command)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_an_endpoint_that_is_no_llm_api_is_a_configuration_error(github, llm, tmp_path, not_an_api):
    url, seen = not_an_api
    env = cli_env(github, llm, tmp_path / "s.db", OPENAI_BASE_URL=url, PRHUB_MAX_ATTEMPTS="5")
    started = time.monotonic()
    result = summarize(env)
    assert_fails(result, 10, "is OPENAI_BASE_URL an OpenAI-compatible API?", spent=False)
    assert "501" in result.stderr
    assert seen == ["POST"]  # no retries
    assert time.monotonic() - started < 10


def test_a_wrong_path_on_an_llm_api_is_a_configuration_error(github, llm, tmp_path):
    env = cli_env(github, llm, tmp_path / "s.db", OPENAI_BASE_URL=llm.url + "/nothing")
    assert_fails(summarize(env), 10, "is OPENAI_BASE_URL an OpenAI-compatible API?")


def test_an_unknown_model_is_still_named_as_such(github, llm, tmp_path):
    error = {
        "message": "The model `no-such-model` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
    llm.script([(404, {}, {"error": error})])
    result = summarize(cli_env(github, llm, tmp_path / "s.db", PRHUB_MODEL="no-such-model"))
    assert_fails(result, 10, "model 'no-such-model' not found")


def test_no_token_is_told_apart_from_a_rejected_one(github, llm, tmp_path):
    none = summarize(cli_env(github, llm, tmp_path / "s.db", GITHUB_TOKEN=None))
    assert none.exit_code == 4
    assert none.stderr.splitlines()[-1].endswith("export GITHUB_TOKEN (or GH_TOKEN)")
    assert "wants a token and none is set" in none.stderr and "rejected" not in none.stderr
    bad = summarize(cli_env(github, llm, tmp_path / "s.db", GITHUB_TOKEN="ghp_wrong"))
    assert_fails(bad, 4, "GitHub rejected the token")


def test_a_missing_secret_in_ci_says_where_to_add_it(github, llm, tmp_path):
    env = cli_env(github, llm, tmp_path / "s.db", OPENAI_API_KEY=None, GITHUB_ACTIONS="true")
    result = summarize(env)
    assert_fails(result, 3, "Settings > Secrets and variables > Actions")
    assert "export" not in result.stderr
    local = summarize(cli_env(github, llm, tmp_path / "s.db", OPENAI_API_KEY=None))
    assert_fails(local, 3, "export OPENAI_API_KEY")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('openai_base_url = "localhost:8000"\n', "prhub.toml openai_base_url: 'localhost:8000'"),
        (
            '[repo."acme/rocket"]\njobs = 2\n',
            "prhub.toml [repo]: no such table; did you mean repos?",
        ),
        (
            "[prices.m]\ninput = 1\nouput = 2\n",
            "[prices.m] ouput: no such key; did you mean output?",
        ),
    ],
)
def test_config_file_mistakes_are_named_in_the_file(
    github: GitHubStandIn, llm, tmp_path, text, says, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prhub.toml").write_text(text)
    result = summarize(cli_env(github, llm, tmp_path / "s.db"))
    assert_fails(result, 3, says)
    assert "OPENAI_BASE_URL" not in result.stderr
