"""Settings: one frozen object from flags, environment and config file, passed down.

Precedence, highest first: command-line flags; environment variables; the config file's
[repos."owner/name"] section for the repository in use; the config file's top level; defaults.
The config file is --config PATH, else $PRHUB_CONFIG, else ./prhub.toml, else [tool.prhub] in
./pyproject.toml. Secrets (tokens, keys) come from the environment only.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import string
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from prhub import logmask
from prhub.defaults import DEFAULTS, ENV, OPENAI_URL, BatchCorrections, NotifyFormat, ResponseMode
from prhub.errors import ConfigError
from prhub.logmask import login, shown_url
from prhub.names import repo_name

# GitHub's rules: an owner of letters, digits and single hyphens; a name of letters, digits, . _ -
REPO_SHAPE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}/[A-Za-z0-9._-]{1,100}")

SECRETS = ("github_token", "openai_api_key", "notify")  # a webhook's URL is its credential
# Switches for one run, never in a file.
PER_RUN = ("refresh", "allow_unmerged", "wait", "config_file")

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
        if not _SCHEME.match(value):
            raise ValueError(f"must be an http(s) URL, got {value!r}")
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"{exc} in {value!r}; a brace of the URL is written twice") from None
        if unknown := names - set(REPORT_URL_FIELDS):
            known = ", ".join(f"{{{name}}}" for name in REPORT_URL_FIELDS)
            raise ValueError(f"{{{sorted(unknown)[0]}}} is no field of it; use {known}")
        return value

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


def find_config(explicit: Path | None, env: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file in use: --config, $PRHUB_CONFIG, ./prhub.toml or ./pyproject.toml."""
    if explicit or env.get("PRHUB_CONFIG"):
        path = Path(explicit or env["PRHUB_CONFIG"])
        if not path.is_file():
            raise ConfigError(f"config file {path} not found")
        return path
    for name in ("prhub.toml", "pyproject.toml"):
        if (cwd / name).is_file():
            return cwd / name
    return None


def read_config(path: Path) -> dict[str, Any]:
    """The prhub table of a config file: the whole prhub.toml, or [tool.prhub] of pyproject."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("prhub", {})
    repos = data.get("repos")
    sections = [
        data,
        *(v for v in (repos.values() if isinstance(repos, dict) else []) if isinstance(v, dict)),
    ]
    for key in SECRETS:
        if any(key in section for section in sections):
            raise ConfigError(f"{path}: keep {key} out of files; export {ENV[key]} instead")
    for key in PER_RUN:
        if any(key in section for section in sections):
            raise ConfigError(f"{path}: {key} is a switch for one run, not a file setting")
    return data


class _Price(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    input: float
    output: float
    cached: float | None = None  # default: no discount for cached input
    batch: float | None = Field(default=None, ge=0)  # share of these in a batch; BATCH_SHARE


class _File(BaseModel):
    """The shape a config file must have; values are checked again as Settings."""

    model_config = ConfigDict(extra="allow")
    prices: dict[str, _Price] = {}
    # One section per repository, or only their names: `repos = ["o/a", "o/b"]`.
    repos: dict[str, dict[str, Any]] = {}
    noise_globs: list[str] | None = None

    @field_validator("repos", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return dict.fromkeys(value, {})  # names without settings of their own
        if not isinstance(value, dict):
            raise ValueError(
                f"must be a list of repositories (owner/name) or a table per repository, "
                f"got {value!r}"
            )
        return value


# The keys a config file may set: every setting but secrets, switches for one run, provenance;
# `repos` only at the top, where it names the repositories or holds their sections.
FILE_KEYS = tuple(
    name
    for name in Settings.model_fields
    if name not in (*SECRETS, *PER_RUN, "sources", "repos", "batch_shares")
)


def toml_key(name: str) -> str:
    """A TOML key as a file spells it: bare when it can be, else quoted."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)


def _table(path: Path, keys: Sequence[str]) -> str:
    """A config file and a table in it as TOML spells it: `prhub.toml [repos."o/r"]`."""
    keys = [*(("tool", "prhub") if path.name == "pyproject.toml" else ()), *keys]
    return f"{path} [{'.'.join(map(toml_key, keys))}]" if keys else str(path)


@dataclass(frozen=True)
class _Origin:
    """Where one setting's value came from: a flag, a variable or a table of a config file."""

    kind: Literal["flag", "env", "file"]
    name: str = ""  # the flag or the variable
    path: Path = Path()
    table: tuple[str, ...] = ()  # () for a file's top level, ("repos", "o/r") for a section

    def where(self, loc: Sequence[str | int]) -> str:
        """How an error names the value at `loc`: `--jobs`, `PRHUB_JOBS`, `F [repos."o/r"] jobs`."""
        if self.kind != "file":
            return self.name
        keys = [str(k) for k in loc if not isinstance(k, int)]
        return f"{_table(self.path, (*self.table, *keys[:-1]))} {toml_key(keys[-1])}"

    def label(self, *table: str) -> str:
        """How `prhub config` names it: `flag --jobs`, `env PRHUB_JOBS`, `file F [repos."o/r"]`."""
        if self.kind != "file":
            return f"{self.kind} {self.name}"
        return f"file {_table(self.path, (*self.table, *table))}"


