"""The error hierarchy: one exit code per class, each documented once in the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prhub import errors
from prhub.errors import PrhubError
from tests.factories import ROOT, cli_env, closed_port_url, summarize


def error_classes() -> list[type[PrhubError]]:
    """Every PrhubError subclass defined in prhub.errors, the base excluded."""
    return [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, PrhubError) and value is not PrhubError
    ]


def readme_codes() -> list[int]:
    """The codes in the first column of the README's exit-code table, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    return [int(m) for m in re.findall(r"^\|\s*(\d+)\s*\|", section, re.MULTILINE)]


def test_every_subclass_has_its_own_code_between_3_and_29():
    classes = error_classes()
    assert {errors.ConfigError, errors.OutputError} <= set(classes)
    codes = [cls.exit_code for cls in classes]
    assert len(set(codes)) == len(codes), {cls.__name__: cls.exit_code for cls in classes}
    assert all(3 <= code <= 29 for code in codes), codes  # 1 and 2 are a bug's and usage's


def test_every_error_class_says_in_one_line_what_it_means():
    for cls in error_classes():
        assert cls.__doc__ and "\n" not in cls.__doc__.strip(), cls.__name__


@pytest.mark.parametrize("cls", [PrhubError, *error_classes()], ids=lambda cls: cls.__name__)
def test_the_cli_exits_with_the_code_of_the_error_and_its_message_alone(
    cls: type[PrhubError], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from prhub.run import week

    def fail(run: object, number: int) -> None:
        raise cls("what failed: what to do")

    monkeypatch.setattr(week, "summarize", fail)
    nowhere = closed_port_url()
    result = summarize(cli_env(nowhere, nowhere + "/v1", tmp_path / "store.db"))
    assert result.exit_code == cls.exit_code, (result.stderr, result.exception)
    assert result.stderr == "prhub: error: what failed: what to do\n"
    assert result.stdout == ""
    assert cls.exit_code in readme_codes()


def test_readme_table_lists_each_code_exactly_once():
    codes = readme_codes()
    assert len(codes) == len(set(codes)), codes
    classes = {cls.exit_code for cls in error_classes()}
    # 0 is success and 2 is Typer's usage error; the rest are the hierarchy's.
    assert set(codes) == {0, PrhubError.exit_code, 2} | classes
    assert codes == sorted(codes)


def test_secret_advice_says_where_to_set_it():
    from prhub.errors import set_secret

    assert set_secret("OPENAI_API_KEY", {}) == "export OPENAI_API_KEY"
    actions = set_secret("OPENAI_API_KEY", {"GITHUB_ACTIONS": "true", "CI": "true"})
    assert "Settings > Secrets and variables > Actions" in actions
    assert "${{ secrets.OPENAI_API_KEY }}" in actions
    assert "${{ secrets.GITHUB_TOKEN }}" in set_secret("GITHUB_TOKEN", {"GITHUB_ACTIONS": "true"})
    assert "secret variable of this CI job" in set_secret("OPENAI_API_KEY", {"CI": "1"})
