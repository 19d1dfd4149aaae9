"""Log lines keep no secret of a URL or a key=value pair, whichever library wrote them."""

from __future__ import annotations

import logging

import pytest

from prhub import logmask


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (
            'HTTP Request: POST http://u:s3cretpass@h:1/v1/chat/completions?api-key=k3y "200"',
            'HTTP Request: POST http://h:1/v1/chat/completions?api-key=*** "200"',
        ),
        (
            "Request options: {'params': {'api-key': 'k3y'}}",
            "Request options: {'params': {'api-key': '***'}}",
        ),
        (
            "redirect to https://x/?access_token=k3y&page=2.",
            "redirect to https://x/?access_token=***&page=2.",
        ),
        ("token=k3y, password: k3y", "token=***, password: ***"),
        ("max_tokens=4000 and 12 tokens", "max_tokens=4000 and 12 tokens"),
    ],
)
def test_log_lines_are_masked(line: str, shown: str) -> None:
    assert logmask.mask(line) == shown


def test_the_handler_masks_what_any_logger_writes(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    handler = logmask.handler(sys.stderr)
    logger = logging.getLogger("httpx2-test")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("POST %s", "http://u:s3cretpass@h/v1?api-key=k3y")
    finally:
        logger.removeHandler(handler)
    err = capsys.readouterr().err
    assert "s3cretpass" not in err and "k3y" not in err and "http://h/v1?api-key=***" in err


def test_a_hidden_secret_is_masked_in_every_line_from_then_on() -> None:
    path = "/services/T0/B0/h1dd3nWebhookPath"
    line = f"HTTP Request: POST https://hooks.slack.com{path} 200"
    assert logmask.mask(line) == line  # no pattern tells a webhook's path from any other
    logmask.hide(path)
    assert logmask.mask(line) == "HTTP Request: POST https://hooks.slack.com*** 200"
    logmask.hide("short")  # too short to hide: it would mask ordinary words
    assert logmask.mask("a short line") == "a short line"
