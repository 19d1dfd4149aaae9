"""Settings: one frozen object from flags, environment and config file, passed down.

Precedence, highest first: command-line flags; environment variables; the config file's
[repos."owner/name"] section for the repository in use; the config file's top level; defaults.
The config file is --config PATH, else $PRHUB_CONFIG, else ./prhub.toml, else [tool.prhub] in
./pyproject.toml. Secrets (tokens, keys) come from the environment only.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, SecretStr, field_validator

from prhub import logmask
from prhub.defaults import DEFAULTS, OPENAI_URL, BatchCorrections, NotifyFormat, ResponseMode
from prhub.errors import ConfigError
from prhub.logmask import login, shown_url
from prhub.names import repo_name

# GitHub's rules: an owner of letters, digits and single hyphens; a name of letters, digits, . _ -
REPO_SHAPE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}/[A-Za-z0-9._-]{1,100}")

SECRETS = ("github_token", "openai_api_key", "notify")  # a webhook's URL is its credential
# Switches for one run, never in a file.
PER_RUN = ("refresh", "allow_unmerged", "wait", "config_file")

URLS = ("openai_base_url", "github_url", "report_url", "site_url")
SCHEME = re.compile(r"https?://", re.IGNORECASE)

# Estimated USD per million tokens (input, output, input served from the provider's prompt
# cache); a config file's [prices] adds or overrides.
Price = tuple[float, float, float]
PRICES: dict[str, Price] = {
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "deepseek-chat": (0.27, 1.10, 0.07),
    "qwen-plus": (0.40, 1.20, 0.40),
}
# A batch request's share of the online price: OpenAI, Azure OpenAI and DashScope charge half.
BATCH_SHARE = 0.5


class Settings(BaseModel):
    """Everything prhub needs to know about where to read, whom to ask and how much to send."""

    # nan passes every comparison and inf every bound: a wait of nan spins, a limit of nan is none.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    repo: str | None = None
    # The repositories `--all` runs, in order: the file's `repos` list, or its sections' names.
    repos: tuple[str, ...] = ()
    github_url: str = DEFAULTS["github_url"]
    github_token: SecretStr | None = None
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    model: str = DEFAULTS["model"]
    # json_schema: the endpoint enforces the schema; json_object: the prompt carries it.
    response_mode: ResponseMode = DEFAULTS["response_mode"]
    # Defaults fit a 32k-context model: prompt plus reserved reply stay under 32,768 tokens.
    input_budget: int = DEFAULTS["input_budget"]
    output_tokens: int = 4_000
    max_calls: int = DEFAULTS["max_calls"]
    encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base"
    noise_globs: tuple[str, ...] = ()
    timeout: float = 120.0
    max_attempts: int = 5
    max_retry_wait: float = 60.0
    max_retry_time: float = 300.0  # all attempts of one request, waits included
    retry_base_wait: float = 1.0
    # The longest wait for GitHub's rate limit (its reset, or a pause it asks for); 0: never wait.
    github_wait: float = 900.0
    tz: str = DEFAULTS["tz"]
    jobs: int = DEFAULTS["jobs"]
    store: Path | None = None
    allow_unmerged: bool = False
    refresh: bool = False
    prompt_dir: Path | None = None
    # Tag spellings folded into one, per repository: {"ascend": "npu"}.
    tags: dict[str, str] = {}
    prices: dict[str, Price] = {}
    # Posting the week (`weekly --discuss`, `--notify`): the discussion category, the repository
    # it goes to (default: the digested one), where the report is published, a chat webhook.
    discuss: str | None = None
    discuss_repo: str | None = None
    report_url: str | None = None  # a template: {repo}, {owner}, {name}, {week} are filled in
    # The published site's address, for the feed's absolute links (default: report_url's, when
    # it names the site's week pages).
    site_url: str | None = None
    notify: SecretStr | None = None
    notify_format: NotifyFormat | None = None  # default: told by the webhook's host
    batch_shares: dict[str, float] = {}  # [prices.MODEL] batch: a batch request's share
    # Batch mode: the digests' requests go to the provider's Batch API, answered within a day.
    batch: bool = False
    batch_corrections: BatchCorrections = DEFAULTS["batch_corrections"]
    wait: bool = False  # poll the batch until it is done, rather than exit and collect later
    batch_wait: float = 3600.0  # seconds --wait polls at most
    batch_poll: float = 30.0  # seconds between looks at a running batch
    config_file: Path | None = None  # where file settings came from, for `prhub config`
    # Where each value that is not a default came from ("env PRHUB_JOBS"), for `prhub config`.
    sources: dict[str, str] = {}

    @field_validator("repo", "discuss_repo", mode="before")
    @classmethod
    def _repo_text(cls, value: Any) -> Any:
        return repo_name(value) if isinstance(value, str) else value  # a URL, owner/name.git

    @field_validator("repo", "discuss_repo")
    @classmethod
    def _repo_shape(cls, value: str | None) -> str | None:
        return value if value is None else _repo_shaped(value)

    @field_validator("repos", mode="before")
    @classmethod
    def _repos_text(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(repo_name(v) if isinstance(v, str) else v for v in value)
        return value

    @field_validator("repos")
    @classmethod
    def _repos_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: set[str] = set()
        for name in value:
            _repo_shaped(name)
            if name.lower() in seen:  # GitHub's names ignore case: one run would be two
                raise ValueError(f"names {name} twice")
            seen.add(name.lower())
        return value

    @field_validator("github_token", "openai_api_key", "notify")
    @classmethod
    def _one_word(cls, value: SecretStr | None) -> SecretStr | None:
        # A header cannot carry it: every request would fail, blamed on the URL after retries.
        if value is not None and re.search(r"[\s\x00-\x1f\x7f]", value.get_secret_value()):
            raise ValueError(
                "holds a line break, a space or another control character: remove it "
                "(the value is not shown)"
            )
        return value

    @field_validator("github_url", "openai_base_url")
    @classmethod
    def _readable_login(cls, value: str | None) -> str | None:
        # Read as a URL, such a login ends early: its rest goes out as the host or the path.
        if value and re.search(r"[/?#]", login(value) or ""):
            raise ValueError(
                "the login in this URL holds '/', '?' or '#' unescaped: percent-encode them "
                "(%2F, %3F, %23) (the URL is not shown)"
            )
        return value

    @field_validator("notify")
    @classmethod
    def _webhook(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not re.match(r"https?://[^/?#]+", value.get_secret_value()):
            raise ValueError("must be the webhook's http(s) URL (the value is not shown)")
        return value

    @field_validator("report_url")
    @classmethod
    def _report_template(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not SCHEME.match(value):
            raise ValueError(f"must be an http(s) URL, got {value!r}")
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"{exc} in {value!r}; a brace of the URL is written twice") from None
        if unknown := names - set(REPORT_URL_FIELDS):
            known = ", ".join(f"{{{name}}}" for name in REPORT_URL_FIELDS)
            raise ValueError(f"{{{sorted(unknown)[0]}}} is no field of it; use {known}")
        return value

    @field_validator("site_url")
    @classmethod
    def _site_address(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not re.fullmatch(r"https?://[^/?#\s]+(/[^?#\s]*)?", value, re.IGNORECASE):
            raise ValueError(f"must be the site's http(s) address, got {value!r}")
        return value if value.endswith("/") else value + "/"

    @field_validator("discuss")
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("names no discussion category")
        return value.strip() if value else value

    @field_validator("input_budget", "output_tokens", "max_calls", "jobs", "max_attempts")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"must be at least 1, got {value}")
        return value

    @field_validator(
        "timeout", "max_retry_wait", "max_retry_time", "retry_base_wait", "batch_wait", "batch_poll"
    )
    @classmethod
    def _above_zero(cls, value: float) -> float:
        if value <= 0:
            raise ValueError(f"must be more than 0, got {value:g}")
        return value

    @field_validator("github_wait")
    @classmethod
    def _not_negative(cls, value: float) -> float:
        if value < 0:
            raise ValueError(f"must be 0 or more, got {value:g}")
        return value

    @field_validator("tz")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            named_zone(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    def model_post_init(self, _: Any) -> None:
        # Whatever a server echoes of these is masked in every line and record (logmask).
        for secret in (self.github_token, self.openai_api_key):
            if secret is not None:
                logmask.hide(secret.get_secret_value())
        logmask.hide_url(self.notify.get_secret_value() if self.notify else None, whole=True)
        for url in (self.github_url, self.openai_base_url):
            logmask.hide_url(url)

    def require_repo(self) -> str:
        """The repository, or a ConfigError saying how to set it."""
        if not self.repo:
            raise ConfigError("no repository given: pass --repo owner/name or export PRHUB_REPO")
        return self.repo

    @property
    def endpoint(self) -> str:
        """The LLM endpoint as the store remembers it: its URL without credentials."""
        return shown_url(self.openai_base_url) or OPENAI_URL

    def prepare_key(self) -> str:
        """A short hash of the settings that change what the model is shown."""
        fields = ("encoding", "input_budget", "output_tokens", "max_calls", "noise_globs")
        data = json.dumps({f: getattr(self, f) for f in fields}, sort_keys=True, default=list)
        return hashlib.sha256(data.encode()).hexdigest()[:12]


def _repo_shaped(value: str) -> str:
    """`value` when it is a repository's owner/name, else a ValueError saying what it must be."""
    if not (REPO_SHAPE.fullmatch(value) and value.split("/")[1] not in {".", ".."}):
        raise ValueError(
            f"repository must look like owner/name (letters, digits, '-' in the owner; "
            f"also '.' and '_' in the name), got {value!r}"
        )
    return value


# What a report_url template may name: the repository, its owner and name, and the report's
# file name without its suffix (2026-W31).
REPORT_URL_FIELDS = ("repo", "owner", "name", "week")


def price(settings: Settings) -> Price | None:
    """USD per million input, output and cached input tokens of the model in use, if known."""
    return {**PRICES, **settings.prices}.get(settings.model)


def batch_price(settings: Settings) -> Price | None:
    """USD per million tokens of a request sent in a batch, if the model's price is known."""
    rates = price(settings)
    share = settings.batch_shares.get(settings.model, BATCH_SHARE)
    return None if rates is None else (rates[0] * share, rates[1] * share, rates[2] * share)


def default_store() -> Path:
    """The store when none is given: prhub.db in the user data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir("prhub")) / "prhub.db"


def named_zone(tz: str) -> ZoneInfo:
    """The IANA timezone named `tz`."""
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown timezone {tz!r}: use an IANA name such as Asia/Shanghai or UTC"
        ) from None
