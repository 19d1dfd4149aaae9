"""Secret redaction: every secret-looking span becomes a marker naming its kind."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from prhub.logmask import secrets
from prhub.model import PullRequest

M = TypeVar("M", bound=BaseModel)

# Names whose assigned value is a secret when the value also looks random: password, passwd,
# secret, secret_key, token, api_key, apikey, access_key (and so client_secret, GITHUB_TOKEN).
_NAMES = r"(?:pass(?:word|wd)|secret(?:[_-]?key)?|token|a(?:pi[_-]?key|pikey|ccess[_-]?key))"
_ASSIGN = _NAMES + r"(?![a-z0-9_])[\"']?[ \t]*(?::=|=>|[:=])(?!=)[ \t]*"
# A quoted value, or an unquoted one (YAML, INI) that fills the rest of the line, so code like
# `token = tokenizer.encode(x)` never matches.
_VALUE = r"(?P<q>[\"'])?(?P<secret>(?(q)[^\s\"'\\]+|[a-z0-9+/=_.~-]+))(?(q)(?P=q)|[ \t]*$)"
# Shortest value and fewest bits per character for a generic assignment to count as a secret.
MIN_SECRET_LEN = 12
MIN_ENTROPY = 3.5


@dataclass(frozen=True)
class Rule:
    """One kind of secret: the part of a match named `secret` (else all of it) is replaced."""

    kind: str
    regex: str
    # Matched against lowercased text, so the regex must be written in lowercase.
    nocase: bool = False
    # A literal every match holds: without it in the text the regex is not run.
    hint: str = ""
    # The match must not continue a word (sk- inside "task-...").
    word_start: bool = False
    check: Callable[[str], bool] | None = None


def entropy(value: str) -> float:
    """Shannon entropy of `value` in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def looks_random(value: str) -> bool:
    """True for long, high-entropy values that mix letters and digits or cases."""
    classes = sum(any(test(ch) for ch in value) for test in (str.islower, str.isupper, str.isdigit))
    return len(value) >= MIN_SECRET_LEN and classes >= 2 and entropy(value) >= MIN_ENTROPY


def _has_digit_and_letter(value: str) -> bool:
    return any(ch.isdigit() for ch in value) and any(ch.isalpha() for ch in value)


def _not_placeholder(userinfo: str) -> bool:
    password = userinfo.partition(":")[2]
    templated = password.startswith(("$", "{", "<", "%", "*"))
    return not templated and password.lower() not in ("password", "pass", "passwd")


# Order matters: specific kinds first; a later rule skips values that are already markers.
# Regexes start with a literal where they can: Python's re then skips ahead quickly.
RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        # An unterminated block (cut diff) is redacted to the end of the text.
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    Rule("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/+-]+"),
    Rule("github_token", r"gh[pousr]_[A-Za-z0-9]{30,}", word_start=True),
    Rule("github_token", r"github_pat_[A-Za-z0-9_]{30,}", word_start=True),
    Rule(
        "api_key",
        r"sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        word_start=True,
        check=_has_digit_and_letter,
    ),
    Rule(
        "aws_access_key_id",
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        word_start=True,
    ),
    Rule(
        "aws_secret_key",
        r"(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*(?:=>|[:=])\s*[\"']?"
        r"(?P<secret>[a-z0-9/+]{40})(?![a-z0-9/+=])",
        nocase=True,
        hint="secret",
    ),
    Rule("slack_token", r"xox[baprs]-[A-Za-z0-9-]{10,}", word_start=True),
    # scheme://user:pass@host keeps scheme and host.
    Rule("url_credentials", r"://(?P<secret>[^\s:@/]+:[^\s@/]+)@", check=_not_placeholder),
    Rule("secret", _ASSIGN + _VALUE, nocase=True, check=looks_random),
)
# KEY=value lines of .env files: every value is a secret, whatever it looks like.
ENV_RULE = Rule(
    "env_value",
    r"^[-+ ]?[ \t]*(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_.-]*[ \t]*=[ \t]*"
    r"(?P<secret>\S[^\n]*?)[ \t]*$",
)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_compiled: dict[str, re.Pattern[str]] = {}


