"""The week's message to a chat webhook (Feishu, DingTalk, WeCom, Slack) in the shape each
takes, sent once a week: a webhook's URL is its credential, never shown nor logged."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any
from urllib.parse import urlsplit

import httpx2

from prhub import logmask, retry, transport
from prhub.config import Settings
from prhub.errors import ConfigError, PostError
from prhub.publish.brief import Brief, linked, markdown, pieces
from prhub.store.records import Post, post_hash

# Each webhook host's format; another host (a proxy, a self-hosted Lark) names it with
# --notify-format.
HOSTS = {
    "open.feishu.cn": "feishu",
    "open.larksuite.com": "feishu",
    "oapi.dingtalk.com": "dingtalk",
    "qyapi.weixin.qq.com": "wecom",
    "hooks.slack.com": "slack",
}
NAMES = {"feishu": "Feishu", "dingtalk": "DingTalk", "wecom": "WeCom", "slack": "Slack"}
MAX_ANSWER = 64 * 2**10  # a webhook answers a line of JSON or "ok"
# What each takes at most, kept under: WeCom's markdown 4,096 bytes, Slack's section 3,000
# characters, DingTalk's and Feishu's messages about 20 kB.
LIMITS = {"feishu": 18_000, "dingtalk": 18_000, "wecom": 4_096, "slack": 2_900}
# Codes of "too many messages": nothing was posted, so another attempt may be made.
BUSY = {"feishu": {11232}, "dingtalk": {130101}, "wecom": {45009}}


def target(url: str) -> str:
    """What the store calls a webhook: a fingerprint of its URL, never the URL."""
    return "webhook:" + hashlib.sha256(url.encode()).hexdigest()[:16]


def shown(url: str) -> str:
    """A webhook as messages name it: its host alone."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…"


def kind(url: str, chosen: str | None) -> str:
    """The webhook's format: the one chosen, else the one its host tells."""
    if chosen:
        return chosen
    host = (urlsplit(url).hostname or "").lower()
    if host in HOSTS:
        return HOSTS[host]
    raise ConfigError(
        f"the webhook {shown(url)} is of no host prhub knows: pass --notify-format "
        f"{', '.join(NAMES)} (or set notify_format)"
    )


def message(fmt: str, b: Brief) -> dict[str, Any]:
    """The week's message in the webhook's format, within what it takes."""
    if fmt == "feishu":
        return {"msg_type": "post", "content": {"post": {"zh_cn": _feishu(b)}}}
    if fmt == "slack":
        return _slack(b)
    text = markdown(b, LIMITS[fmt], title=True)
    if fmt == "dingtalk":  # its title is the notification's, shown nowhere in the message
        return {"msgtype": "markdown", "markdown": {"title": b.title, "text": text}}
    return {"msgtype": "markdown", "markdown": {"content": text}}


def _feishu(b: Brief) -> dict[str, Any]:
    """A Feishu rich-text post: lines of text and links, no markup to escape."""

    def line(text: str, mark: str = "") -> list[dict[str, str]]:
        return [
            {"tag": "text", "text": p}
            if isinstance(p, str)
            else _feishu_link(f"#{p}", b.links.pr(p))
            for p in [mark, *pieces(text)]
            if p != ""
        ]

    lines = [line(b.lead)]
    if b.missing:
        lines.append(line(b.missing))
    for heading, items in (("本周亮点", b.highlights), ("风险观察", b.risks)):
        if items:
            lines += [line(heading), *(line(i, "• ") for i in items)]
    pages = [("阅读完整周报", b.report), ("参与讨论", b.discussion)]
    if see := [_feishu_link(label, url) for label, url in pages if url]:
        lines.append(see)
    lines.append(line(b.figures))
    return {"title": b.title, "content": lines}


def _feishu_link(text: str, url: str) -> dict[str, str]:
    return {"tag": "a", "text": text, "href": url}


def _slack(b: Brief) -> dict[str, Any]:
    """Slack blocks: the title as a header, the rest as one mrkdwn section."""

    def text(value: str) -> str:
        return linked(_slack_escape(value), lambda n: f"<{b.links.pr(n)}|#{n}>")

    highlights, risks = list(b.highlights), list(b.risks)
    while True:
        parts = [text(b.lead), *([f"> {_slack_escape(b.missing)}"] if b.missing else [])]
        for heading, items in (("本周亮点", highlights), ("风险观察", risks)):
            if items:
                parts.append(f"*{heading}*\n" + "\n".join(f"• {text(i)}" for i in items))
        pages = [("阅读完整周报", b.report), ("参与讨论", b.discussion)]
        if see := " · ".join(f"<{url}|{label}>" for label, url in pages if url):
            parts.append(see)
        body = "\n\n".join(parts)
        if len(body) <= LIMITS["slack"] or not (highlights or risks):
            break
        (risks or highlights).pop()
    return {
        "text": b.title,  # what a notification shows
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": b.title[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": body[: LIMITS["slack"]]}},
            {"type": "context", "elements": [{"type": "plain_text", "text": b.figures[:150]}]},
        ],
        "unfurl_links": False,
    }


