"""What people type: repository and PR spellings, help, years, --out suffixes."""

from __future__ import annotations

import pytest

from tests.factories import prhub

WEEK = ("--week", "31", "--year", "2026")


@pytest.mark.parametrize(
    "spelling",
    [
        "ACME/Rocket",
        "https://github.com/Acme/ROCKET",
        "acme/rocket.git",
        "git@github.com:acme/rocket.git",
    ],
)
def test_one_repository_whatever_its_spelling(env, llm, tmp_path, spelling):
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    calls = len(llm.bodies)
    again = prhub(env, "weekly", *WEEK, "--repo", spelling)
    assert again.exit_code == 0, again.stderr
    assert len(llm.bodies) == calls  # the store's digests and narrative, under GitHub's name
    assert "0 LLM calls" in again.stderr
    trees = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "reports").glob("*/*"))
    assert trees == ["reports/acme/rocket"]


def test_the_name_github_gives_titles_the_report(env, github, tmp_path):
    result = prhub(env, "weekly", *WEEK, "--repo", "ACME/ROCKET")
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.md").read_text()
    assert text.startswith("# rocket 仓库周报")
    assert not (tmp_path / "reports" / "ACME").exists()


def refuse_json_schema(llm) -> None:
    """The stand-in refuses json_schema as endpoints without it do."""
    llm.flavour = "deepseek"


def test_an_explicit_response_mode_wins_over_the_learned_one(env, llm):
    refuse_json_schema(llm)
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    shown = prhub(env, "config")
    assert 'response_mode = "json_object"  # store: learned' in shown.stdout
    llm.flavour = "openai"
    sent = len(llm.bodies)
    again = prhub(env, "weekly", *WEEK, "--refresh", "--response-mode", "json_schema")
    assert again.exit_code == 0, again.stderr
    formats = {b["response_format"]["type"] for b in llm.bodies[sent:]}
    assert formats == {"json_schema"}
    explicit = prhub(env, "config", "--response-mode", "json_schema")
    assert 'response_mode = "json_schema"  # flag --response-mode' in explicit.stdout


def test_the_learned_response_mode_can_be_forgotten(env, llm):
    refuse_json_schema(llm)
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    forgot = prhub(env, "config", "--forget-mode")
    assert forgot.exit_code == 0 and "forgot the response mode" in forgot.stderr
    assert 'response_mode = "json_schema"  # default' in prhub(env, "config").stdout


@pytest.mark.parametrize("argv", [["-h"], ["help"], ["weekly", "-h"], ["help", "weekly"]])
def test_help_as_people_ask_for_it(env, argv):
    result = prhub(env, *argv)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: ") and "-h, --help" in result.stdout
    if "weekly" in argv:
        assert "--week" in result.stdout


def test_help_for_no_such_command_is_refused(env):
    result = prhub(env, "help", "wekly")
    assert result.exit_code == 2 and "no such command 'wekly'" in result.stderr


@pytest.mark.parametrize(
    "pr",
    [
        "101",
        "#101",
        "https://github.com/acme/rocket/pull/101",
        "https://github.com/acme/rocket/pull/101/files",
    ],
)
def test_a_pr_as_people_type_it(env, llm, pr):
    typed = {**env, "PRHUB_REPO": None} if pr.startswith("https") else env
    result = prhub(typed, "summarize", "--pr", pr, "-q")
    assert result.exit_code == 0, result.stderr
    assert "#101" in result.stdout


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--pr", "101", "--pr", "102"], "one PR a run, got 2"),
        (["--pr", "x7"], "'x7' is no PR"),
        (["--pr", "0"], "'0' is no PR"),
        (["--pr", "https://github.com/other/repo/pull/3"], "the URL names other/repo but --repo"),
    ],
)
def test_a_pr_that_cannot_be_taken_is_refused(env, llm, argv, says):
    result = prhub(env, "summarize", "--repo", "acme/rocket", *argv)
    assert result.exit_code == 2 and says in result.stderr, result.stderr
    assert llm.bodies == []


