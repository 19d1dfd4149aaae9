"""prepare(): noise, ranking, packing within budgets, coverage and redaction of a whole PR."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from prhub.config import Settings
from prhub.errors import ConfigError
from prhub.model import FileChange, PreparedPR, PullRequest
from prhub.prepare import BODY_BUDGET, TITLE_BUDGET, input_key, prepare
from prhub.prepare import pack as pack_module
from prhub.prepare.diff import Hunk, parse_hunks, split_hunks
from prhub.prepare.tokens import count
from tests.factories import (
    AWS_ID,
    AWS_SECRET,
    CASES,
    GITHUB,
    GITHUB_PAT,
    KEY_BODY,
    OPENAI,
    PASSWORD,
    PRIVATE_KEY,
    SLACK,
    WEBHOOK,
    change,
    hunk,
    make_pr,
    synthetic,
)

ENC = "o200k_base"
AGGREGATE = re.compile(r"^(\S+/) — [\d,]+ files?, ", re.M)


def corpus_dir() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


def run(
    pr: PullRequest,
    budget: int,
    calls: int = 4,
    index: int = 2000,
    compact: bool = True,
    **kw: Any,
) -> PreparedPR:
    settings = Settings(max_calls=calls, **kw)
    return prepare(pr, settings, chunk_budget=budget, index_budget=index, compact=compact)


def check_invariants(pr: PullRequest, out: PreparedPR, budget: int, calls: int) -> None:
    assert 1 <= len(out.chunks) <= calls
    for chunk in out.chunks:
        assert count(chunk, ENC) <= budget
    cov = out.coverage
    parts = [cov.full, cov.excerpt, cov.listed, cov.excluded]
    paths = [f.path for f in pr.files]
    assert sorted(p for part in parts for p in part) == sorted(paths)
    assert sum(map(len, parts)) == len(paths)
    assert cov.lines_total + cov.lines_generated == sum(f.additions + f.deletions for f in pr.files)
    assert 0 <= cov.lines_seen <= cov.lines_total
    assert cov.lines_seen == sum(f.lines_seen for f in out.files)
    text = "\n".join(out.chunks)
    folders = AGGREGATE.findall(text)
    for path in [*cov.full, *cov.excerpt, *cov.listed]:
        assert path in text or any(d == "./" or path.startswith(d) for d in folders), (
            f"{path} left no trace"
        )


@pytest.mark.parametrize("n", [1, 50, 500, 3000])
@pytest.mark.parametrize("budget", [2000, 20000])
@pytest.mark.parametrize("calls", [1, 4])
def test_budgets_hold_and_every_file_leaves_a_trace(n: int, budget: int, calls: int) -> None:
    pr = synthetic(n)
    out = run(pr, budget, calls, index=1500)
    check_invariants(pr, out, budget, calls)
    assert count(out.index, ENC) <= 1500


def test_large_pr_aggregates_listed_files_by_directory() -> None:
    out = run(synthetic(3000), 2000, 1)
    assert AGGREGATE.search(out.chunks[0])
    assert "listed only" in out.chunks[0]


def test_index_names_every_file_when_it_fits() -> None:
    pr = synthetic(50)
    out = run(pr, 2000, 1, index=4000)
    for f in out.files:
        assert f"{f.path} (" in out.index
    assert out.index.startswith("50 files, ")


def test_index_aggregates_when_too_long() -> None:
    out = run(synthetic(3000), 20000, 4, index=300)
    assert count(out.index, ENC) <= 300
    assert "3,000 files" in out.index


def test_small_pr_is_one_chunk_with_everything_in_full() -> None:
    pr = synthetic(50)
    out = run(pr, 200_000, 4)
    assert len(out.chunks) == 1
    assert out.coverage.listed == [f.path for f in pr.files if f.patch is None]
    cov = out.coverage
    assert len(cov.full) == len(pr.files) - len(cov.excluded) - len(cov.listed)


def test_one_chunk_when_tokens_fit_though_the_text_is_long() -> None:
    # Wide indentation packs many characters into each token.
    patch = "@@ -1,0 +1,300 @@\n" + "\n".join("+" + " " * 120 + f"x{i} = 1" for i in range(300))
    pr = make_pr([change("src/wide.py", additions=300, deletions=0, patch=patch)])
    out = run(pr, 6000, 4)
    assert len(patch) > 4 * 6000
    assert len(out.chunks) == 1 and out.coverage.full == ["src/wide.py"]
    assert count(out.chunks[0], ENC) <= 6000


def test_budget_holds_when_the_estimate_falls_short(monkeypatch: pytest.MonkeyPatch) -> None:
    # Counting joins as free makes every estimate short; the final count must catch it.
    monkeypatch.setattr(pack_module, "SEP", 0)
    pr = synthetic(500)
    for budget, calls in [(300, 1), (2000, 4), (20000, 4)]:
        check_invariants(pr, run(pr, budget, calls), budget, calls)


def test_a_budget_too_small_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="PRHUB_INPUT_BUDGET"):
        run(synthetic(1), 100)


def test_no_files() -> None:
    out = run(make_pr([]), 2000)
    assert out.chunks == ["No files changed."]
    assert out.coverage.lines_total == 0 and out.coverage.share_seen == 1.0


def test_spreads_over_chunks_before_leaving_files_out() -> None:
    files = [change(f"src/m{i}.py", hunks=6, added=20) for i in range(6)]
    one = run(make_pr(files), 3000, 1)
    many = run(make_pr(files), 3000, 4)
    assert len(one.chunks) == 1 and one.coverage.listed + one.coverage.excerpt
    assert len(many.chunks) > 1
    assert many.coverage.lines_seen > one.coverage.lines_seen
    check_invariants(make_pr(files), many, 3000, 4)


def test_a_file_larger_than_a_chunk_continues_in_the_next() -> None:
    pr = make_pr([change("src/huge.py", hunks=12, added=30)])
    out = run(pr, 2000, 4)
    assert out.coverage.full == ["src/huge.py"]
    assert len(out.chunks) > 1
    assert out.chunks[1].startswith("### src/huge.py (continued)")
    check_invariants(pr, out, 2000, 4)


def test_excerpt_shows_first_hunks_and_says_what_is_left_out() -> None:
    pr = make_pr([change("src/a.py", hunks=20, added=15)])
    out = run(pr, 1500, 1)
    assert out.coverage.excerpt == ["src/a.py"]
    view = out.files[0]
    assert 0 < view.lines_seen < view.additions + view.deletions
    assert view.reason.startswith("over budget: ")
    assert "def f0_" in out.chunks[0] and "def f19_" not in out.chunks[0]
    assert re.search(r"… [\d,]+ changed lines in \d+ more hunks not shown", out.chunks[0])


def test_ranking_source_then_tests_then_docs_then_bigger_first() -> None:
    files = [
        change("docs/usage.md", added=40),
        change("tests/test_core.py", added=20),
        change(".github/workflows/ci.yml", added=30),
        change("src/small.py", added=2),
        change("src/big.py", added=10),
    ]
    out = run(make_pr(files), 20000)
    text = out.chunks[0]
    order = ["src/big.py", "src/small.py", "tests/test_core.py", "docs/usage.md", "ci.yml"]
    positions = [text.index(name) for name in order]
    assert positions == sorted(positions)


def test_end_to_end_tests_rank_with_tests() -> None:
    files = [change("e2e/login.py", added=40), change("src/app.py", added=2)]
    text = run(make_pr(files), 20000).chunks[0]
    assert text.index("src/app.py") < text.index("e2e/login.py")


def test_parse_hunks() -> None:
    patch = "@@ -1,2 +1,2 @@ def a():\n-x\n+y\n ctx\n\n@@ -9 +9,0 @@\n-gone\n"
    assert parse_hunks(patch) == [
        Hunk("@@ -1,2 +1,2 @@ def a():", ("-x", "+y", " ctx")),
        Hunk("@@ -9 +9,0 @@", ("-gone",)),
    ]
    assert [h.changed for h in parse_hunks(patch)] == [2, 1]
    assert parse_hunks(patch)[0].text == "@@ -1,2 +1,2 @@ def a():\n-x\n+y\n ctx"
    assert split_hunks(patch) == [
        ("@@ -1,2 +1,2 @@ def a():\n-x\n+y\n ctx", 2),
        ("@@ -9 +9,0 @@\n-gone", 1),
    ]


def test_parse_hunks_keeps_text_before_the_first_hunk() -> None:
    assert parse_hunks("+a\n@@ -1 +1 @@\n+b") == [Hunk("", ("+a",)), Hunk("@@ -1 +1 @@", ("+b",))]
    assert parse_hunks(None) == parse_hunks("") == parse_hunks("\n\n") == []


@pytest.mark.parametrize(("compact", "line"), [(True, "@@ -10 @@"), (False, "@@ -10,27 +10,2 @@")])
def test_a_deletion_only_hunk_of_a_pr_that_fits_is_shown_whole(compact: bool, line: str) -> None:
    patch = "\n".join(
        [
            "@@ -10,27 +10,2 @@ class A:",
            "     keep = 1",
            *[f"-    gone_{i} = {i}" for i in range(25)],
            "     also = 2",
            hunk(80, 3, 0, "kept"),
        ]
    )
    pr = make_pr([change("src/a.py", additions=3, deletions=25, patch=patch)])
    out = run(pr, 20000, compact=compact)
    assert line in out.chunks[0] and "lines deleted" not in out.chunks[0]
    assert all(f"-    gone_{i} = {i}" in out.chunks[0] for i in range(25))
    assert "new_kept_2" in out.chunks[0]
    assert out.files[0].lines_seen == 28 and out.coverage.full == ["src/a.py"]


def removal(start: int, name: str, body: int) -> str:
    """A hunk that removes a function, a class with a config field, and a CLI flag."""
    lines = [f"@@ -{start},{body + 6} +{start},0 @@", f"-def {name}(x, scale=2):"]
    lines += [f"-    y_{name}_{i} = x * {i} + scale" for i in range(body)]
    lines += ["-class Old" + name.title() + ":", "-    retries: int = 3"]
    lines += ['-parser.add_argument("--old-' + name + '", type=int)', "-    return y", "-"]
    return "\n".join(lines)


def test_a_removed_function_keeps_its_def_line_when_the_pr_is_compacted() -> None:
    gone = removal(118, "legacy_scale", 200)
    config = "@@ -3,4 +3,0 @@\n-rollout:\n-  old_mode: sync\n-  # why it was there\n-  n: 4"
    files = [
        change("src/engine.py", additions=0, deletions=206, patch=gone),
        change("conf/job.yaml", additions=0, deletions=4, patch=config),
        *[change(f"src/m{i}.py", hunks=6, added=20) for i in range(6)],
    ]
    out = run(make_pr(files), 3000, calls=1)
    text = "\n".join(out.chunks)
    assert "y_legacy_scale_5" not in text  # the body is compacted ...
    # ... but what defined behaviour stays in view, and coverage says only that was seen.
    for kept in (
        "-def legacy_scale(x, scale=2):",
        "-class OldLegacy_Scale:",
        "-    retries: int = 3",
    ):
        assert kept in text
    assert '-parser.add_argument("--old-legacy_scale", type=int)' in text
    assert "(206 lines deleted, 4 shown" in text
    assert "-rollout:" in text and "-  old_mode: sync" in text and "why it was" not in text
    views = {f.path: f for f in out.files}
    assert views["src/engine.py"].lines_seen == 4 and views["src/engine.py"].view == "excerpt"
    assert "202 removed lines not shown" in views["src/engine.py"].reason
    assert views["conf/job.yaml"].lines_seen == 3
    check_invariants(make_pr(files), out, 3000, 1)


def test_a_removed_file_is_shown_whole_when_the_pr_fits() -> None:
    patch = "@@ -1,40 +0,0 @@\n" + "\n".join(f"-line {i}" for i in range(40))
    pr = make_pr([change("src/old.py", status="removed", additions=0, deletions=40, patch=patch)])
    out = run(pr, 20000)
    lines = "\n".join(f"-line {i}" for i in range(40))
    assert out.chunks[0] == f"### src/old.py (removed, +0/-40)\n@@ -1 @@\n{lines}"
    plain = run(pr, 20000, compact=False).chunks[0]
    assert plain == f"### src/old.py (removed, +0/-40)\n@@ -1,40 +0,0 @@\n{lines}"
    assert out.coverage.lines_seen == 40


def test_a_removed_test_file_is_shown_by_its_test_names() -> None:
    body = [f"-    assert step({i}) == {i}" for i in range(30)]
    patch = "@@ -1,32 +0,0 @@\n-def test_steps():\n" + "\n".join(body) + "\n-class TestOld:"
    removed = change("tests/test_old.py", status="removed", additions=0, deletions=32, patch=patch)
    out = run(make_pr([removed]), 20000)
    assert "-def test_steps():" in out.chunks[0] and "-class TestOld:" in out.chunks[0]
    assert "assert step(3)" not in out.chunks[0]
    assert out.coverage.lines_seen == 2 and out.files[0].view == "excerpt"


def test_pure_rename_is_one_line() -> None:
    rename = FileChange(path="src/new.py", previous_path="src/old.py", status="renamed", patch=None)
    edited = change("src/b.py", status="renamed", previous_path="src/a.py")
    out = run(make_pr([rename, edited]), 20000)
    assert "renamed: src/old.py -> src/new.py" in out.chunks[0]
    assert "### src/b.py (renamed from src/a.py, +5/-1)" in out.chunks[0]
    assert out.files[0].view == "full" and out.files[0].lines_seen == 0


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        (change("uv.lock"), "lock file"),
        (change("web/package-lock.json"), "lock file"),
        (change("go.sum"), "lock file"),
        (change("tools/bower-lock.json"), "lock file"),
        (change("api/service_pb2.py"), "generated file"),
        (change("api/service.pb.go"), "generated file"),
        (change("verl/trainer/config/_generated_ppo_trainer.yaml"), "generated file"),
        (change("vendor/github.com/x/y.go"), "vendored"),
        (change("src/third_party/lib.c"), "vendored"),
        (change("static/app.min.js"), "minified"),
        (change("static/site.min.css"), "minified"),
        (change("generated/app.min.js"), "minified"),
        (change("vendor/app.min.js"), "vendored"),
        (change("img/logo.png", additions=0, deletions=0, patch=None), "binary, no patch"),
        (change("model.bin", additions=0, deletions=0, patch=None), "binary, no patch"),
        (
            change("run.sh", status="changed", additions=0, deletions=0, patch=None),
            "no content change",
        ),
        (change("tests/__snapshots__/view.snap"), "data file"),
        (change("data/train.csv"), "data file"),
        (change("tests/fixtures/big.json", added=300), "data file"),
        (change("docs/notes.txt"), "matches noise glob 'docs/*.txt'"),
    ],
)
def test_noise_is_excluded_with_a_reason(file: FileChange, reason: str) -> None:
    pr = make_pr([file, change("src/real.py")])
    out = run(pr, 20000, noise_globs=("docs/*.txt",))
    assert out.files[0].view == "excluded"
    assert out.files[0].reason == reason
    assert out.coverage.excluded == [file.path]
    assert "compute(0, scale=2)" in out.chunks[0]  # the real file is still shown


def test_not_noise() -> None:
    files = [change("tests/fixtures/small.json"), change("src/generation.py"), change("a/data.py")]
    out = run(make_pr(files), 20000)
    assert out.coverage.excluded == []


def test_a_file_github_sent_no_patch_for_is_listed() -> None:
    pr = make_pr([change("src/huge.py", additions=5000, deletions=10, patch=None)])
    out = run(pr, 20000)
    assert out.files[0].view == "listed"
    assert out.files[0].reason == "GitHub sent no patch (too large)"
    assert "src/huge.py (modified, +5000/-10)" in out.chunks[0]


def test_notebook_outputs_are_dropped() -> None:
    image = '+      "image/png": "' + "iVBORw0KGgo" * 100 + '",'
    patch = "@@ -1,3 +1,4 @@\n+    \"print('hi')\\n\",\n" + image + "\n     }"
    pr = make_pr([change("nb/demo.ipynb", additions=2, deletions=0, patch=patch)])
    out = run(pr, 20000)
    assert "iVBORw0KGgo" not in out.chunks[0] and "print('hi')" in out.chunks[0]
    assert out.files[0].view == "full" and out.files[0].lines_seen == 1
    assert out.files[0].reason == "notebook: 1 output lines dropped"


def test_title_and_body_are_cut_to_their_budgets() -> None:
    # A short diff leaves its chunk's room to the body: the body's own budget and that room.
    room = BODY_BUDGET + 400 - count(run(make_pr([change("a.py")]), 400).chunks[0], ENC)
    title = "fix: " + "very long title words " * 100
    body = "A paragraph of the description. " * 2000
    out = run(make_pr([change("a.py")], title=title, body=body), 400)
    assert count(out.title, ENC) <= TITLE_BUDGET and out.title.endswith("[title truncated]")
    assert BODY_BUDGET < count(out.body, ENC) <= room and "PR 描述过长" in out.body
    lines = [f"第 {i} 行：说明改动的动机 🙂 with details." for i in range(400)]
    cut = run(make_pr([change("a.py")], body="\n".join(lines)), 400).body
    kept, _, mark = cut.partition("\n\n（")
    assert count(cut, ENC) <= room and "\ufffd" not in cut
    shown = kept.split("\n")
    assert shown == lines[: len(shown)]  # cut at a line's end
    rest = "\n".join(lines[len(shown) :])
    assert mark == f"PR 描述过长，已略去后面 {400 - len(shown)} 行，约 {len(rest)} 字）"
    short = run(make_pr([change("a.py")], title="fix: x", body="short"), 20000)
    assert (short.title, short.body) == ("fix: x", "short")


def test_secrets_never_reach_the_model() -> None:
    secrets = [GITHUB, GITHUB_PAT, OPENAI, AWS_ID, AWS_SECRET, SLACK, WEBHOOK, PASSWORD]
    lines = [
        f"GITHUB_TOKEN = '{GITHUB}'",
        f"pat = {GITHUB_PAT}",
        f'client = OpenAI(api_key="{OPENAI}")',
        f"aws_access_key_id = {AWS_ID}",
        f"aws_secret_access_key = {AWS_SECRET}",
        f"slack = '{SLACK}'",
        f"hook = '{WEBHOOK}'",
        f"url = 'https://bob:{PASSWORD}@db.example.com/x'",
        f'password = "{PASSWORD}"',
        *PRIVATE_KEY.split("\n"),
    ]
    patch = f"@@ -0,0 +1,{len(lines)} @@\n" + "\n".join("+" + line for line in lines)
    files = [
        change("src/config.py", additions=len(lines), deletions=0, patch=patch),
        change(f"keys/{GITHUB}.txt"),
        change("deploy/.env", patch="@@ -1 +1 @@\n-DB_URL=plain-old-value\n+DB_URL=plain-new"),
    ]
    pr = make_pr(files, title=f"chore: rotate {AWS_ID}", body=f"Uses {OPENAI} and {SLACK}.")
    out = run(pr, 20000)
    shown = "\n".join(
        [*out.chunks, out.title, out.body, out.index, *(f.path for f in out.files)]
        + [p for part in (out.coverage.full, out.coverage.listed) for p in part]
    )
    for secret in [*secrets, KEY_BODY, "plain-old-value", "plain-new"]:
        assert secret not in shown
    assert out.redactions == {
        "github_token": 3,  # patch, pat line and file name
        "api_key": 2,  # patch and body
        "aws_access_key_id": 2,  # patch and title
        "aws_secret_key": 1,
        "slack_token": 2,  # patch and body
        "slack_webhook": 1,
        "url_credentials": 1,
        "secret": 1,
        "private_key": 1,
        "env_value": 2,
    }
    assert out.files[1].path == "keys/[REDACTED:github_token].txt"


@pytest.mark.parametrize(("kind", "text", "secret"), CASES)
def test_each_kind_is_redacted_in_patch_title_body_and_path(
    kind: str, text: str, secret: str
) -> None:
    patch = "@@ -1,1 +1,2 @@\n x = 1\n" + "\n".join("+" + line for line in text.split("\n"))
    in_path = "\n" not in text  # a file name holds no line break
    path = f"cfg/{text}.py" if in_path else "cfg/keys.py"
    pr = make_pr([change(path, patch=patch)], title=f"fix: {text}", body=f"Body:\n{text}\n")
    out = run(pr, 20000)
    shown = [*out.chunks, out.title, out.body, out.index, *(f.path for f in out.files)]
    assert all(secret not in part for part in shown)
    assert out.redactions == {kind: 4 if in_path else 3}


def test_corpus_prs_fit_the_default_budget() -> None:
    pulls_dirs = sorted(corpus_dir().glob("*/*/pulls"))
    if not pulls_dirs:
        pytest.skip("corpus not found beside the repository")
    settings = Settings()
    budget = settings.input_budget - 3000
    for pulls in pulls_dirs:
        for path in sorted(pulls.glob("*.files.json")):
            files = [
                FileChange(
                    path=f["filename"],
                    previous_path=f.get("previous_filename"),
                    status=f["status"],
                    additions=f["additions"],
                    deletions=f["deletions"],
                    patch=f.get("patch"),
                )
                for f in json.loads(path.read_text())
            ]
            pr = make_pr(files)
            out = prepare(pr, settings, chunk_budget=budget, index_budget=4000)
            check_invariants(pr, out, budget, settings.max_calls)
            assert count(out.index, ENC) <= 4000


def test_a_new_file_ranks_before_a_deleted_one_of_the_same_size() -> None:
    old = change("pkg/a_old.py", added=0, deleted=100, status="removed")
    new = change("pkg/b_new.py", added=100, deleted=0, status="added")
    out = prepare(make_pr([old, new]), Settings(), chunk_budget=6_000, index_budget=600)
    [chunk] = out.chunks
    assert chunk.index("pkg/b_new.py") < chunk.index("pkg/a_old.py")


def test_facts_tell_the_model_what_prhub_computed() -> None:
    files = [
        change("pkg/new.py", status="added"),
        change("pkg/gone.py", added=0, deleted=4, status="removed"),
        change("verl/trainer/config/_generated_ppo.yaml"),
    ]
    pr = make_pr(files, title='Revert "[trainer] feat: add LoRA merging (#95)"')
    facts = prepare(pr, Settings(), chunk_budget=3_000, index_budget=600).facts
    text = "\n".join(facts)
    assert "回滚" in text and "#95" in text
    assert "新增文件：pkg/new.py" in text and "删除文件：pkg/gone.py" in text
    assert "没有改动任何测试文件" in text
    assert "_generated_ppo.yaml" in text and "自动生成" in text


def test_a_tested_docs_only_pr_says_so() -> None:
    docs = prepare(make_pr([change("docs/a.md")]), Settings(), chunk_budget=3_000, index_budget=600)
    assert "只改了文档，没有代码改动。" in docs.facts
    tested = make_pr([change("src/app.py"), change("e2e/login.py")])
    assert (
        "改动了测试文件。"
        in prepare(tested, Settings(), chunk_budget=3_000, index_budget=600).facts
    )


def test_generated_files_are_named_but_not_sent_nor_counted_as_hand_written() -> None:
    header = "@@ -0,0 +1,3 @@\n+# Automatically generated by make_config.py, do not edit\n"
    header += "+a: 1\n+b: 2"
    files = [
        change("src/app.py"),
        change("conf/full.yaml", status="added", additions=3, deletions=0, patch=header),
        change("api/client.py", marked="generated"),
        change("lib/ext.py", marked="vendored"),
        change("uv.lock"),
    ]
    out = run(make_pr(files), 20000)
    made = ["conf/full.yaml", "api/client.py", "lib/ext.py", "uv.lock"]
    assert out.coverage.generated == made and out.coverage.full == ["src/app.py"]
    assert set(made) <= set(out.coverage.excluded)
    assert [f.generated for f in out.files] == [False, True, True, True, True]
    assert out.coverage.lines_total == out.coverage.lines_seen == 6  # src/app.py only
    assert out.coverage.lines_generated == 3 + 6 * 3
    [chunk] = out.chunks
    assert "### conf/full.yaml (added, +3/-0) [excluded: generated file]" in chunk
    assert "### lib/ext.py (modified, +5/-1) [excluded: vendored]" in chunk
    assert "a: 1" not in chunk and chunk.count("compute(") == 5  # only src/app.py's lines


def same_edit(path: str, context: str) -> FileChange:
    patch = (
        f"@@ -10,7 +10,7 @@ jobs:\n   {context}:\n     runs-on: gpu\n     env:\n"
        '-      IMAGE: "registry.example/app:1.0-build7"\n'
        '+      IMAGE: "registry.example/app:1.1-build9"\n'
        "     steps:\n       - uses: actions/checkout@v4"
    )
    return FileChange(path=path, status="modified", additions=1, deletions=1, patch=patch)


def test_the_same_change_in_many_files_is_sent_once_with_where_it_applies() -> None:
    copies = [same_edit(f".github/workflows/job_{i}.yml", f"job_{i}") for i in range(6)]
    pr = make_pr([change("src/app.py"), *copies])
    out = run(pr, 20000)
    [chunk] = out.chunks
    assert chunk.count('+      IMAGE: "registry.example/app:1.1-build9"') == 1
    others = ", ".join(f".github/workflows/job_{i}.yml" for i in range(1, 6))
    assert f"↳ same change also applied to: {others}" in chunk
    assert "job_3.yml (modified" not in chunk  # no section of its own
    # Every copy counts as seen, and the index says where each one is shown.
    assert out.coverage.share_seen == 1.0 and len(out.coverage.full) == 7
    assert out.files[3].reason == "same change as .github/workflows/job_0.yml"
    assert "job_3.yml (modified, +1/-1): full — same change as" in out.index
    plain = run(pr, 20000, compact=False)
    assert plain.chunks[0].count('+      IMAGE: "registry.example/app:1.1-build9"') == 6
    assert count(chunk, ENC) < count(plain.chunks[0], ENC)


def test_repeats_in_one_file_and_short_changes() -> None:
    twice = same_edit("ci/a.yml", "one").patch + "\n" + (same_edit("ci/a.yml", "two").patch or "")
    small = "@@ -1,1 +1,1 @@\n-x = 1\n+x = 2"
    files = [
        FileChange(path="ci/a.yml", status="modified", additions=2, deletions=2, patch=twice),
        FileChange(path="a.py", status="modified", additions=1, deletions=1, patch=small),
        FileChange(path="b.py", status="modified", additions=1, deletions=1, patch=small),
    ]
    [chunk] = run(make_pr(files), 20000).chunks
    assert "↳ same change also applied to: 1 more place in this file" in chunk
    # A change shorter than the note naming its other places is sent each time.
    assert chunk.count("+x = 2") == 2


def test_copies_of_a_change_left_out_for_the_budget_are_not_seen() -> None:
    block = "@@ -1,1 +1,301 @@\n x = 0\n" + "\n".join(f"+row_{i} = fill({i})" for i in range(300))
    copies = [
        FileChange(path=f"ci/job_{i}.py", status="modified", additions=300, patch=block)
        for i in range(3)
    ]
    out = run(make_pr([change("src/app.py", hunks=4, added=40), *copies]), 1500, calls=1)
    views = {f.path: f for f in out.files}
    assert views["src/app.py"].view in ("full", "excerpt")
    assert views["ci/job_0.py"].view == "listed"
    for later in ("ci/job_1.py", "ci/job_2.py"):
        assert views[later].view == "listed" and views[later].lines_seen == 0
        assert views[later].reason == "same change as ci/job_0.py (over budget)"
    assert out.coverage.lines_seen == views["src/app.py"].lines_seen


def test_less_context_keeps_the_lines_that_enclose_a_change() -> None:
    lines = [
        "@@ -20,12 +20,12 @@ class Trainer:",
        "     def step(self, batch):",
        "         data = batch.to(self.device)",
        "         for micro in split(data):",
        "             loss = self.model(micro)",
        "             loss.backward()",
        "             self.log(loss)",
        "-            self.clip(1.0)",
        "+            self.clip(self.config.max_norm)",
        "             self.optimizer.step()",
        "             self.scheduler.step()",
        "         return loss",
    ]
    patch = "\n".join(lines)
    pr = make_pr(
        [FileChange(path="src/t.py", status="modified", additions=1, deletions=1, patch=patch)]
    )
    [chunk] = run(pr, 20000).chunks
    assert chunk.split("\n")[1:] == [
        "@@ +20 @@ class Trainer:",
        "     def step(self, batch):",
        " ⋯",
        "         for micro in split(data):",
        " ⋯",
        "-            self.clip(1.0)",
        "+            self.clip(self.config.max_norm)",
    ]
    assert run(pr, 20000, compact=False).chunks[0].endswith("\n".join(lines))


def test_a_new_files_lines_go_without_plus_signs_and_still_count() -> None:
    body = [f"value_{i} = compute({i}, scale=2)  # step {i}" for i in range(400)]
    patch = "@@ -0,0 +1,400 @@\n" + "\n".join("+" + line for line in body)
    new = FileChange(path="src/new.py", status="added", additions=400, deletions=0, patch=patch)
    whole = run(make_pr([new]), 20000)
    assert whole.chunks[0] == "### src/new.py (added, +400/-0)\n" + "\n".join(body)
    part = run(make_pr([new]), 2000, calls=1)
    view = part.files[0]
    assert view.view == "excerpt" and 0 < view.lines_seen < 400
    shown = part.chunks[0].count("= compute(")
    assert view.lines_seen == shown


def test_a_new_file_whose_lines_would_look_like_headers_keeps_its_plus_signs() -> None:
    text = ["# Guide", "", "### Install", "Run `make`."]
    patch = "@@ -0,0 +1,4 @@\n" + "\n".join("+" + line for line in text)
    new = FileChange(path="docs/guide.md", status="added", additions=4, deletions=0, patch=patch)
    out = run(make_pr([new]), 20000)
    assert out.chunks[0] == "### docs/guide.md (added, +4/-0)\n@@ +1 @@\n" + patch.split("\n", 1)[1]
    assert out.files[0].lines_seen == 4


TEMPLATE_BODY = """\
## Summary

