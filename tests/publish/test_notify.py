"""`weekly --notify`: the week's message to a chat webhook in Feishu's, DingTalk's, WeCom's or
Slack's shape, sent once a week, its URL never shown; against a webhook stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from prhub.errors import ConfigError
from prhub.publish import notify
from prhub.publish.brief import Brief
from prhub.publish.parts import links
from tests.factories import prhub, responder
from tests.standins import LLMStandIn
from tests.standins.webhook import SECRET, WebhookStandIn

WEEK = ("weekly", "--week", "31", "--year", "2026")
TITLE = "rocket 仓库周报｜2026 年第 31 周（07-27 至 08-02）"
PR_101 = "https://github.com/acme/rocket/pull/101"


@pytest.fixture(autouse=True)
def _narrated(llm: LLMStandIn) -> None:
    """A narrative whose highlights cite PRs, as a model's do."""
    llm.responder = responder


@pytest.fixture(params=["feishu", "dingtalk", "wecom", "slack"])
def hook(request: pytest.FixtureRequest) -> Iterator[WebhookStandIn]:
    with WebhookStandIn(request.param) as server:
        yield server
    assert not server.errors, server.errors


def notified(env: dict[str, str | None], hook: WebhookStandIn, *args: str) -> Any:
    """`prhub weekly` for week 31 posting to `hook`, its URL and format in the environment."""
    env = {**env, "PRHUB_NOTIFY": hook.hook, "PRHUB_NOTIFY_FORMAT": hook.service}
    return prhub(env, *WEEK, *args)


def texts(message: dict[str, Any]) -> str:
    """Everything a message says, as one string."""
    if isinstance(message, dict):
        return "\n".join(texts(v) for v in message.values())
    if isinstance(message, list):
        return "\n".join(texts(v) for v in message)
    return str(message)


def test_one_message_a_week_in_the_shape_of_its_service(env, hook):
    first = notified(env, hook)
    assert first.exit_code == 0, first.stderr
    [message] = hook.messages
    name = notify.NAMES[hook.service]
    assert f"prhub: sent the week to the {name} webhook" in first.stderr.splitlines()
    said = texts(message)
    assert TITLE in said and "本周亮点" in said and "风险观察" in said
    again = notified(env, hook)
    assert again.exit_code == 0, again.stderr
    assert len(hook.messages) == 1 and hook.refused == []
    line = f"prhub: the week was sent to the {name} webhook before: not sent again"
    assert line in again.stderr.splitlines()


def test_feishu_gets_a_rich_text_post_with_links(env):
    with WebhookStandIn("feishu") as hook:
        assert notified(env, hook).exit_code == 0
    [message] = hook.messages
    post = message["content"]["post"]["zh_cn"]
    assert message["msg_type"] == "post" and post["title"] == TITLE
    elements = [e for line in post["content"] for e in line]
    assert {"tag": "a", "text": "#101", "href": PR_101} in elements
    assert {e["tag"] for e in elements} == {"text", "a"}


def test_dingtalk_and_wecom_get_markdown_under_a_bold_title(env):
    for service, key in (("dingtalk", "text"), ("wecom", "content")):
        with WebhookStandIn(service) as hook:
            assert notified(env, hook).exit_code == 0
        [message] = hook.messages
        assert message["msgtype"] == "markdown"
        text = message["markdown"][key]
        assert text.startswith(f"**{TITLE}**\n\n") and f"[#101]({PR_101})" in text
        if service == "dingtalk":  # the title of its notification
            assert message["markdown"]["title"] == TITLE


def test_slack_gets_blocks_and_a_fallback_text(env):
    with WebhookStandIn("slack") as hook:
        assert notified(env, hook).exit_code == 0
    [message] = hook.messages
    assert message["text"] == TITLE
    header, section, context = message["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": TITLE}}
    assert section["text"]["type"] == "mrkdwn" and f"<{PR_101}|#101>" in section["text"]["text"]
    assert "*本周亮点*" in section["text"]["text"]
    assert context["elements"][0]["text"].startswith("acme/rocket · 2026-07-27 至 2026-08-02")


def test_a_changed_report_sends_no_second_message(env, llm):
    from tests.standins.llm import prompt_text

    llm.responder = lambda b: "not json" if "PR #104" in prompt_text(b) else responder(b)
    with WebhookStandIn("wecom") as hook:
        assert notified(env, hook).exit_code == 12  # a partial week, sent
        llm.responder = responder
        whole = notified(env, hook)
    assert whole.exit_code == 0, whole.stderr
    [message] = hook.messages  # a chat message cannot be edited: one a week, never two
    assert "1 个未能生成导读" in message["markdown"]["content"]


def test_the_message_links_the_report_and_the_discussion(env, github):
    with WebhookStandIn("slack") as hook:
        result = notified(
            env, hook, "--discuss", "General", "--report-url", "https://acme.example/{repo}/{week}"
        )
    assert result.exit_code == 0, result.stderr
    [made] = github.posts.discussions
    text = hook.messages[0]["blocks"][1]["text"]["text"]
    assert "<https://acme.example/acme/rocket/2026-W31|阅读完整周报>" in text
    assert f"<{made['url']}|参与讨论>" in text