def _unknown(key: str, known: Sequence[str], what: str = "setting") -> str:
    """What to say about a key no one reads: the closest known one, else where to look."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"no such {what}; did you mean {close[0]}?"
    if len(known) <= 5:
        return f"no such {what}; known: {', '.join(known)}"
    return f"no such {what}; `prhub config` lists them all"


# What a value that failed to parse should have been, by pydantic's error type.
_EXPECTED = {
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "a whole number"),
    **dict.fromkeys(("float_parsing", "float_type"), "a number"),
    "finite_number": "a finite number",
    **dict.fromkeys(("bool_parsing", "bool_type"), "true or false"),
    **dict.fromkeys(("list_type", "tuple_type"), "a list"),
    **{"string_type": "text", "dict_type": "a table"},
}


def _problem(err: Any) -> str:
    """One pydantic error in prhub's words, with the value that caused it."""
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "value_error" and "error" in ctx:
        return str(ctx["error"])
    if kind == "extra_forbidden":  # only a price's table forbids extra keys
        return _unknown(str(err["loc"][-1]), list(_Price.model_fields), "key")
    if kind == "missing":
        return "missing"
    if kind == "literal_error":
        return f"must be {ctx['expected']}, got {value!r}"
    if kind in _EXPECTED:
        return f"must be {_EXPECTED[kind]}, got {value!r}"
    return f"{err['msg'][:1].lower()}{err['msg'][1:]}, got {value!r}"


def _file_values(
    data: dict[str, Any], repo: str | None, path: Path
) -> tuple[dict[str, Any], dict[str, _Origin]]:
    """A config file's values for `repo` and their tables: its top level, then that section."""
    top = _shaped(data, _Origin("file", path=path))
    listed = data.get("repos") or {}
    if listed:  # a list of names, or the sections' names, in the file's order
        top["repos"] = list(listed)
    repos = listed if isinstance(listed, dict) else {}
    for name, section in repos.items():  # a typo is refused in every section, used or not
        _check_keys(section, _Origin("file", path=path, table=("repos", name)))
    name = repo or top.get("repo") or ""
    origin = _Origin("file", path=path, table=("repos", name))
    section = _shaped(repos[name], origin) if name in repos else {}
    origins = {key: _Origin("file", path=path) for key in top}
    origins.update((key, origin) for key in section)
    return {**top, **section}, origins


def _check_keys(data: dict[str, Any], origin: _Origin) -> None:
    """Refuses a key that is no setting, or a table that is none, naming the closest one;
    refuses a URL without a scheme, blaming the file that holds it."""
    known = FILE_KEYS if origin.table else (*FILE_KEYS, "repos")
    tables = [k for k in ("repos", "prices", "tags") if k in known]
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"{origin.where([key])}: {_unknown(key, known)}")
        if isinstance(value, dict) and key not in tables:
            table = _table(origin.path, (*origin.table, key))
            raise ConfigError(f"{table}: {_unknown(key, tables, 'table')}")
        if key in _URLS and isinstance(value, str) and not _SCHEME.match(value):
            raise ConfigError(
                f"{origin.where([key])}: {value!r} has no scheme; write e.g. http://{value}"
            )


_URLS = ("openai_base_url", "github_url", "report_url")
_SCHEME = re.compile(r"https?://", re.IGNORECASE)


def _shaped(data: dict[str, Any], origin: _Origin) -> dict[str, Any]:
    """One table of a config file checked for its keys, prices and globs in Settings' types."""
    _check_keys(data, origin)
    try:
        shape = _File.model_validate(data)
    except ValidationError as exc:
        # A mistyped key before the missing one it causes: `ouput` says more than `output`.
        err = min(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        raise ConfigError(f"{origin.where(err['loc'])}: {_problem(err)}") from None
    values = {k: v for k, v in data.items() if k not in ("repos", "prices", "noise_globs")}
    if shape.prices:
        values["prices"] = {
            m: (p.input, p.output, p.input if p.cached is None else p.cached)
            for m, p in shape.prices.items()
        }
        shares = {m: p.batch for m, p in shape.prices.items() if p.batch is not None}
        if shares:
            values["batch_shares"] = shares
    if shape.noise_globs is not None:
        values["noise_globs"] = tuple(shape.noise_globs)
    return values


def _config_source(explicit: Path | None, env: Mapping[str, str], path: Path) -> str:
    """How the config file in use was found."""
    if explicit:
        return "flag --config"
    if env.get("PRHUB_CONFIG"):
        return "env PRHUB_CONFIG"
    return f"found in {path.parent}"


def load_settings(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    config: Path | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Settings from defaults, config file, environment and flags (not None), in that order."""
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    names = {**ENV, **({"github_token": "GH_TOKEN"} if env.get("GH_TOKEN") else {})}  # as gh
    from_env = {key: env[name] for key, name in names.items() if env.get(name)}
    path = find_config(config, env, cwd or Path.cwd())
    values: dict[str, Any] = {}
    origins: dict[str, _Origin] = {}
    sources: dict[str, str] = {}
    data = read_config(path) if path else {}
    if path and data:
        repo = flags.get("repo") or from_env.get("repo")
        values, origins = _file_values(data, repo, path)
        values["config_file"] = path
        sources["config_file"] = _config_source(config, env, path)
    values.update(from_env)
    origins.update((key, _Origin("env", names[key])) for key in from_env)
    values.update(flags)
    origins.update((key, _Origin("flag", "--" + key.replace("_", "-"))) for key in flags)
    for key, origin in origins.items():
        sources[key] = origin.label()
        if key in ("tags", "prices") and isinstance(values[key], dict):  # shown entry by entry
            for entry in values[key]:
                table = (key, entry) if key == "prices" else (key,)
                sources[f"{key}.{toml_key(entry)}"] = origin.label(*table)
    try:
        return Settings(**values, sources=sources)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = err["loc"] or ("settings",)
        came = origins.get(str(loc[0]))
        where = came.where(loc) if came else ".".join(map(str, loc))
        raise ConfigError(f"{where}: {_problem(err)}") from None


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