def marker(kind: str) -> str:
    """The text that replaces a secret of `kind`."""
    return f"[REDACTED:{kind}]"


def is_env_file(path: str) -> bool:
    """True for .env, .env.* and *.env files, whose values are all secrets."""
    name = path.rsplit("/", 1)[-1]
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")


def _lower(text: str) -> str:
    low = text.lower()
    # A few characters change length when lowercased; then only ASCII is folded, keeping offsets.
    return low if len(low) == len(text) else text.translate(_ASCII_LOWER)


def _apply(rule: Rule, text: str, low: str, counts: Counter[str]) -> str:
    pattern = _compiled.get(rule.regex)
    if pattern is None:
        pattern = _compiled[rule.regex] = re.compile(rule.regex, re.M)
    source = low if rule.nocase else text
    if rule.hint not in source:
        return text
    parts: list[str] = []
    last = 0
    for m in pattern.finditer(source):
        start, end = m.span("secret") if "secret" in pattern.groupindex else m.span()
        before = text[m.start() - 1] if m.start() else ""
        if rule.word_start and (before.isalnum() or before == "_"):
            continue
        value = text[start:end]
        if "[REDACTED:" in value or (rule.check and not rule.check(value)):
            continue
        parts += [text[last:start], marker(rule.kind)]
        last = end
        counts[rule.kind] += 1
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def redact(text: str, *, env_file: bool = False) -> tuple[str, dict[str, int]]:
    """`text` with secrets replaced by markers, and the count of each kind replaced."""
    counts: Counter[str] = Counter()
    for secret in secrets():  # prhub's own, as a server may echo them: whatever their shape
        if secret in text:
            counts["credential"] += text.count(secret)
            text = text.replace(secret, marker("credential"))
    low: str | None = None  # lowercased text, made once per change of text
    for rule in (*RULES, ENV_RULE) if env_file else RULES:
        if rule.nocase and low is None:
            low = _lower(text)
        new = _apply(rule, text, low or "", counts)
        if new is not text:
            text, low = new, None
    return text, dict(counts)


def scrub(pr: PullRequest) -> PullRequest:
    """The PR with secret-shaped text replaced by markers, before it is kept or shown."""
    counts: Counter[str] = Counter()

    def clean(text: str, env_file: bool = False) -> str:
        cleaned, found = redact(text, env_file=env_file)
        counts.update(found)
        return cleaned

    files = [
        f.model_copy(
            update={
                "path": clean(f.path),
                "previous_path": clean(f.previous_path) if f.previous_path else None,
                "patch": clean(f.patch, is_env_file(f.path)) if f.patch is not None else None,
            }
        )
        for f in pr.files
    ]
    # Review discussion is written by anyone who can comment: a token pasted there is as live.
    discussion = [
        c.model_copy(update={"body": clean(c.body), "path": clean(c.path) if c.path else c.path})
        for c in pr.discussion
    ]
    update = {
        "title": clean(pr.title),
        "body": clean(pr.body),
        "files": files,
        "discussion": discussion,
    }
    return pr.model_copy(update={**update, "redactions": dict(counts + Counter(pr.redactions))})


def scrub_reply(reply: M) -> tuple[M, dict[str, int]]:
    """A model's reply with secret-shaped text replaced by markers, before it is kept or shown.

    A model can repeat a secret it guessed or a marker's neighbour it reconstructed; what it
    writes is checked as a PR's text is. Returns the reply and what was redacted, by kind.
    """
    counts: Counter[str] = Counter()

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            cleaned, found = redact(value)
            counts.update(found)
            return cleaned
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        return value

    cleaned = walk(reply.model_dump())
    return (type(reply).model_validate(cleaned) if counts else reply), dict(counts)
