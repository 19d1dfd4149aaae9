"""What people type: repository and PR spellings, help, years, --out suffixes (issue 22)."""

from __future__ import annotations

import pytest

from tests.test_cli_weekly import env as env  # noqa: F401 (the fixture)
from tests.test_cli_weekly import prhub

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
