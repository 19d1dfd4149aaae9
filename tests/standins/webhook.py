"""A chat webhook stand-in on 127.0.0.1: Feishu, DingTalk, WeCom or Slack, each checking a
message as that service does, answering in its words, and keeping the messages it took."""

from __future__ import annotations

from typing import Any

from tests.standins.server import Answer, StandIn

SECRET = "hook5ecret0000aaaa1111bbbb2222cc"  # the webhook's credential: in its URL alone
# Where each service takes messages, its credential in the path or the query.
PATHS = {
    "feishu": (f"/open-apis/bot/v2/hook/{SECRET}", ""),
    "dingtalk": ("/robot/send", f"access_token={SECRET}"),
    "wecom": ("/cgi-bin/webhook/send", f"key={SECRET}"),
    "slack": (f"/services/T0STANDIN/B0STANDIN/{SECRET}", ""),
}
WECOM_MAX = 4096  # bytes of a markdown message's content
SLACK_SECTION = 3000  # characters of a section's text
FEISHU_MAX = 20 * 1024  # bytes of a request's body


class WebhookStandIn(StandIn):
    """A webhook of `service` ("feishu", "dingtalk", "wecom", "slack"); `hook` is its URL,
    `messages` the bodies it took. A wrong credential or a malformed message is refused as the
    service refuses it, and kept in `refused`."""

    def __init__(self, service: str, **options: Any) -> None:
        super().__init__(**options)
        self.service = service
        self.messages: list[dict[str, Any]] = []
        self.refused: list[Any] = []

    def script(self, responses: list[Any]) -> None:
        """Answer the next messages with `responses`, in order (see StandIn)."""
        self._queue(".", responses)

    @property
    def hook(self) -> str:
        path, query = PATHS[self.service]
        return f"{self.url}{path}{'?' + query if query else ''}"

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        if self.service == "slack":
            return {"Content-Type": "text/html"}
        return {"Content-Type": "application/json; charset=utf-8"}

    def answer(self, request: dict[str, Any]) -> Answer:
        path, query = PATHS[self.service]
        asked = "&".join(f"{k}={v[0]}" for k, v in request["query"].items())
        body = request["body"]
        if request["method"] != "POST" or request["path"] != path or asked != query:
            return self._refuse(body, *self._bad_credential())
        problem = getattr(self, f"_{self.service}")(body)
        if problem is not None:
            return self._refuse(body, *problem)
        with self._lock:
            self.messages.append(body)
        return self._ok()

    def _refuse(self, body: Any, status: int, answer: Any) -> Answer:
        with self._lock:
            self.refused.append(body)
        return status, {}, answer

    def _ok(self) -> Answer:
        if self.service == "slack":
            return 200, {}, b"ok"
        if self.service == "feishu":
            return (
                200,
                {},
                {
                    "StatusCode": 0,
                    "StatusMessage": "success",
                    "code": 0,
                    "data": {},
                    "msg": "success",
                },
            )
        return 200, {}, {"errcode": 0, "errmsg": "ok"}

    def _bad_credential(self) -> tuple[int, Any]:
        return {
            "feishu": (
                200,
                {
                    "code": 19001,
                    "data": {},
                    "msg": "param invalid: incoming webhook access token invalid",
                },
            ),
            "dingtalk": (200, {"errcode": 300005, "errmsg": "token is not exist"}),
            "wecom": (200, {"errcode": 93000, "errmsg": "invalid webhook url, hint: [0000000000]"}),
            "slack": (403, b"invalid_token"),
        }[self.service]

    @staticmethod
    def _feishu(body: Any) -> tuple[int, Any] | None:
        bad = (200, {"code": 9499, "data": {}, "msg": "Bad Request"})
        if not isinstance(body, dict) or body.get("msg_type") != "post":
            return bad
        post = ((body.get("content") or {}).get("post") or {}).get("zh_cn")
        if not isinstance(post, dict) or not isinstance(post.get("title"), str):
            return bad
        lines = post.get("content")
        if not isinstance(lines, list) or not all(isinstance(line, list) for line in lines):
            return bad
        for element in (e for line in lines for e in line):
            tag = element.get("tag") if isinstance(element, dict) else None
            if tag not in ("text", "a") or not isinstance(element.get("text"), str):
                return bad
            if tag == "a" and not str(element.get("href", "")).startswith(("http://", "https://")):
                return bad
        if len(str(body).encode()) > FEISHU_MAX:
            return 200, {"code": 9499, "data": {}, "msg": "request body too large"}
        return None

    @staticmethod
    def _dingtalk(body: Any) -> tuple[int, Any] | None:
        markdown = body.get("markdown") if isinstance(body, dict) else None
        if body.get("msgtype") != "markdown" or not isinstance(markdown, dict):
            return 200, {"errcode": 40035, "errmsg": "缺少参数 msgtype"}
        if not all(isinstance(markdown.get(k), str) and markdown[k] for k in ("title", "text")):
            return 200, {"errcode": 40035, "errmsg": "缺少参数 markdown.text"}
        return None

    @staticmethod
    def _wecom(body: Any) -> tuple[int, Any] | None:
        markdown = body.get("markdown") if isinstance(body, dict) else None
        if body.get("msgtype") != "markdown" or not isinstance(markdown, dict):
            return 200, {"errcode": 40008, "errmsg": "invalid message type"}
        content = markdown.get("content")
        if not isinstance(content, str) or not content:
            return 200, {"errcode": 41009, "errmsg": "missing markdown content"}
        if len(content.encode()) > WECOM_MAX:
            message = f"markdown.content exceed max length {WECOM_MAX}. invalid Request Parameter"
            return 200, {"errcode": 40058, "errmsg": message}
        return None

    @staticmethod
    def _slack(body: Any) -> tuple[int, Any] | None:
        if not isinstance(body, dict) or not isinstance(body.get("text"), str):
            return 400, b"no_text"
        for block in body.get("blocks") or []:
            kind, text = block.get("type"), block.get("text") or {}
            if kind == "header" and (text.get("type") != "plain_text" or len(text["text"]) > 150):
                return 400, b"invalid_blocks"
            if kind == "section" and len(text.get("text", "")) > SLACK_SECTION:
                return 400, b"invalid_blocks"
            if kind not in ("header", "section", "context", "divider"):
                return 400, b"invalid_blocks"
        return None