@pytest.mark.slow
@pytest.mark.parametrize("service", ["slack", "wecom"])  # a credential in the path, the query
def test_the_webhook_url_is_never_shown(env, service, tmp_path, store):
    """A real `prhub weekly --verbose`, whose log names each request: the URL shows nowhere."""
    import subprocess
    import sys

    from tests.factories import process_env

    with WebhookStandIn(service) as hook:
        run = {**env, "PRHUB_NOTIFY": hook.hook, "PRHUB_NOTIFY_FORMAT": service}
        done = subprocess.run(
            [sys.executable, "-m", "prhub", *WEEK, "--verbose"],
            env=process_env(run),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    assert len(hook.messages) == 1
    # The client's own line about the request is there, the URL's credential masked.
    hooked = f"HTTP Request: POST http://127.0.0.1:{hook.port}"
    [sent] = [line for line in done.stderr.splitlines() if hooked in line]
    assert "***" in sent
    shown = prhub(run, "config")
    assert shown.exit_code == 0 and "notify = set (" in shown.stdout
    written = [p.read_bytes().decode() for p in tmp_path.rglob("*.md")]
    for where in [done.stderr, done.stdout, shown.stdout, shown.stderr, *written]:
        assert SECRET not in where
    for path in store.parent.glob("store.db*"):  # the database with its -wal and -shm files
        assert SECRET.encode() not in path.read_bytes()


def test_a_refusal_is_one_line_and_its_own_exit_code_and_a_rerun_sends(env, tmp_path):
    with WebhookStandIn("dingtalk") as hook:
        wrong = {**env, "PRHUB_NOTIFY": hook.hook.replace(SECRET, "expired0000token")}
        result = prhub({**wrong, "PRHUB_NOTIFY_FORMAT": "dingtalk"}, *WEEK)
        assert result.exit_code == 19, result.stderr
        last = result.stderr.splitlines()[-1]
        assert last == (
            f"prhub: error: the DingTalk webhook {hook.url.split(':')[0]}://127.0.0.1/… refused "
            "the week's message (200, code 300005: token is not exist)"
        )
        assert (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").exists()
        assert notified(env, hook).exit_code == 0
    assert len(hook.messages) == 1


def test_a_busy_webhook_is_tried_again_and_a_lost_answer_is_not(env):
    with WebhookStandIn("slack") as hook:
        hook.script([(429, {"Retry-After": "0"}, b"rate_limited")])
        assert notified(env, hook).exit_code == 0
        assert len(hook.messages) == 1 and len(hook.refused) == 0
    with WebhookStandIn("feishu") as hook:
        hook.script(["reset"])
        result = notified(env, hook)
    assert result.exit_code == 19, result.stderr
    assert "gave no answer" in result.stderr.splitlines()[-1]
    assert len(hook.requests) == 1  # it may have been posted: not sent a second time


def test_an_unreachable_webhook_fails_after_its_attempts(env):
    with WebhookStandIn("wecom") as hook:
        url = hook.hook
    result = prhub({**env, "PRHUB_NOTIFY": url, "PRHUB_NOTIFY_FORMAT": "wecom"}, *WEEK)
    assert result.exit_code == 19, result.stderr
    assert "cannot reach the WeCom webhook http://127.0.0.1/…" in result.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("url", "fmt"),
    [
        ("https://open.feishu.cn/open-apis/bot/v2/hook/x", "feishu"),
        ("https://open.larksuite.com/open-apis/bot/v2/hook/x", "feishu"),
        ("https://oapi.dingtalk.com/robot/send?access_token=x", "dingtalk"),
        ("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=x", "wecom"),
        ("https://hooks.slack.com/services/T/B/x", "slack"),
    ],
)
def test_the_format_is_told_by_the_host(url, fmt):
    assert notify.kind(url, None) == fmt
    assert notify.kind(url, "slack") == "slack"  # a format chosen wins


def test_a_host_no_one_knows_needs_a_format():
    with pytest.raises(ConfigError) as caught:
        notify.kind("https://chat.example.com/hooks/s3cretpath", None)
    assert str(caught.value) == (
        "the webhook https://chat.example.com/… is of no host prhub knows: pass --notify-format "
        "feishu, dingtalk, wecom, slack (or set notify_format)"
    )


def long_brief() -> Brief:
    many = tuple(
        f"#{n} " + "这一条亮点写得很长，说明改动的来龙去脉与影响。" * 8 for n in range(1, 9)
    )
    return Brief(
        title=TITLE,
        lead="导语。" * 40,
        highlights=many,
        risks=many[:3],
        missing="",
        figures="acme/rocket · 来源 PR 8",
        report="https://acme.example/w31",
        discussion="",
        links=links("acme/rocket", {}),
    )


@pytest.mark.parametrize("service", ["wecom", "slack", "dingtalk", "feishu"])
def test_a_long_week_fits_what_the_service_takes(service):
    message = notify.message(service, long_brief())
    with WebhookStandIn(service) as hook:
        problem = getattr(hook, f"_{service}")(message)
    assert problem is None, problem
    said = texts(message)
    assert "https://acme.example/w31" in said and "#1" in said  # the link and the first stay
    if service in ("wecom", "slack"):  # the last risks and highlights gave way
        items = said.count("这一条亮点") // 16  # each says it 16 times
        assert items < len(long_brief().highlights) + len(long_brief().risks)


def test_the_store_keeps_a_fingerprint_of_the_webhook(env, store):
    import sqlite3

    with WebhookStandIn("slack") as hook:
        assert notified(env, hook).exit_code == 0
    with sqlite3.connect(store) as db:
        [(kind, target, url)] = db.execute("SELECT kind, target, url FROM posts").fetchall()
    assert (kind, url) == ("webhook:slack", "") and target == notify.target(hook.hook)
    assert target.startswith("webhook:") and len(target) == len("webhook:") + 16


def test_a_webhook_is_named_by_its_host_alone():
    assert (
        notify.shown("https://hooks.slack.com/services/T/B/s3cret") == "https://hooks.slack.com/…"
    )
