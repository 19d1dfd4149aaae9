"""What a path is: one answer for every stage."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from prhub.model import FileChange, PullRequest
from prhub.paths import (
    Kind,
    header_marker,
    in_data_dir,
    is_binary_format,
    is_code,
    is_data_format,
    is_minified,
    is_test,
    is_tooling,
    kind,
    marks,
    of,
    with_attributes,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # tests: by directory anywhere in the path, or by name
        ("e2e/login.py", "test"),
        ("tests/unit/test_a.py", "test"),
        ("pkg/testing/helpers.py", "test"),
        ("spec/models/user_spec.rb", "test"),
        ("web/__tests__/a.js", "test"),
        ("Tests/A.py", "test"),
        ("src/test_a.py", "test"),
        ("src/a_test.go", "test"),
        ("web/a.test.ts", "test"),
        ("web/a.spec.tsx", "test"),
        ("conftest.py", "test"),
        ("tests/fixtures/data.json", "test"),  # a fixture belongs to its tests
        ("tests/__snapshots__/view.snap", "test"),
        ("tests/golden/out.png", "test"),
        ("tests/README.md", "test"),
        # code
        ("src/app.py", "code"),
        ("setup.py", "code"),
        ("csrc/kernel.cu", "code"),
        ("scripts/run.sh", "code"),
        ("web/app.tsx", "code"),
        ("src/contest.py", "code"),  # "test" inside a word is not a test
        ("src/generation.py", "code"),
        ("a/data.py", "code"),
        # docs
        ("README.md", "docs"),
        ("docs/conf.py", "docs"),
        ("docs/img/arch.png", "docs"),
        ("notes/design.rst", "docs"),
        ("examples/demo.ipynb", "docs"),
        # config
        (".github/workflows/ci.yml", "config"),
        ("ci/build.py", "config"),
        ("conf/ppo.yaml", "config"),
        ("pyproject.toml", "config"),
        ("setup.cfg", "config"),
        ("Dockerfile", "config"),
        ("docker/Dockerfile.gpu", "config"),
        ("requirements-dev.txt", "config"),
        ("CMakeLists.txt", "config"),
        ("Makefile", "config"),
        ("LICENSE", "config"),
        (".env", "config"),
        (".pre-commit-config.yaml", "config"),
        # generated
        ("verl/trainer/config/_generated_ppo_trainer.yaml", "generated"),
        ("web/api.generated.ts", "generated"),
        ("src/foo_pb2.py", "generated"),
        ("src/foo_pb2_grpc.py", "generated"),
        ("api/service.pb.go", "generated"),
        ("static/app.min.js", "generated"),
        ("static/app.js.map", "generated"),
        ("pkg/generated/client.go", "generated"),
        ("tests/generated/cases.py", "generated"),
        # vendored
        ("vendor/x.go", "vendored"),
        ("src/third_party/lib.c", "vendored"),
        ("web/node_modules/left-pad/index.js", "vendored"),
        ("vendor/lib/tests/test_x.py", "vendored"),
        # lock
        ("uv.lock", "lock"),
        ("web/package-lock.json", "lock"),
        ("go.sum", "lock"),
        ("Cargo.lock", "lock"),
        ("vendor/pnpm-lock.yaml", "lock"),
        # binary, data, other
        ("img/a.png", "binary"),
        ("model.safetensors", "binary"),
        ("data/train.parquet", "binary"),
        ("data/train.csv", "data"),
        ("eval/results.jsonl", "data"),
        ("bin/prhub", "other"),
        ("assets/logo.svg", "other"),
    ],
)
def test_kind(path: str, expected: Kind) -> None:
    assert kind(path) == expected


@pytest.mark.parametrize(
    ("path", "test", "code"),
    [
        ("e2e/login.py", True, False),
        ("tests/fixtures/data.json", True, False),
        ("src/app.py", False, True),
        ("src/foo_pb2.py", False, False),
        ("vendor/x.go", False, False),
        ("docs/conf.py", False, False),
        ("README.md", False, False),
    ],
)
def test_is_test_and_is_code(path: str, test: bool, code: bool) -> None:
    assert (is_test(path), is_code(path)) == (test, code)


@pytest.mark.parametrize(
    ("path", "tooling"),
    [
        (".github/workflows/ci.yml", True),
        (".pre-commit-config.yaml", True),
        ("configs/.hidden/a.yaml", True),
        ("web/package-lock.json", True),
        ("tests/data/a.yaml", True),
        ("e2e/conf/a.yaml", True),
        ("vendor/lib/conf.yaml", True),
        ("conf/ppo.yaml", False),
        ("pyproject.toml", False),
        ("verl/trainer/config/_generated_ppo_trainer.yaml", False),
    ],
)
def test_is_tooling(path: str, tooling: bool) -> None:
    assert is_tooling(path) == tooling


def test_format_facts_hold_whatever_the_kind() -> None:
    assert is_minified("static/app.min.js") and is_minified("web/app.bundle.js")
    assert not is_minified("static/app.js")
    assert is_binary_format("tests/golden/out.png") and is_binary_format("img/A.PNG")
    assert not is_binary_format("src/app.py") and not is_binary_format("LICENSE")
    assert is_data_format("tests/__snapshots__/view.snap") and is_data_format("a/b.csv")
    assert not is_data_format("conf/a.json")
    assert in_data_dir("tests/fixtures/big.json") and in_data_dir("data/x.json")
    assert not in_data_dir("src/data.json") and not in_data_dir("data")


def new_file(*lines: str) -> str:
    return f"@@ -0,0 +1,{len(lines)} @@\n" + "\n".join("+" + line for line in lines)


@pytest.mark.parametrize(
    "patch",
    [
        new_file("# This file was automatically generated. Do not modify", "a: 1"),
        new_file("// Code generated by protoc-gen-go. DO NOT EDIT.", "package api"),
        new_file("/**", " * @generated SignedSource<<abc>>", " */"),
        new_file('"""Auto-generated by tools/make_config.py."""', "X = 1"),
        new_file("<!-- DO NOT EDIT: made by docs/build.py -->", "# Title"),
        # a modified file whose first hunk shows its unchanged header as context
        "@@ -1,4 +1,5 @@\n # This file is autogenerated\n a: 1\n+b: 2\n c: 3",
        new_file("#!/usr/bin/env python", "# -*- coding: utf-8 -*-", "# @generated", "x = 1"),
    ],
)
def test_a_generators_header_marks_the_file(patch: str) -> None:
    assert header_marker(patch)
    assert kind("pkg/settings.py", patch=patch) == "generated"


@pytest.mark.parametrize(
    "patch",
    [
        None,
        "",
        # words in code, not in a comment: a test asserting on the marker
        new_file('assert "DO NOT EDIT" in header', 'assert "@generated" in header'),
        new_file("MARKER = 'automatically generated'"),
        # a comment that only mentions generation
        new_file("# Tokens generated by the model are scored here", "x = 1"),
        # the hunk does not start at the top of the file
        "@@ -40,3 +40,4 @@ def f():\n # DO NOT EDIT the table below\n x = 1\n+y = 2",
        # the header is what the change removed
        "@@ -1,2 +1,1 @@\n-# DO NOT EDIT\n x = 1",
        # past the first lines of the file
        new_file(*[f"# note {i}" for i in range(5)], "# DO NOT EDIT this line either"),
    ],
)
def test_no_header_marker(patch: str | None) -> None:
    assert not header_marker(patch)
    assert kind("pkg/settings.py", patch=patch) == "code"


def test_a_mark_from_gitattributes_wins_over_the_name_but_not_over_a_lock_file() -> None:
    assert kind("src/app.py", marked="generated") == "generated"
    assert kind("tests/test_app.py", marked="vendored") == "vendored"
    assert kind("uv.lock", marked="vendored") == "lock"
    change = FileChange(path="src/app.py", status="modified", marked="vendored")
    assert of(change) == "vendored"


ATTRIBUTES = """
# generated code
*.pb.go linguist-generated
api/gen/** linguist-generated=true
/schema.json linguist-generated
docs/**/*.html linguist-generated
third_party/** linguist-vendored
third_party/ours/** -linguist-vendored
keep.pb.go linguist-generated=false
web/*.js linguist-vendored text eol=lf
web/app.js !linguist-vendored
src/[ab]_table.py linguist-generated
*.txt text
"""


@pytest.mark.parametrize(
    ("path", "mark"),
    [
        ("api/service.pb.go", "generated"),  # no slash: a name at any depth
        ("service.pb.go", "generated"),
        ("x/keep.pb.go", None),  # a later line wins
        ("api/gen/v1/client.py", "generated"),  # dir/** holds everything under it
        ("x/api/gen/client.py", None),  # a pattern with a slash is rooted
        ("schema.json", "generated"),
        ("sub/schema.json", None),  # /rooted
        ("docs/a/b/page.html", "generated"),
        ("docs/page.html", "generated"),  # /**/ matches no folder too
        ("third_party/lib/x.c", "vendored"),
        ("third_party/ours/x.c", None),  # -attr unsets
        ("web/lib.js", "vendored"),
        ("web/app.js", None),  # !attr: back to unspecified
        ("web/sub/lib.js", None),  # * does not cross a slash
        ("src/a_table.py", "generated"),
        ("src/c_table.py", None),
        ("notes.txt", None),
        ("src/app.py", None),
    ],
)
def test_gitattributes_marks(path: str, mark: str | None) -> None:
    assert marks(ATTRIBUTES, path) == mark


def test_gitattributes_without_linguist_lines_marks_nothing() -> None:
    assert marks("", "api/x.pb.go") is None
    assert marks("* text=auto\n!neg linguist-generated\ndir/ linguist-generated", "dir/a") is None


def test_with_attributes_marks_a_copy_of_the_pr() -> None:
    files = [
        FileChange(path="api/gen/client.py", status="modified"),
        FileChange(path="src/app.py", status="modified", marked="generated"),
    ]
    pr = PullRequest(
        repo="o/r", number=1, title="t", author="a", created_at=datetime.now(UTC), files=files
    )
    marked = with_attributes(pr, ATTRIBUTES)
    assert [f.marked for f in marked.files] == ["generated", None]
    assert [f.marked for f in pr.files] == [None, "generated"]  # the PR itself is unchanged
