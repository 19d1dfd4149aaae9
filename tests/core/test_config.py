"""Settings: precedence, config files, refusals, masking and the keys derived from them.

The CLI's own view of these (`prhub config`, exit codes) is in tests/cli/test_weekly.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from prhub.config import Settings, price
from prhub.configfile import load_settings
from prhub.errors import ConfigError
from prhub.logmask import shown_url

TOKEN = "ghp_" + "x" * 36
KEY = "sk-" + "k" * 29


def toml(folder: Path, text: str, name: str = "prhub.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


LAYERED = """
model = "file-model"
tz = "UTC"
jobs = 2
timeout = 30
max_calls = 6

[repos."o/r"]
model = "repo-model"
jobs = 5
timeout = 45

[repos."o/other"]
model = "other-model"
"""


# Precedence


def test_flags_beat_env_beat_repo_section_beat_top_level_beat_defaults(tmp_path):
    path = toml(tmp_path, LAYERED)
    s = load_settings(
        {"repo": "o/r", "timeout": 10.0},
        env={"PRHUB_JOBS": "7", "PRHUB_TIMEOUT": "20"},
        cwd=tmp_path,
    )
    assert s.timeout == 10.0  # flag over env, section and top level
    assert s.jobs == 7  # env over section and top level
    assert s.model == "repo-model"  # [repos."o/r"] over top level
    assert (s.tz, s.max_calls) == ("UTC", 6)  # top level over defaults
    assert (s.output_tokens, s.input_budget) == (4_000, 24_000)  # defaults
    assert s.config_file == path


def test_only_the_section_of_the_repository_in_use_applies(tmp_path):
    toml(tmp_path, LAYERED)
    assert load_settings({"repo": "o/other"}, env={}, cwd=tmp_path).model == "other-model"
    assert load_settings({}, env={"PRHUB_REPO": "o/other"}, cwd=tmp_path).model == "other-model"
    assert load_settings({"repo": "o/none"}, env={}, cwd=tmp_path).model == "file-model"


def test_a_repo_named_in_the_file_picks_its_own_section(tmp_path):
    toml(tmp_path, 'repo = "o/r"\n' + LAYERED)
    s = load_settings({}, env={}, cwd=tmp_path)
    assert (s.repo, s.model, s.jobs) == ("o/r", "repo-model", 5)


# The repositories of `weekly --all`


def test_repos_lists_the_repositories_as_github_names_them(tmp_path):
    path = toml(tmp_path, 'repos = ["o/a", "O/B.git", "https://github.com/o/c"]\nmodel = "m"\n')
    s = load_settings({}, env={}, cwd=tmp_path)
    assert s.repos == ("o/a", "O/B", "o/c")
    assert s.sources["repos"] == f"file {path}"
    assert s.repo is None  # the list picks no repository for a run of one


def test_the_sections_name_the_repositories_when_there_is_no_list(tmp_path):
    toml(tmp_path, LAYERED + '\n[repos."o/plain"]\n')
    s = load_settings({}, env={}, cwd=tmp_path)
    assert s.repos == ("o/r", "o/other", "o/plain")  # in the file's order
    # Each keeps applying to its own repository.
    assert load_settings({"repo": "o/r"}, env={}, cwd=tmp_path).model == "repo-model"
    assert load_settings({"repo": "o/plain"}, env={}, cwd=tmp_path).model == "file-model"


def test_a_bad_repos_list_names_the_file_and_the_key(tmp_path):
    path = toml(tmp_path, 'repos = ["o/a", "O/A"]\n')
    assert error(tmp_path) == f"{path} repos: names O/A twice"
    toml(tmp_path, 'repos = ["o/a", "not a repo"]\n')
    assert error(tmp_path).startswith(f"{path} repos: repository must look like owner/name")
    toml(tmp_path, "repos = [1]\n")
    assert error(tmp_path).startswith(f"{path} repos: must be a list of repositories")
    toml(tmp_path, '[repos."o/a"]\nrepos = ["o/b"]\n')
    assert error(tmp_path).startswith(f'{path} [repos."o/a"] repos: no such setting')


def test_a_list_and_sections_cannot_both_be_written(tmp_path):
    path = toml(tmp_path, 'repos = ["o/a"]\n\n[repos."o/a"]\njobs = 2\n')
    assert error(tmp_path).startswith(f"cannot read config file {path}: ")


def test_unset_flags_and_empty_variables_fall_through(tmp_path):
    toml(tmp_path, LAYERED)
    s = load_settings({"repo": "o/r", "jobs": None}, env={"PRHUB_MODEL": ""}, cwd=tmp_path)
    assert (s.jobs, s.model) == (5, "repo-model")


def test_secrets_come_from_the_environment():
    s = load_settings({}, env={"GITHUB_TOKEN": TOKEN, "OPENAI_API_KEY": KEY}, cwd=Path("/"))
    assert s.github_token is not None and s.github_token.get_secret_value() == TOKEN
    assert s.openai_api_key is not None and s.openai_api_key.get_secret_value() == KEY
    assert s.config_file is None


# Which file


def test_pyproject_tool_table_is_read_with_repo_sections(tmp_path):
    path = toml(
        tmp_path,
        '[project]\nname = "x"\n[tool.prhub]\njobs = 3\n[tool.prhub.repos."o/r"]\nmodel = "m"\n',
        "pyproject.toml",
    )
    s = load_settings({"repo": "o/r"}, env={}, cwd=tmp_path)
    assert (s.jobs, s.model, s.config_file) == (3, "m", path)


def test_a_pyproject_without_a_prhub_table_is_no_config(tmp_path):
    toml(tmp_path, '[project]\nname = "x"\n[tool.ruff]\nline-length = 100\n', "pyproject.toml")
    s = load_settings({}, env={}, cwd=tmp_path)
    assert s.config_file is None and s == Settings()


def test_prhub_toml_wins_over_pyproject(tmp_path):
    toml(tmp_path, "[tool.prhub]\njobs = 3\n", "pyproject.toml")
    path = toml(tmp_path, "jobs = 2\n")
    s = load_settings({}, env={}, cwd=tmp_path)
    assert (s.jobs, s.config_file) == (2, path)


def test_an_explicit_file_wins_over_prhub_config_and_the_folder(tmp_path):
    toml(tmp_path, "jobs = 2\n")
    from_env = toml(tmp_path, "jobs = 8\n", "env.toml")
    explicit = toml(tmp_path, "jobs = 9\n", "explicit.toml")
    env = {"PRHUB_CONFIG": str(from_env)}
    assert load_settings({}, env=env, cwd=tmp_path).jobs == 8
    assert load_settings({}, env=env, config=explicit, cwd=tmp_path).jobs == 9


def test_a_named_file_that_is_missing_is_refused(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=f"^config file {re.escape(str(missing))} not found$"):
        load_settings({}, env={}, config=missing, cwd=tmp_path)
    with pytest.raises(ConfigError, match="not found"):
        load_settings({}, env={"PRHUB_CONFIG": str(missing)}, cwd=tmp_path)


def test_a_file_that_is_not_toml_is_refused(tmp_path):
    path = toml(tmp_path, "jobs = = 2\n")
    with pytest.raises(ConfigError, match=f"^cannot read config file {re.escape(str(path))}: "):
        load_settings({}, env={}, cwd=tmp_path)


# Refusals


@pytest.mark.parametrize(
    ("text", "key", "variable"),
    [
        ('github_token = "ghp_SECRETVALUE"\n', "github_token", "GITHUB_TOKEN"),
        ('[repos."o/r"]\nopenai_api_key = "sk-SECRETVALUE"\n', "openai_api_key", "OPENAI_API_KEY"),
    ],
)
def test_secrets_in_a_file_are_refused_without_echoing_them(tmp_path, text, key, variable):
    path = toml(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        load_settings({}, env={}, cwd=tmp_path)
    assert str(raised.value) == f"{path}: keep {key} out of files; export {variable} instead"
    assert "SECRETVALUE" not in str(raised.value)


def test_a_secret_in_pyproject_is_refused(tmp_path):
    path = toml(tmp_path, '[tool.prhub]\ngithub_token = "ghp_x"\n', "pyproject.toml")
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: keep github_token out"):
        load_settings({}, env={}, cwd=tmp_path)


@pytest.mark.parametrize("key", ["refresh", "allow_unmerged", "wait", "config_file"])
def test_per_run_switches_are_refused_in_a_file(tmp_path, key):
    path = toml(tmp_path, f'[repos."o/r"]\n{key} = true\n')
    with pytest.raises(ConfigError) as raised:
        load_settings({}, env={}, cwd=tmp_path)
    assert str(raised.value) == f"{path}: {key} is a switch for one run, not a file setting"


def error(tmp_path: Path, flags: dict | None = None, env: dict | None = None) -> str:
    """The one-line message load_settings refuses these settings with."""
    with pytest.raises(ConfigError) as raised:
        load_settings(flags or {}, env=env or {}, cwd=tmp_path)
    return str(raised.value)


def test_unknown_keys_are_refused_with_the_closest_known_one(tmp_path):
    path = toml(tmp_path, 'modle = "typo"\n')
    assert error(tmp_path) == f"{path} modle: no such setting; did you mean model?"
    toml(tmp_path, '[repos."o/r"]\ninput_budjet = 8000\n')
    assert error(tmp_path, {"repo": "o/r"}) == (
        f'{path} [repos."o/r"] input_budjet: no such setting; did you mean input_budget?'
    )
    toml(tmp_path, 'colour = "red"\n')
    assert error(tmp_path) == f"{path} colour: no such setting; `prhub config` lists them all"


def test_a_typo_in_another_repositorys_section_is_refused_too(tmp_path):
    path = toml(tmp_path, '[repos."o/other"]\njbos = 2\n')
    assert error(tmp_path, {"repo": "o/r"}) == (
        f'{path} [repos."o/other"] jbos: no such setting; did you mean jobs?'
    )


def test_pyproject_errors_name_the_tool_table(tmp_path):
    path = toml(tmp_path, '[tool.prhub.repos."o/r"]\njobs = "eight"\n', "pyproject.toml")
    assert error(tmp_path, {"repo": "o/r"}) == (
        f"{path} [tool.prhub.repos.\"o/r\"] jobs: must be a whole number, got 'eight'"
    )


def test_a_price_names_its_share_in_a_batch(tmp_path):
    from prhub.config import batch_price, price

    toml(tmp_path, "[prices.m]\ninput = 1.0\noutput = 2.0\nbatch = 0.4\n")
    s = load_settings({"model": "m"}, env={}, cwd=tmp_path)
    assert batch_price(s) == pytest.approx(tuple(0.4 * r for r in price(s) or ()))
    other = load_settings({"model": "gpt-4o"}, env={}, cwd=tmp_path)
    assert batch_price(other) == pytest.approx(tuple(0.5 * r for r in price(other) or ()))
    path = toml(tmp_path, "[prices.m]\ninput = 1.0\noutput = 2.0\nbatch = -1\n")
    assert error(tmp_path).startswith(f"{path} [prices.m] batch: ")


def test_an_unknown_key_in_a_price_names_where_it_is(tmp_path):
    path = toml(tmp_path, "[prices.m]\ninput = 1.0\noutput = 2.0\ndiscount = 0.5\n")
    known = "known: input, output, cached, batch"
    assert error(tmp_path) == f"{path} [prices.m] discount: no such key; {known}"
    toml(tmp_path, '[prices."qwen2.5:14b"]\ninput = 1.0\n')
    assert error(tmp_path) == f'{path} [prices."qwen2.5:14b"] output: missing'


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PRHUB_JOBS": "0"}, "PRHUB_JOBS: must be at least 1, got 0"),
        ({"PRHUB_JOBS": "many"}, "PRHUB_JOBS: must be a whole number, got 'many'"),
        ({"PRHUB_TIMEOUT": "-1"}, "PRHUB_TIMEOUT: must be more than 0, got -1"),
        (
            {"PRHUB_REPO": "o/r/x"},
            "PRHUB_REPO: repository must look like owner/name (letters, digits, '-' in the "
            "owner; also '.' and '_' in the name), got 'o/r/x'",
        ),
        (
            {"PRHUB_TZ": "Mars/Base"},
            "PRHUB_TZ: unknown timezone 'Mars/Base': use an IANA name such as Asia/Shanghai or UTC",
        ),
        (
            {"PRHUB_RESPONSE_MODE": "xml"},
            "PRHUB_RESPONSE_MODE: must be 'json_schema' or 'json_object', got 'xml'",
        ),
    ],
)
def test_bad_values_name_their_variable_in_prhubs_words(tmp_path, env, message):
    assert error(tmp_path, env=env) == message


def test_bad_values_name_their_flag_or_their_file_and_table(tmp_path):
    assert error(tmp_path, {"repo": "verl"}).startswith("--repo: repository must look like")
    assert error(tmp_path, {"input_budget": 0}) == "--input-budget: must be at least 1, got 0"
    path = toml(tmp_path, 'jobs = "eight"\n[repos."o/r"]\ntimeout = 0\n[tags]\nascend = 3\n')
    assert error(tmp_path) == f"{path} jobs: must be a whole number, got 'eight'"
    assert error(tmp_path, env={"PRHUB_JOBS": "2", "PRHUB_REPO": "o/r"}) == (
        f'{path} [repos."o/r"] timeout: must be more than 0, got 0'
    )
    toml(tmp_path, "[tags]\nascend = 3\n")
    assert error(tmp_path) == f"{path} [tags] ascend: must be text, got 3"
    toml(tmp_path, "repos = 3\n")
    assert error(tmp_path) == (
        f"{path} repos: must be a list of repositories (owner/name) or a table per repository, "
        "got 3"
    )


def test_no_message_carries_pydantics_words(tmp_path):
    cases = [{"PRHUB_JOBS": "0"}, {"PRHUB_MAX_CALLS": "x"}, {"PRHUB_REPO": "-x/y"}]
    for env in cases:
        message = error(tmp_path, env=env)
        assert "Value error" not in message and "Input should" not in message, message


def test_settings_are_frozen():
    s = Settings()
    with pytest.raises(ValidationError):
        s.jobs = 8  # type: ignore[misc]


def test_require_repo():
    assert Settings(repo="o/r").require_repo() == "o/r"
    with pytest.raises(ConfigError) as raised:
        Settings().require_repo()
    assert str(raised.value) == "no repository given: pass --repo owner/name or export PRHUB_REPO"


# What is shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pass@llm.example.com/v1", "https://llm.example.com/v1"),
        ("http://token@127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://api.github.com", "https://api.github.com"),
        ("https://host/path/a@b", "https://host/path/a@b"),  # an @ after the host is no login
        ("http://host:8080/a@b", "http://host:8080/a@b"),  # a port, then a path
        ("https://u:p@ss@host/v1", "https://host/v1"),  # an unescaped @ in the password
        ("https://u:pa/ss@host", "https://host"),  # an unescaped / in the password
        ("https://u:pa?ss@host/v1", "https://host/v1"),  # an unescaped ? in the password
        ("https://u:pa#ss@host/v1", "https://host/v1"),  # an unescaped # in the password
        ("http://u:p?a#b@host:8/x?k=1", "http://host:8/x?k=1"),
        ("https://h/v1?email=a@b.c", "https://h/v1?email=a@b.c"),  # an @ in the query
        ("https://h/v1?api-key=abc&x=1", "https://h/v1?api-key=***&x=1"),
        ("https://h/v1?access_token=abc", "https://h/v1?access_token=***"),
        ("http://[::1", "http://[::1"),
        (None, ""),
        ("", ""),
    ],
)
def test_shown_url_strips_the_login(url, shown):
    assert shown_url(url) == shown


# Derived values


def test_price_from_the_table_the_config_or_none():
    assert price(Settings(model="gpt-4o-mini")) == (0.15, 0.60, 0.075)
    assert price(Settings(model="my-model")) is None
    mine = {"gpt-4o-mini": (1.0, 2.0, 0.5), "x": (3.0, 4.0, 3.0)}
    assert price(Settings(model="gpt-4o-mini", prices=mine)) == (1.0, 2.0, 0.5)


def test_price_from_a_config_file(tmp_path):
    toml(tmp_path, 'model = "local"\n[prices.local]\ninput = 0.5\noutput = 1.5\n')
    assert price(load_settings({}, env={}, cwd=tmp_path)) == (0.5, 1.5, 0.5)  # cached: no discount
    toml(tmp_path, 'model = "local"\n[prices.local]\ninput = 0.5\noutput = 1.5\ncached = 0.1\n')
    assert price(load_settings({}, env={}, cwd=tmp_path)) == (0.5, 1.5, 0.1)


def test_prepare_key_changes_with_what_the_model_is_shown():
    base = Settings()
    key = base.prepare_key()
    assert re.fullmatch(r"[0-9a-f]{12}", key)
    for change in (
        {"input_budget": 12_000},
        {"output_tokens": 2_000},
        {"max_calls": 2},
        {"encoding": "cl100k_base"},
        {"noise_globs": ("gen/**",)},
    ):
        assert base.model_copy(update=change).prepare_key() != key, change


def test_prepare_key_ignores_how_the_run_goes():
    key = Settings().prepare_key()
    for change in ({"jobs": 16}, {"timeout": 5.0}, {"tz": "UTC"}, {"max_attempts": 1}):
        assert Settings(**change).prepare_key() == key, change


def test_a_repo_sections_globs_and_prices_win_over_the_top_level(tmp_path):
    toml(
        tmp_path,
        """
