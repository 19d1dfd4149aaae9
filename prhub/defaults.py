"""Each setting's environment variable and the built-in defaults `--help` shows, in plain Python:
the CLI's help names them without loading pydantic (start-up time). `config.Settings` reads them."""

from __future__ import annotations

from typing import Any, Literal, get_args

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
    "max_retry_time": "PRHUB_MAX_RETRY_TIME",
    "github_wait": "PRHUB_GITHUB_WAIT",
    "tz": "PRHUB_TZ",
    "jobs": "PRHUB_JOBS",
    "store": "PRHUB_STORE",
    "prompt_dir": "PRHUB_PROMPT_DIR",
    "discuss": "PRHUB_DISCUSS",
    "discuss_repo": "PRHUB_DISCUSS_REPO",
    "report_url": "PRHUB_REPORT_URL",
    "site_url": "PRHUB_SITE_URL",
    "notify": "PRHUB_NOTIFY",
    "notify_format": "PRHUB_NOTIFY_FORMAT",
    "batch": "PRHUB_BATCH",
    "batch_corrections": "PRHUB_BATCH_CORRECTIONS",
    "batch_wait": "PRHUB_BATCH_WAIT",
}

# Where the LLM is called when no base URL is set: the openai SDK's own default.
OPENAI_URL = "https://api.openai.com/v1"

# How the reply's shape is asked for, of the modes a user may choose (what each does: `llm.MODES`).
ResponseMode = Literal["json_schema", "json_object"]
RESPONSE_MODES: tuple[str, ...] = get_args(ResponseMode)
# Where batch mode sends a corrective call: online at once, or into the next batch.
BatchCorrections = Literal["online", "batch"]

# The chat webhooks `--notify` posts to, by the shape of their messages.
NotifyFormat = Literal["feishu", "dingtalk", "wecom", "slack"]
NOTIFY_FORMATS: tuple[str, ...] = get_args(NotifyFormat)

# The defaults of the settings that are also command-line options (why each: `config.Settings`).
DEFAULTS: dict[str, Any] = {
    "github_url": "https://api.github.com",
    "model": "gpt-4o-mini",
    "response_mode": "json_schema",
    "input_budget": 24_000,
    "max_calls": 4,
    "tz": "Asia/Shanghai",
    "jobs": 4,
    "batch_corrections": "online",
}

# Characters a reply may hold for each token of its `max_tokens`: a longer one is no model's
# answer. The bound of an online reply, and of any text `prhub import` takes.
CHARS_PER_TOKEN = 16