def test_gh_token_is_read_as_gh_reads_it(env, github):
    taken = prhub({**env, "GITHUB_TOKEN": None, "GH_TOKEN": env["GITHUB_TOKEN"]}, "weekly", *WEEK)
    assert taken.exit_code == 0, taken.stderr
    both = {**env, "GITHUB_TOKEN": "ghp_wrong", "GH_TOKEN": env["GITHUB_TOKEN"]}
    assert prhub(both, "weekly", *WEEK).exit_code == 0  # GH_TOKEN first, as in gh
    assert (
        "github_token = set (41 characters, not shown)  # env GH_TOKEN"
        in prhub(both, "config").stdout
    )


def test_the_repository_of_git_remote_origin(env, tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    url = "https://github.com/acme/rocket.git"
    subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", url], check=True)
    result = prhub({**env, "PRHUB_REPO": None}, "weekly", *WEEK)
    assert result.exit_code == 0, result.stderr
    assert (
        result.stderr.splitlines()[0]
        == "prhub: repository acme/rocket, from `git remote get-url origin`"
    )


def test_without_a_repository_or_a_checkout_says_so(env):
    result = prhub({**env, "PRHUB_REPO": None}, "weekly", *WEEK)
    assert result.exit_code == 3 and "no repository given" in result.stderr


@pytest.mark.parametrize("year", ["26", "2007", "3026"])
def test_years_outside_a_sane_range_are_refused(env, llm, year, tmp_path):
    result = prhub(env, "weekly", "--week", "31", "--year", year)
    assert result.exit_code == 2 and "--year" in result.stderr
    assert not (tmp_path / "reports").exists()


def test_out_with_a_known_suffix_implies_the_format(env, tmp_path):
    assert prhub(env, "weekly", *WEEK, "--out", "x.json").exit_code == 0
    assert (tmp_path / "x.json").read_text().lstrip().startswith("{")
    assert prhub(env, "summarize", "--pr", "101", "--out", "d.html").exit_code == 0
    assert (tmp_path / "d.html").read_text().lower().startswith("<!doctype html>")
    refused = prhub(env, "weekly", *WEEK, "--out", "x.json", "--format", "html")
    assert refused.exit_code == 2 and "names a json file but --format is html" in refused.stderr


@pytest.mark.parametrize("how", ["flag", "env"])
def test_a_prompt_dir_that_does_not_exist_is_refused(env, llm, tmp_path, how):
    missing = str(tmp_path / "nonexistent")
    if how == "flag":
        result = prhub(env, "weekly", *WEEK, "--prompt-dir", missing)
    else:
        result = prhub({**env, "PRHUB_PROMPT_DIR": missing}, "weekly", *WEEK)
    assert result.exit_code == 3 and f"prompt directory {missing}" in result.stderr
    assert llm.bodies == []
    assert prhub(env, "prompts", "--prompt-dir", missing).exit_code == 3


def test_a_week_in_another_timezone_has_a_file_of_its_own(env, tmp_path):
    assert prhub(env, "weekly", *WEEK).exit_code == 0
    assert prhub(env, "weekly", *WEEK, "--tz", "UTC").exit_code == 0
    assert prhub(env, "weekly", *WEEK, "--tz", "America/New_York").exit_code == 0
    names = sorted(p.name for p in (tmp_path / "reports" / "acme" / "rocket").iterdir())
    assert names == ["2026-W31.America-New_York.md", "2026-W31.UTC.md", "2026-W31.md", "pr"]
    # Each report's digests beside it show its timezone's times, so none overwrites another's.
    digests = {p.name for p in (tmp_path / "reports" / "acme" / "rocket" / "pr").iterdir()}
    assert {"101.md", "101.UTC.md"} <= digests
    utc = (tmp_path / "reports" / "acme" / "rocket" / "2026-W31.UTC.md").read_text()
    assert "(pr/101.UTC.md)" in utc
