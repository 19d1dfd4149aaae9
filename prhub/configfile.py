"""Settings from defaults, a config file, the environment and flags: the config file found,
read and checked key by key, each value's source kept for `prhub config`.

The config file is --config PATH, else $PRHUB_CONFIG, else ./prhub.toml, else [tool.prhub] in
./pyproject.toml. Secrets (tokens, keys) come from the environment only.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from prhub.config import PER_RUN, SCHEME, SECRETS, URLS, Settings
from prhub.defaults import ENV
from prhub.errors import ConfigError


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
        if key in URLS and isinstance(value, str) and not SCHEME.match(value):
            raise ConfigError(
                f"{origin.where([key])}: {value!r} has no scheme; write e.g. http://{value}"
            )


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


def _flag(key: str) -> str:
    """The command-line flag of a setting: its name, but `prhub site --url` for site_url."""
    return "--url" if key == "site_url" else "--" + key.replace("_", "-")


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
    origins.update((key, _Origin("flag", _flag(key))) for key in flags)
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