noise_globs = ["top/**"]
[prices.m]
input = 1.0
output = 2.0
[repos."o/r"]
noise_globs = ["repo/**"]
[repos."o/r".prices.m]
input = 3.0
output = 4.0
""",
    )
    s = load_settings({"repo": "o/r"}, env={}, cwd=tmp_path)
    assert s.noise_globs == ("repo/**",)
    assert s.prices == {"m": (3.0, 4.0, 3.0)}
    other = load_settings({"repo": "o/x"}, env={}, cwd=tmp_path)
    assert other.noise_globs == ("top/**",) and other.prices == {"m": (1.0, 2.0, 1.0)}


def test_a_malformed_repo_section_names_it(tmp_path):
    path = toml(tmp_path, '[repos."o/r".prices.m]\ninput = "cheap"\noutput = 1\n')
    assert error(tmp_path, {"repo": "o/r"}) == (
        f"{path} [repos.\"o/r\".prices.m] input: must be a number, got 'cheap'"
    )


@pytest.mark.parametrize(
    "repo", ["../..", "a/..", "o/.", "-x/y", "x-/y", "a--b/c", "o//r", "o/r/x", "ab/c d"]
)
def test_a_repository_name_github_would_not_accept_is_refused(repo):
    with pytest.raises(ConfigError, match="owner/name"):
        load_settings({"repo": repo}, env={})


@pytest.mark.parametrize("repo", ["verl-project/verl", "o/r.js", "o/.github", "a1/b_c-d.e"])
def test_real_repository_names_pass(repo):
    assert load_settings({"repo": repo}, env={}).repo == repo


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "NaN", "Infinity"])
@pytest.mark.parametrize(
    "variable",
    ["PRHUB_RETRY_BASE_WAIT", "PRHUB_MAX_RETRY_TIME", "PRHUB_TIMEOUT"],
)
def test_a_number_that_is_not_finite_is_refused_from_the_environment(tmp_path, variable, value):
    assert error(tmp_path, env={variable: value}) == (
        f"{variable}: must be a finite number, got {value!r}"
    )


def test_a_number_that_is_not_finite_is_refused_from_a_flag_or_a_file(tmp_path):
    message = error(tmp_path, {"timeout": float("inf")})
    assert message == "--timeout: must be a finite number, got inf"
    path = toml(tmp_path, "max_retry_wait = nan\n")
    assert error(tmp_path) == f"{path} max_retry_wait: must be a finite number, got nan"
    path = toml(tmp_path, '[repos."o/r"]\nretry_base_wait = inf\n')
    assert error(tmp_path, env={"PRHUB_REPO": "o/r"}) == (
        f'{path} [repos."o/r"] retry_base_wait: must be a finite number, got inf'
    )
    path = toml(tmp_path, "[prices.m]\ninput = 1\noutput = nan\n")
    assert error(tmp_path) == f"{path} [prices.m] output: must be a finite number, got nan"


@pytest.mark.parametrize("variable", ["GITHUB_TOKEN", "OPENAI_API_KEY"])
@pytest.mark.parametrize("tail", ["\n", "\r\n", "\nX-Other: 1", "\t", " ", "\x00"])
def test_a_secret_holding_a_line_break_or_control_is_refused_unshown(tmp_path, variable, tail):
    secret = f"{TOKEN if variable == 'GITHUB_TOKEN' else KEY}"
    message = error(tmp_path, env={variable: secret + tail})
    assert message.startswith(f"{variable}: ") and "line break" in message
    assert secret not in message and secret[:8] not in message


@pytest.mark.parametrize("password", ["pa?ss", "pa#ss", "p?a#b", "pa/ss"])
@pytest.mark.parametrize("variable", ["OPENAI_BASE_URL", "GITHUB_API_URL"])
def test_a_url_whose_password_cannot_be_read_is_refused_unshown(tmp_path, variable, password):
    message = error(tmp_path, env={variable: f"https://user:{password}@host.example/v1"})
    assert message.startswith(f"{variable}: ") and "percent-encode" in message
    assert password not in message and "user" not in message


def test_a_url_with_an_escaped_password_is_taken(tmp_path):
    url = "https://user:pa%3Fss%23x@host.example/v1"
    assert load_settings({}, env={"OPENAI_BASE_URL": url}, cwd=tmp_path).openai_base_url == url


# Posting the week


def test_posting_settings_come_from_a_repository_section(tmp_path):
    toml(
        tmp_path,
        'notify_format = "slack"\n[repos."o/r"]\ndiscuss = "Weekly"\ndiscuss_repo = "o/talk"\n'
        'report_url = "https://o.github.io/r/{repo}/{week}.html"\n',
    )
    s = load_settings({}, env={"PRHUB_REPO": "o/r"}, cwd=tmp_path)
    assert (s.discuss, s.discuss_repo, s.notify_format) == ("Weekly", "o/talk", "slack")
    assert s.report_url == "https://o.github.io/r/{repo}/{week}.html"
    assert s.notify is None


def test_a_webhook_is_a_secret_kept_out_of_files_and_never_echoed(tmp_path):
    hook = "https://hooks.slack.com/services/T0/B0/SECRETPATH"
    path = toml(tmp_path, f'notify = "{hook}"\n')
    assert error(tmp_path) == f"{path}: keep notify out of files; export PRHUB_NOTIFY instead"
    path.unlink()
    s = load_settings({}, env={"PRHUB_NOTIFY": hook}, cwd=tmp_path)
    assert s.notify is not None and s.notify.get_secret_value() == hook
    assert "SECRETPATH" not in repr(s) and "SECRETPATH" not in str(s)
    refused = error(tmp_path, env={"PRHUB_NOTIFY": "hooks.slack.com/services/SECRETPATH"})
    assert refused == "PRHUB_NOTIFY: must be the webhook's http(s) URL (the value is not shown)"
    assert error(tmp_path, {"notify_format": "teams"}) == (
        "--notify-format: must be 'feishu', 'dingtalk', 'wecom' or 'slack', got 'teams'"
    )


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("o.github.io/{week}", "must be an http(s) URL, got 'o.github.io/{week}'"),
        (
            "https://o.io/{month}.html",
            "{month} is no field of it; use {repo}, {owner}, {name}, {week}",
        ),
        ("https://o.io/{week", "a brace of the URL is written twice"),
    ],
)
def test_a_report_url_template_names_only_what_prhub_fills_in(tmp_path, template, message):
    assert message in error(tmp_path, {"report_url": template})
    assert error(tmp_path, {"report_url": template}).startswith("--report-url: ")


def test_a_discussion_repository_is_a_repository_name(tmp_path):
    s = load_settings({"discuss_repo": "https://github.com/o/talk.git"}, env={}, cwd=tmp_path)
    assert s.discuss_repo == "o/talk"
    assert error(tmp_path, env={"PRHUB_DISCUSS_REPO": "talk"}).startswith(
        "PRHUB_DISCUSS_REPO: repository must look like owner/name"
    )
