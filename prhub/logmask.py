"""Log lines without credentials, whichever library wrote them: prhub, openai, httpx, urllib3."""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable
from typing import IO, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

_SECRET_PARAM = re.compile(r"key|token|secret|password|passwd|sig|auth|credential", re.I)
# A URL up to the first character that cannot be part of one in a log line.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
# A key-like name, then "=" or ":" (as in a query, a header or a dict's repr), then its value.
_PAIR = re.compile(
    r"(?i)(?<![\w-])((?:x-)?api[-_]?key|(?:access|auth|refresh|id)[-_]?token|token|secret|"
    r"client[-_]?secret|password|passwd|pwd|sig|signature|credentials?|key)"
    r"(['\"]?\s*[:=]\s*['\"]?)([^\s'\"&,;)}\]]+)"
)


# The secrets prhub was given (token, key, webhook URLs, passwords in URLs), as they may come
# back: whatever a server echoes of them is masked in every line and record prhub writes.
_hidden: set[str] = set()


def hide(secret: str) -> None:
    """Masks `secret` from now on: in every log record any library makes, every error and
    record (`hidden`), also as a server may echo it percent-encoded."""
    for form in (secret, quote(secret, safe=""), quote(secret), unquote(secret)):
        if len(form) >= 8:  # a short one would mask ordinary words
            _hidden.add(form)
    global _made
    if _made is None:  # once: a factory set since wraps this one, and must stay on top
        _made = logging.getLogRecordFactory()
        logging.setLogRecordFactory(_record)


_made: Callable[..., logging.LogRecord] | None = None  # the factory before prhub's


def _record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    """A log record as any logger makes it, without the secrets prhub knows: so no handler,
    prhub's or another's, ever holds one."""
    record = (_made or logging.LogRecord)(*args, **kwargs)
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format: logging reports it
        return record
    if (masked := hidden(message)) != message:
        record.msg, record.args = masked, None
    return record


def hide_url(url: str | None, *, whole: bool = False) -> None:
    """Masks a URL's password and key-like query values; `whole` (a webhook's URL, which is
    its credential) also its path with its query, every query value and the path's last
    part."""
    if not url:
        return
    if (found := login(url)) is not None and ":" in found:
        hide(found.split(":", 1)[1])
        hide(base64.b64encode(unquote(found).encode()).decode())  # as Basic auth sends it
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None:
        if whole:
            hide(url)
        return
    values = parse_qsl(parts.query, keep_blank_values=True)
    for key, value in values:
        if whole or _SECRET_PARAM.search(key):
            hide(value)
    if whole:  # the host stays shown: a line names the webhook without its credential
        hide(url.split(parts.netloc, 1)[-1])  # path and query, as "Cannot POST /…" echoes them
        hide(parts.path.rsplit("/", 1)[-1])  # a token as the path's last part (Feishu, Slack)


def secrets() -> list[str]:
    """Every secret prhub knows, in each form it may come back in, longest first."""
    return sorted(_hidden, key=len, reverse=True)


def hidden(text: str) -> str:
    """`text` with every secret prhub knows masked, wherever it stands and however it is
    quoted: what goes into an error line, a log line or a record."""
    for secret in secrets():
        if secret in text:
            text = text.replace(secret, "***")
    return text


def mask(text: str) -> str:
    """`text` with each hidden secret masked, each URL shown as config.shown_url shows it and
    key-like values masked."""
    text = hidden(text)
    text = _URL.sub(lambda m: shown_url(m.group()) or m.group(), text)
    return _PAIR.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)


class MaskFilter(logging.Filter):
    """Masks each record's message, its arguments and its traceback text, in place."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit its format: logging reports it
            return True
        record.msg, record.args = mask(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text)
        return True


def handler(stream: IO[str]) -> logging.Handler:
    """A handler writing to `stream` whose lines show no credentials."""
    out = logging.StreamHandler(stream)
    out.addFilter(MaskFilter())
    return out


def login(url: str) -> str | None:
    """The credentials of a URL as typed, up to its last "@"; None when it has none.

    A password may hold "@", "/", "?" or "#" unescaped: "host:8080/a@b" is a port and a path,
    "user:pa/ss@host" and "user:pa?ss@host" passwords. Wrongly read, more is hidden, never less.
    """
    found = re.match(r"[^:/]+://(.*)@", url)
    if found and ("/" not in found.group(1) or re.match(r"[^/]*:(?!\d+(?:/|$))", found.group(1))):
        return found.group(1)
    return None


def shown_url(url: str | None) -> str:
    """A URL fit for messages and logs: credentials and key-like query values masked."""
    if not url:
        return ""
    if (found := login(url)) is not None:
        url = url[: url.index("://") + 3] + url[url.index("://") + 3 + len(found) + 1 :]
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: shown without its query, the login already gone
        return url.split("?", 1)[0]
    query = "&".join(
        f"{k}=***" if _SECRET_PARAM.search(k) else (f"{k}={v}" if v else k)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
