"""What a path is: one answer for every stage."""

from __future__ import annotations

import pytest

from prhub.paths import (
    Kind,
    in_data_dir,
    is_binary_format,
    is_code,
    is_data_format,
    is_minified,
    is_test,
    is_tooling,
    kind,
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
