"""Digests that know their neighbours: a PR's request names the PRs it references (fetched once,
stored, revalidated after) and the PRs of its week that changed the same files; a revert named
by its commit alone is resolved to the PR of that commit."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.factories import FIXTURES, GITHUB_TOKEN, OPENAI_KEY, assert_ok, cli_env, prhub
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import prompt_text

GRPO = "[algo, trainer] feat: add GRPO group-relative advantage estimator"


def related(text: str) -> str:
    """The <related> block of a digest request, "" when it has none."""
    found = re.search(r"\n<related>\n(.*?)</related>", text, re.DOTALL)
    return found.group(1) if found else ""


def digest_request(llm: LLMStandIn, number: int) -> str:
    asked = [prompt_text(b) for b in llm.bodies if f"PR #{number}　" in prompt_text(b)]
    return asked[-1]


def test_a_referenced_pr_is_named_with_its_title_fetched_once_and_revalidated(env, llm, github):
    assert_ok(prhub(env, "summarize", "--pr", "101", "--repo", "acme/rocket"))
    told = related(digest_request(llm, 101))
    assert f"#102 {GRPO}" in told and "本 PR 提到它" in told  # "related to #102" in its body
    assert "#95" not in told  # "Fixes #95" closes an issue: no PR to fetch
    assert "/repos/acme/rocket/pulls/95" not in [r["path"] for r in github.requests]
    before = len(github.requests)
    assert_ok(prhub(env, "summarize", "--pr", "101", "--repo", "acme/rocket", "--refresh"))
    again = [r["path"] for r in github.requests[before:] if r["path"].endswith("/pulls/102")]
    assert again == ["/repos/acme/rocket/pulls/102"]  # one request, not the files again


def test_a_pr_of_an_earlier_week_digested_before_is_named_with_its_digest(env, llm):
    args = ["summarize", "--pr", "103", "--repo", "acme/rocket", "--format", "json"]
    assert_ok(prhub(env, *args, "--out", "103.json"))
    made = json.loads(Path("103.json").read_text(encoding="utf-8"))["content"]
    assert_ok(prhub(env, "summarize", "--pr", "107", "--repo", "acme/rocket"))
    told = related(digest_request(llm, 107))  # #107, of week 32, reverts #103, of week 31
    line = f"（2026-07-29 合入；本 PR 回滚了它） 导读：{made['title']}，{made['verdict']}"
    assert line in told


def test_a_pr_of_the_same_week_is_named_without_its_digest(env, llm):
    assert_ok(prhub(env, "summarize", "--pr", "102", "--repo", "acme/rocket"))
    assert_ok(prhub(env, "summarize", "--pr", "101", "--repo", "acme/rocket"))
    told = related(digest_request(llm, 101))  # #102 was merged in #101's week
    assert f"#102 {GRPO}（2026-07-28 合入；本 PR 提到它）\n" in told  # no 导读: no order


def test_a_week_names_the_prs_that_changed_the_same_files(env, llm):
    assert_ok(prhub(env, "weekly", "--week", "31", "--year", "2026", "--out", "w31.md"))
    told = related(digest_request(llm, 106))  # #102 and #106 changed the trainer and config
    shared = "同期也改了 rocket/config/ppo.yaml、rocket/trainer/ppo_trainer.py"
    assert f"#102 {GRPO}（2026-07-28 合入；{shared}）" in told
    assert "导读" not in told  # a digest of the same week: made in the same run
    assert related(digest_request(llm, 104)) == ""  # no neighbour: no block


def test_a_revert_names_the_pr_it_reverts_from_another_week(env, llm):
    assert_ok(prhub(env, "weekly", "--week", "32", "--year", "2026", "--out", "w32.md"))
    # #107 reverts #103, merged the week before: "Reverts #103" in its body.
    told = related(digest_request(llm, 107))
    assert "#103 [rollout] fix: reset KV cache between rollout batches" in told
    assert "本 PR 回滚了它" in told


def revert_by_commit(data: Path, body: str) -> Path:
    """The fixtures with #107 naming what it reverts in `body` alone."""
    shutil.copytree(FIXTURES / "github" / "acme", data / "acme")
    path = data / "acme" / "rocket" / "pulls" / "107.json"
    pull = json.loads(path.read_text())
    pull["title"] = "Revert the KV cache reset"
    pull["body"] = body
    path.write_text(json.dumps(pull))
    return data


def reverted(tmp_path: Path, body: str) -> tuple[dict[str, Any], list[str], str]:
    """Week 32 run over fixtures whose #107 says `body`: its revert, GitHub's requests, and
    the <related> block of #107's digest request."""
    data = revert_by_commit(tmp_path / "data", body)
    with (
        GitHubStandIn(data, token=GITHUB_TOKEN) as github,
        LLMStandIn(api_key=OPENAI_KEY) as llm,
    ):
        env = cli_env(github, llm, tmp_path / "store.db", PRHUB_REPO="acme/rocket")
        args = ["weekly", "--week", "32", "--year", "2026", "--format", "json", "--out", "w.json"]
        assert_ok(prhub(env, *args))
        asked = [r["path"] for r in github.requests]
        told = related(digest_request(llm, 107))
    [revert] = json.loads((tmp_path / "w.json").read_text())["facts"]["reverts"]
    return revert, asked, told


SHA = "d00461d995471178ba6419d7fcddf1f84b3e08ee"  # #103's merge commit


def test_a_revert_named_by_its_commit_alone_is_resolved_to_that_commits_pr(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    revert, asked, told = reverted(tmp_path, f"This reverts commit {SHA}.\n\nToo slow.")
    assert revert["number"] == 107 and revert["reverted"] == 103
    assert revert["delay_hours"] is not None  # #103's merge time, from its fetched PR
    assert f"/repos/acme/rocket/commits/{SHA}/pulls" in asked
    assert "#103" in told and "本 PR 回滚了它" in told


def test_a_revert_of_a_commit_github_does_not_know_takes_the_one_pr_its_body_cites(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    body = "This reverts commit 0123456789abcdef.\n\nIt made #103 slower on long prompts."
    revert, asked, _ = reverted(tmp_path, body)
    assert "/repos/acme/rocket/commits/0123456789abcdef/pulls" in asked  # answered 422
    assert revert["reverted"] == 103