<!-- Say what the change does and why. -->
> Describe the change in a few sentences. Link the issues it
closes.
Moves the cache to SQLite so two runs can share it.

## How was it tested?

> Give the commands you ran.

```bash
# paste the commands here
```

## Checklist

- [ ] I read the contributing guide
- [x] I added tests
- [ ] I updated the docs (This
is needed for user-facing changes)
- [x] Related to #41: the same lock is used there.

## Notes

- [ ] migrate the old cache files (follow-up)
Readers should start with `store.py`.
"""


def test_template_text_the_author_left_as_it_was_is_not_sent() -> None:
    out = run(make_pr([change("src/app.py")], body=TEMPLATE_BODY), 20000)
    assert out.body == (
        "## Summary\n\nMoves the cache to SQLite so two runs can share it.\n\n"
        "## Checklist\n\n- [x] Related to #41: the same lock is used there.\n\n"
        "## Notes\n\n- [ ] migrate the old cache files (follow-up)\n"
        "Readers should start with `store.py`."
    )
    assert run(make_pr([change("src/app.py")], body=TEMPLATE_BODY), 20000, compact=False).body == (
        TEMPLATE_BODY
    )


def test_a_quote_the_author_wrote_mid_section_and_code_they_pasted_stay() -> None:
    body = "## Why\n\nUsers hit this:\n\n> TypeError: bad operand\n\n```python\nrun(fast=True)\n```"
    assert run(make_pr([change("src/app.py")], body=body), 20000).body == body


def test_size_class_counts_hand_written_lines_and_vendored_files_are_named() -> None:
    files = [
        change("src/app.py", added=4, deleted=1),
        change("conf/_generated_all.yaml", added=900, deleted=300),
        change("third_party/lib/x.c", added=50, deleted=0),
    ]
    pr = make_pr(files).model_copy(update={"additions": 954, "deletions": 301})
    facts = run(pr, 20000).facts
    assert "规模：微小（手写 +4/-1，另有生成或第三方文件 +950/-300，3 个文件）。" in facts
    assert "第三方（vendored）文件（不是本仓库手写）：third_party/lib/x.c" in facts
    assert any("自动生成" in line and "_generated_all.yaml" in line for line in facts)


def test_removed_lines_that_come_back_among_the_added_ones_are_one_line() -> None:
    body = [f"    total_{i} = accumulate(values, step={i})" for i in range(6)]
    old = "@@ -10,8 +10,2 @@ def run():\n     start()\n" + "\n".join("-" + x for x in body)
    old += "\n+    helpers.accumulate_all(values)\n     stop()"
    new = "@@ -0,0 +1,7 @@\n+def accumulate_all(values):\n" + "\n".join("+" + x for x in body)
    files = [
        FileChange(path="src/run.py", status="modified", additions=1, deletions=6, patch=old),
        FileChange(path="src/helpers.py", status="added", additions=7, deletions=0, patch=new),
    ]
    out = run(make_pr(files), 20000)
    [chunk] = out.chunks
    assert "-⋯ 6 removed lines, all among the added lines (moved)" in chunk
    assert chunk.count("accumulate(values, step=3)") == 1
    assert out.coverage.share_seen == 1.0
    # Fewer lines of substance than a run needs, or lines not added anywhere, stay as they are.
    kept = old.replace("-" + body[2], "-    total_2 = something_else()")
    files[0] = files[0].model_copy(update={"patch": kept})
    [chunk] = run(make_pr(files), 20000).chunks
    assert "moved" not in chunk and "-    total_2 = something_else()" in chunk


def test_input_key_changes_with_the_marks_of_the_files() -> None:
    pr = make_pr([change("src/app.py"), change("api/gen.py")])
    marked = pr.model_copy(
        update={"files": [pr.files[0], pr.files[1].model_copy(update={"marked": "generated"})]}
    )
    assert input_key(pr) != input_key(marked)
    assert input_key(pr) == input_key(make_pr([change("src/app.py"), change("api/gen.py")]))


def test_a_to_do_list_of_the_authors_stays() -> None:
    body = "## Plan\n\n- [x] fsdp backend\n- [ ] megatron backend\n- [ ] sglang rollout"
    assert run(make_pr([change("src/app.py")], body=body), 20000).body == body


def test_a_paragraph_of_the_authors_under_the_checklist_stays() -> None:
    body = (
        "## Checklist before submitting\n\n- [x] I ran the linters\n- [ ] I updated the\n"
        "docs\n\nThe benchmark numbers are in the linked sheet."
    )
    out = run(make_pr([change("src/app.py")], body=body), 20000)
    assert out.body == (
        "## Checklist before submitting\n\nThe benchmark numbers are in the linked sheet."
    )


def test_sign_off_trailers_are_not_sent() -> None:
    from prhub.prepare.body import strip_template

    body = "Fix the clip.\n\nSigned-off-by: A Person <a@example.com>\nco-authored-by: B <b@x.org>\n"
    assert strip_template(body) == "Fix the clip."
    assert strip_template("We signed-off-by: nobody inline") == "We signed-off-by: nobody inline"


def test_an_authors_callout_and_c_preprocessor_code_are_kept() -> None:
    from prhub.prepare.body import strip_template

    body = "## Summary\n\n> [!WARNING]\n> This changes the default of `foo`.\n\nAdds X."
    assert "This changes the default of `foo`." in strip_template(body)
    code = "## Repro\n\n```c\n#include <stdio.h>\n#define N 4\n```\n"
    assert "#define N 4" in strip_template(code)
    placeholder = "## Test\n\n```\n# paste your command here\n```\n\nRan it."
    assert "paste your command" not in strip_template(placeholder)