def _slack_escape(text: str) -> str:
    # Slack reads &, < and > as markup: <!channel> would call everyone.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Refused(PostError):
    """The webhook did not take the message; `wait` is set when it may be tried again."""

    def __init__(self, message: str, wait: float | None = None) -> None:
        super().__init__(message)
        self.wait = wait


def send(url: str, payload: dict[str, Any], fmt: str, settings: Settings) -> None:
    """Posts `payload` to the webhook; a refusal or failure is one PostError naming its host."""
    # Its path and query are the credential: any line or record shows *** instead.
    logmask.hide_url(url, whole=True)
    what = f"the {NAMES[fmt]} webhook {shown(url)}"
    with httpx2.Client(timeout=settings.timeout, follow_redirects=False) as client:
        try:
            retry.call(
                lambda: _post(client, url, payload, fmt, settings, what),
                settings,
                _hint,
                what=f"sending the week to {what}",
                level=logging.WARNING,
            )
        except _Refused:
            raise
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            raise PostError(f"cannot reach {what} ({type(exc).__name__}): rerun to send") from None
        except httpx2.HTTPError as exc:  # sent, but no answer came: it may have been posted
            raise PostError(
                f"{what} gave no answer ({type(exc).__name__}): check the chat before a rerun, "
                "which sends it again"
            ) from None


def _post(
    client: httpx2.Client,
    url: str,
    payload: dict[str, Any],
    fmt: str,
    settings: Settings,
    what: str,
) -> None:
    deadline = transport.Deadline(settings.timeout)
    body = json.dumps(payload, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "prhub"}
    with client.stream("POST", url, content=body, headers=headers) as answer:
        try:
            data = b"".join(
                transport.body(
                    answer.iter_bytes(),
                    deadline,
                    MAX_ANSWER,
                    answer.close,
                    answer.headers.get("content-length"),
                )
            )
        except transport.TooBig:
            raise _Refused(f"{what} sent an answer over {MAX_ANSWER // 2**10} kB") from None
        except transport.Late:
            raise httpx2.ReadTimeout("no whole answer by the deadline") from None
    if problem := _refusal(fmt, answer.status_code, data):
        wait = None
        if answer.status_code == 429 or problem[1] in BUSY.get(fmt, ()):
            wait = retry.retry_after(answer.headers.get("retry-after")) or 0.0
        raise _Refused(f"{what} refused the week's message ({problem[0]})", wait)


def _refusal(fmt: str, status: int, data: bytes) -> tuple[str, int | None] | None:
    """What the webhook said when it did not take the message, and its code; None if it did."""
    text = " ".join(data.decode("utf-8", "replace").split())[:200]
    if fmt == "slack":  # "ok", or the error's name as text
        return None if status == 200 and text == "ok" else (f"{status}: {text or 'no body'}", None)
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return f"{status}: {text or 'no body'}", None
    if fmt == "feishu":  # {"code": 0, "msg": "success"}; older bots say StatusCode
        code, said = answer.get("code", answer.get("StatusCode")), answer.get("msg")
    else:  # DingTalk and WeCom: {"errcode": 0, "errmsg": "ok"}
        code, said = answer.get("errcode"), answer.get("errmsg")
    if status == 200 and code == 0:
        return None
    number = code if isinstance(code, int) else None
    return f"{status}, code {code}: {logmask.mask(str(said or text))[:200]}", number


def _hint(exc: BaseException) -> float | None:
    """Seconds to wait before another attempt: only when the message surely was not posted."""
    if isinstance(exc, httpx2.ConnectError | httpx2.ConnectTimeout):
        return 0.0  # never reached the webhook
    if isinstance(exc, _Refused) and exc.wait is not None:
        return exc.wait
    return None


def once(url: str, settings: Settings, b: Brief, sent: Post | None) -> tuple[Post | None, str]:
    """Sends the week to the webhook unless it was sent there before (`sent`): a chat message
    cannot be changed, so a changed report sends none; the new post and a line for the log."""
    fmt = kind(url, settings.notify_format)
    if sent is not None:
        return None, f"the week was sent to the {NAMES[fmt]} webhook before: not sent again"
    payload = message(fmt, b)
    send(url, payload, fmt, settings)
    made = Post(f"webhook:{fmt}", target(url), "", "", post_hash(json.dumps(payload)))
    return made, f"sent the week to the {NAMES[fmt]} webhook"
