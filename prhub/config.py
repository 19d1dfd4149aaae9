"""Settings: one frozen object built from environment and flags, passed down."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError, field_validator

from prhub.errors import ConfigError

# Environment variable for each setting; flags given on the command line win over these.
ENV = {
    "repo": "PRHUB_REPO",
    "github_url": "GITHUB_API_URL",
    "github_token": "GITHUB_TOKEN",
    "openai_base_url": "OPENAI_BASE_URL",
    "openai_api_key": "OPENAI_API_KEY",
    "model": "PRHUB_MODEL",
    "response_mode": "PRHUB_RESPONSE_MODE",
    "input_budget": "PRHUB_INPUT_BUDGET",
    "output_tokens": "PRHUB_OUTPUT_TOKENS",
    "max_calls": "PRHUB_MAX_CALLS",
    "timeout": "PRHUB_TIMEOUT",
    "max_attempts": "PRHUB_MAX_ATTEMPTS",
    "retry_base_wait": "PRHUB_RETRY_BASE_WAIT",
    "tz": "PRHUB_TZ",
    "jobs": "PRHUB_JOBS",
    "store": "PRHUB_STORE",
}


class Settings(BaseModel):
    """Everything prhub needs to know about where to read, whom to ask and how much to send."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo: str | None = None
    github_url: str = "https://api.github.com"
    github_token: SecretStr | None = None
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    # json_schema: the endpoint enforces the schema; json_object: the prompt carries it.
    response_mode: Literal["json_schema", "json_object"] = "json_schema"
    # Defaults fit a 32k-context model: prompt plus reserved reply stay under 32,768 tokens.
    input_budget: int = 24_000
    output_tokens: int = 4_000
    max_calls: int = 4
    encoding: str = "o200k_base"
    noise_globs: tuple[str, ...] = ()
    timeout: float = 120.0
    max_attempts: int = 5
    max_retry_wait: float = 60.0
    retry_base_wait: float = 1.0
    tz: str = "Asia/Shanghai"
    jobs: int = 4
    store: Path | None = None
    allow_unmerged: bool = False
    refresh: bool = False

    @field_validator("repo")
    @classmethod
    def _repo_shape(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", value):
            raise ValueError(f"repository must look like owner/name, got {value!r}")
        return value

    @field_validator("input_budget", "output_tokens", "max_calls", "jobs", "max_attempts")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be at least 1")
        return value

    def require_repo(self) -> str:
        """The repository, or a ConfigError saying how to set it."""
        if not self.repo:
            raise ConfigError("no repository given: pass --repo owner/name or export PRHUB_REPO")
        return self.repo

    def prepare_key(self) -> str:
        """A short hash of the settings that change what the model is shown."""
        fields = ("encoding", "input_budget", "output_tokens", "max_calls", "noise_globs")
        data = json.dumps({f: getattr(self, f) for f in fields}, sort_keys=True, default=list)
        return hashlib.sha256(data.encode()).hexdigest()[:12]


def load_settings(
    flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Settings from the environment, overridden by the flags that were given (not None)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {key: env[name] for key, name in ENV.items() if env.get(name)}
    values.update({k: v for k, v in (flags or {}).items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "settings"
        name = ENV.get(field, field)
        raise ConfigError(f"invalid {field} ({name}): {err['msg']}") from None
