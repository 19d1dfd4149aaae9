"""The secrets prhub is given are masked wherever they stand, however a server echoes them."""

from __future__ import annotations

import base64
import logging
from urllib.parse import quote

import pytest

from prhub import logmask
from prhub.config import Settings
from prhub.errors import GitHubAuthError
from prhub.prepare.redact import redact

TOKEN = "ghe_KNOWNtokenOFaNENTERPRISE0123456789"  # no pattern knows this shape
PASSWORD = "pa55/word+with?odd&chars"


def test_settings_make_their_secrets_known_in_each_form_a_server_may_echo():
    url = f"https://prhub:{quote(PASSWORD, safe='')}@ghe.example.com/api/v3"
    hook = "https://hooks.example.com/services/T0/B0/hookSECRETpart0001?key=qSECRET0002"
    Settings(github_url=url, github_token=TOKEN, notify=hook, notify_format="slack")
    basic = base64.b64encode(f"prhub:{PASSWORD}".encode()).decode()
    said = (
        f"Authorization: token {TOKEN}; Basic {basic}; password {PASSWORD} or "
        f"{quote(PASSWORD, safe='')}; Cannot POST /services/T0/B0/hookSECRETpart0001?key="
        f"qSECRET0002 ({quote(hook, safe='')}); part hookSECRETpart0001, key qSECRET0002"
    )
    shown = logmask.hidden(said)
    for secret in (TOKEN, basic, PASSWORD, quote(PASSWORD, safe=""), "hookSECRETpart0001"):
        assert secret not in shown
    assert "qSECRET0002" not in shown
    assert shown.startswith("Authorization: token ***; Basic ***; password *** or ***;")


def test_an_error_never_carries_a_known_secret():
    Settings(github_token=TOKEN)
    error = GitHubAuthError(f"GitHub rejected the token (Bad credentials: token {TOKEN})")
    assert str(error) == "GitHub rejected the token (Bad credentials: token ***)"


def test_every_log_record_of_any_library_is_masked(caplog: pytest.LogCaptureFixture):
    Settings(github_token=TOKEN)
    caplog.set_level(logging.INFO)
    logging.getLogger("some.library").info("sent %s", f"Authorization: token {TOKEN}")
    assert caplog.records[-1].getMessage() == "sent Authorization: token ***"


def test_a_known_secret_in_a_prs_text_is_redacted_before_any_prompt():
    Settings(github_token=TOKEN)
    text, found = redact(f"the proxy answered with {TOKEN} in its page")
    assert text == "the proxy answered with [REDACTED:credential] in its page"
    assert found == {"credential": 1}


def test_a_short_value_is_not_taken_for_a_secret():
    logmask.hide("local")  # OPENAI_API_KEY=local for a local server
    assert logmask.hidden("a local model") == "a local model"
