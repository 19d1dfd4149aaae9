"""The weekly pipeline end to end, through the GitHub and LLM stand-ins."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from prhub.model import DigestContent
from prhub.publish import labels, render
from prhub.run import week
from prhub.run.run import Run, window
from tests.factories import (
    FIXTURES,
    GITHUB_TOKEN,
    OPENAI_KEY,
    big_prs,
    digest_of,
    responder,
    settings,
    unlinked,
    week_of,
)
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import prompt_text

PULLS = FIXTURES / "github" / "acme" / "rocket" / "pulls"


@pytest.fixture
def smart_llm(llm: LLMStandIn) -> LLMStandIn:
    llm.responder = responder
    return llm


def fixture_pulls(numbers: range) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    return [
        (
            json.loads((PULLS / f"{n}.json").read_text()),
            json.loads((PULLS / f"{n}.files.json").read_text()),
        )
        for n in numbers
    ]


def test_week_31_in_shanghai_holds_exactly_its_prs(github, smart_llm, tmp_path):
    report = week_of(settings(github, smart_llm, tmp_path), year=2026, week=31)
    assert report.facts.prs == [101, 102, 103, 104, 105, 106]
    assert [d.number for d in report.digests] == report.facts.prs
    assert report.failed == []


def test_utc_moves_the_week_boundary(github, smart_llm, tmp_path):
    report = week_of(settings(github, smart_llm, tmp_path, tz="UTC"), year=2026, week=31)
    assert report.facts.prs == [101, 102, 103, 104, 105, 106, 107]  # 107: Monday 00:30 in Beijing


def test_every_figure_matches_an_independent_count(github, smart_llm, tmp_path):
    report = week_of(settings(github, smart_llm, tmp_path), year=2026, week=31)
    text = render.weekly_markdown(report)
    pulls = fixture_pulls(range(101, 107))

    additions = sum(p["additions"] for p, _ in pulls)
    deletions = sum(p["deletions"] for p, _ in pulls)
    assert f"共合入 6 个 PR（+{additions:,} / −{deletions:,} 行）" in text

    kinds = {"fix": "bugfix", "feat": "feature", "doc": "docs", "ci": "ci", "refactor": "refactor"}
    same = {"doc": "docs", "documentation": "docs", "enhancement": "feature"}
    tags: Counter[str] = Counter()
    for pull, _ in pulls:
        head, _, rest = pull["title"].rpartition("]")
        words = {m.strip().lower() for m in re.findall(r"[^\[\],]+", head)} - {"breaking"}
        words |= {kinds[rest.split(":")[0].strip()]}
        words |= {label["name"].lower() for label in pull["labels"]}
        tags.update({same.get(w, w) for w in words})
    assert report.facts.tags == dict(tags)
    for tag, n in tags.items():
        assert f"| {tag} | {n} |" in text

    touched: Counter[str] = Counter(f["filename"] for _, files in pulls for f in files)
    hot = {path for path, n in touched.items() if n >= 2}
    assert {h.path for h in report.facts.hot_files} == hot
    for path in hot:
        assert f"`{path}`" in text

    authors = Counter(p["user"]["login"] for p, _ in pulls)
    top, top_count = authors.most_common(1)[0]
    assert report.facts.top_author_share == pytest.approx(top_count / 6)
    assert f"最多产的 {top} 贡献 {top_count} 个（{top_count / 6:.0%}）" in text

    first = [
        p["user"]["login"] for p, _ in pulls if p["author_association"] == "FIRST_TIME_CONTRIBUTOR"
    ]
    assert [a.author for a in report.facts.first_time] == first
    assert [b.number for b in report.facts.breaking] == [
        p["number"] for p, _ in pulls if "[BREAKING]" in p["title"]
    ]

    def is_test(path: str) -> bool:
        return "tests/" in path or Path(path).name.startswith("test_")

    untested = [
        p["number"]
        for p, files in pulls
        if any(f["filename"].endswith(".py") and not is_test(f["filename"]) for f in files)
        and not any(is_test(f["filename"]) for f in files)
    ]
    assert report.facts.untested == untested
    # the responder scores PR n as n % 10: the key-PR table is ordered by that and shows it
    assert report.facts.mean_importance == pytest.approx(sum(n % 10 for n in range(101, 107)) / 6)
    # key PRs: importance >= 5 (106, 105), topped up to three by rank
    assert report.facts.key_prs == [106, 105, 104]
    assert f"平均重要性 {report.facts.mean_importance:.2f}" in text
    key_table = text.split("## 本周数据")[0]
    assert "| 6.0 |" in text and "| [#104](" in text and "| [#103](" not in key_table


def test_citations_outside_the_week_are_removed_and_counted(github, smart_llm, tmp_path):
    report = week_of(settings(github, smart_llm, tmp_path), year=2026, week=31)
    narrative = report.narrative
    assert narrative is not None
    assert "#999" not in narrative.model_dump_json()
    assert narrative.trends[0].prs == [101]
    assert [k.number for k in narrative.key_prs] == [106]
    assert narrative.highlights == ["#101 修复温度为零。", "本周合入 6 个 PR。"]
    # #999 in a highlight (with its "另见"), a trend and a key PR; "共 42 个 PR", which no fact
    # holds and which would not read without its number
    assert report.meta.dropped_citations == 4
    cited = {int(n) for n in re.findall(r"#(\d+)", render.weekly_markdown(report))}
    assert cited <= set(report.facts.prs)


def test_revert_is_found_with_the_reverted_pr(github, smart_llm, tmp_path):
    report = week_of(settings(github, smart_llm, tmp_path, tz="UTC"), year=2026, week=31)
    [revert] = report.facts.reverts
    assert (revert.number, revert.reverted) == (107, 103)
    merged = {p["number"]: p["merged_at"] for p, _ in fixture_pulls(range(103, 108))}
    from datetime import datetime

    hours = (
        datetime.fromisoformat(merged[107]) - datetime.fromisoformat(merged[103])
    ).total_seconds() / 3600
    assert revert.delay_hours == pytest.approx(round(hours, 1))
    assert "#107 撤销了 #103" in unlinked(render.weekly_markdown(report))


def test_rerun_of_an_unchanged_week_makes_no_llm_call(github, smart_llm, tmp_path):
    config = settings(github, smart_llm, tmp_path)
    first = week_of(config, year=2026, week=31)
    llm_calls, github_calls = len(smart_llm.bodies), len(github.requests)
    again = week_of(config, year=2026, week=31)
    assert len(smart_llm.bodies) == llm_calls
    assert again.narrative == first.narrative
    assert again.meta.dropped_citations == first.meta.dropped_citations
    new = github.requests[github_calls:]
    # The repository's name as GitHub spells it, then search pages only.
    assert [r["path"] for r in new][0] == "/repos/acme/rocket"
    assert all(r["path"] == "/search/issues" for r in new[1:])
    assert again.meta == first.meta  # what made the content, not what this run paid
    assert again.meta.usage.calls == len(smart_llm.bodies)
    assert [d.content for d in again.digests] == [d.content for d in first.digests]


def test_a_new_model_resummarises(github, smart_llm, tmp_path):
    week_of(settings(github, smart_llm, tmp_path), year=2026, week=31, narrate=False)
    calls = len(smart_llm.bodies)
    week_of(
        settings(github, smart_llm, tmp_path, model="other-model"),
        year=2026,
        week=31,
        narrate=False,
    )
    assert len(smart_llm.bodies) == calls + 6


def test_github_requests_per_pr_stay_within_three(github, smart_llm, tmp_path):
    week_of(settings(github, smart_llm, tmp_path), year=2026, week=31, narrate=False)
    paths = [r["path"] for r in github.requests if r["path"] != "/search/issues"]
    per_pr = Counter(p.split("/")[5] for p in paths if "/pulls/" in p)
    assert set(per_pr) == {str(n) for n in range(101, 107)}
    assert max(per_pr.values()) <= 3  # pull, files, reviews
    # Two more for the run: the repository's name as GitHub spells it, its .gitattributes.
    assert len(paths) == sum(per_pr.values()) + 2
    assert paths.count("/repos/acme/rocket") == 1
    assert paths.count("/repos/acme/rocket/contents/.gitattributes") == 1


def test_failed_prs_are_listed_and_only_they_are_redone(github, llm, tmp_path):
    def flaky(body: dict[str, Any]) -> str:
        if "PR #103" in prompt_text(body) and not flaky.healed:
            return "not json"
        return responder(body)

    flaky.healed = False  # type: ignore[attr-defined]
    llm.responder = flaky
    config = settings(github, llm, tmp_path)
    report = week_of(config, year=2026, week=31)
    assert [f.number for f in report.failed] == [103]
    assert report.facts.prs == [101, 102, 103, 104, 105, 106]  # merged that week all the same
    assert [d.number for d in report.digests] == [101, 102, 104, 105, 106]
    text = unlinked(render.weekly_markdown(report))
    assert "## 未能生成导读的 PR" in text and "1 个未能生成导读（#103）" in text

    flaky.healed = True  # type: ignore[attr-defined]
    before = len(llm.bodies)
    again = week_of(config, year=2026, week=31, narrate=False)
    digest_calls = [b for b in llm.bodies[before:] if "PR #" in prompt_text(b)]
    assert len(digest_calls) == 1 and "PR #103" in prompt_text(digest_calls[0])
    assert again.failed == [] and again.facts.prs == [101, 102, 103, 104, 105, 106]


def test_empty_week_gives_a_short_valid_report(github, smart_llm, tmp_path):
    report = week_of(settings(github, smart_llm, tmp_path), year=2026, week=20)
    assert report.facts.pr_count == 0 and report.narrative is None
    assert smart_llm.bodies == []
    text = render.weekly_markdown(report)
    assert "本周没有合入任何 PR" in text and "2026 年第 20 周" in text


def test_tables_stay_well_formed_with_hostile_titles(github, llm, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "github", data)
    pull_path = data / "acme" / "rocket" / "pulls" / "101.json"
    pull = json.loads(pull_path.read_text())
    pull["title"] = "[rollout] fix: a | b `c` <script>alert(1)</script>"
    pull_path.write_text(json.dumps(pull))

    def hostile(body: dict[str, Any]) -> str:
        reply = json.loads(responder(body))
        if "title" in reply:
            reply["title"] = "标题 | 带竖线 `x|y` <b>粗</b>"
        if "key_prs" in reply:
            reply["trends"] = [{"theme": "a|b", "prs": [101], "judgement": "<i>x</i> | y"}]
            reply["key_prs"] = [{"number": 106, "topic": "t|t", "note": "`a|b` c"}]
        return json.dumps(reply, ensure_ascii=False)

    llm.responder = hostile
    with GitHubStandIn(data, token=GITHUB_TOKEN) as server:
        report = week_of(settings(server, llm, tmp_path), year=2026, week=31)
    text = render.weekly_markdown(report)
    assert "<script>" not in text and "<b>" not in text and "<i>" not in text
    table: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            widths = {len(re.findall(r"(?<!\\)\|", row)) for row in table}
            assert len(widths) == 1, table
            table = []


def test_window_rejects_bad_weeks_and_dates(github, smart_llm, tmp_path):
    from datetime import UTC, datetime

    from prhub.errors import ConfigError

    config = settings(github, smart_llm, tmp_path)
    now = datetime(2026, 11, 30, 9, tzinfo=UTC)
    for kwargs, message in [
        ({"year": 2026, "week": 0}, "week 0"),
        ({"year": 2026, "week": 54}, "week 54"),
        ({"year": 2026, "week": 50}, "has not started"),
        ({"since": "2026-13-01"}, "--since"),
        ({"since": "2026-08-02", "until": "2026-08-01"}, "must come after"),
        ({"week": 3, "since": "2026-08-01"}, "either --week"),
    ]:
        with pytest.raises(ConfigError, match=message):
            window(config, now=now, **kwargs)
    w = window(config, now=now)
    assert (w.year, w.week) == (2026, 48) and (w.end - w.start).days == 7
    w = window(config, since="2026-07-27", until="2026-08-02", now=now)
    assert w.week is None and (w.end - w.start).days == 7


def test_digest_content_schema_is_strict_for_openai():
    schema = DigestContent.model_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"])


def test_a_repositorys_tag_spellings_fold_everywhere(github, smart_llm, tmp_path):
    config = settings(github, smart_llm, tmp_path, tags={"rollout": "inference", "ci": "infra"})
    report = week_of(config, year=2026, week=31, narrate=False)
    assert report.facts.tags["inference"] == 2 and "rollout" not in report.facts.tags
    assert report.facts.tags["infra"] == 1
    assert "inference" in report.digests[0].tags
    assert "## inference\n\n2 个 PR\n" in labels.labels_markdown(labels.view(report))


def test_the_weekly_report_is_kept_in_the_store(github, smart_llm, tmp_path):
    from prhub.store.store import Store

    config = settings(github, smart_llm, tmp_path)
    report = week_of(config, year=2026, week=31)
    store = Store(config.store)
    try:
        kept = store.report("acme/rocket", report.facts.start, report.facts.end)
        runs = store.runs()
    finally:
        store.close()
    assert kept == report
    assert runs[0]["command"] == "weekly" and runs[0]["calls"] == 7


@pytest.mark.parametrize(
    ("flavour", "learned"),
    [("deepseek", "json_object"), ("llama-cpp-python", "json_object_schema")],
)
def test_an_endpoint_refusing_json_schema_costs_one_refusal_a_run_then_none(
    github, tmp_path, flavour, learned
):
    with LLMStandIn(api_key=OPENAI_KEY, flavour=flavour) as server:
        config = settings(github, server, tmp_path, jobs=4)
        report = week_of(config, year=2026, week=31)
        assert not report.failed and report.narrative is not None
        refused = [b for b in server.bodies if b["response_format"]["type"] == "json_schema"]
        assert len(refused) == 1  # the first call; every later one in the learned mode
        # The next run starts in the learned mode: no refusal at all.
        before = len(server.bodies)
        week_of(config.model_copy(update={"refresh": True}), year=2026, week=31)
        again = server.bodies[before:]
        assert again and all(b["response_format"]["type"] == "json_object" for b in again)
        assert ("schema" in again[0]["response_format"]) == (learned == "json_object_schema")


def test_two_runs_on_one_store_pay_for_each_digest_once(github, tmp_path):
    import threading

    with LLMStandIn(api_key=OPENAI_KEY, latency=0.3) as server:
        server.responder = responder
        config = settings(github, server, tmp_path, jobs=2)
        reports = []
        runs = [
            threading.Thread(
                target=lambda: reports.append(week_of(config, year=2026, week=31, narrate=False))
            )
            for _ in range(2)
        ]
        for run in runs:
            run.start()
        for run in runs:
            run.join(timeout=120)
        assert len(reports) == 2 and all(not r.failed for r in reports)
        asked = [int(re.search(r"PR #(\d+)", prompt_text(b)).group(1)) for b in server.bodies]
        assert sorted(asked) == sorted(set(asked))  # no PR digested twice
        assert reports[0].digests == reports[1].digests


def test_a_week_the_store_serves_whole_needs_no_api_key(github, smart_llm, tmp_path):
    config = settings(github, smart_llm, tmp_path)
    first = week_of(config, year=2026, week=31)
    calls = len(smart_llm.bodies)
    keyless = config.model_copy(update={"openai_api_key": None})
    again = week_of(keyless, year=2026, week=31)
    assert again.digests == first.digests and again.narrative == first.narrative
    assert len(smart_llm.bodies) == calls


def reshaped(body: dict[str, Any]) -> str:
    """A real model's habits at once: a think block, prose around a fence, a number written
    as a string, a choice with a note after it, empty lists left out."""
    reply = json.loads(responder(body))
    if "importance" in reply:
        reply["importance"] = str(reply["importance"])
        reply["verdict"] = f"{reply['verdict']}（约 {reply['minutes']} 分钟）"
    reply = {k: v for k, v in reply.items() if v != []}
    text = json.dumps(reply, ensure_ascii=False, indent=2)
    think = "<think>\n先看 diff，再写导读。\n</think>\n"
    return f"{think}好的，导读如下：\n```json\n{text}\n```\n以上。"


def test_replies_in_real_models_shapes_cost_no_extra_call(github, llm, tmp_path):
    llm.responder = reshaped
    config = settings(github, llm, tmp_path, response_mode="json_object")
    with Run(config, "summarize") as run:
        made = [week.summarize(run, n) for n in (101, 102, 103)]
    assert len(llm.bodies) == 3  # one request a PR: nothing was asked again
    assert all(d.meta.failed_checks == [] and d.meta.usage.calls == 1 for d in made)
    assert all(d.content.verdict in ("精读", "快速浏览", "可跳过") for d in made)


# The repository's .gitattributes


def test_gitattributes_are_read_once_a_run_and_the_stored_copy_serves_when_github_fails(
    tmp_path: Path, llm: LLMStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    from contextlib import closing

    from prhub.store.store import Store

    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN) as github:
        config = settings(github, llm, tmp_path, repo="acme/booster")
        made = digest_of(12, config)
        contents = [r for r in github.requests if "/contents/" in r["path"]]
        assert len(contents) == 1  # one request a run
        user = llm.bodies[0]["messages"][1]["content"]
        assert "booster/_vendor/tinyjson.py" in user  # named...
        assert '__version__ = "1.0.1"' not in user  # ...its diff not sent
        assert made.meta.coverage.generated == ["booster/_vendor/tinyjson.py"]
        digest_of(12, config)  # within a day: the stored copy, no request
        assert len([r for r in github.requests if "/contents/" in r["path"]]) == 1
        with closing(Store(config.store)) as store:  # a day later...
            store._db.execute("UPDATE attributes SET fetched_at = '2026-01-01T00:00:00+00:00'")
        # ...GitHub fails for .gitattributes: the stored copy marks the same files, so the
        # digest made from them is reused.
        github.script(r"/contents/", [(503, {}, {"message": "Service Unavailable"})] * 9)
        again = digest_of(12, config.model_copy(update={"max_attempts": 1}))
        assert len([r for r in github.requests if "/contents/" in r["path"]]) == 2
    assert again.meta.cache_key == made.meta.cache_key and len(llm.bodies) == 1
    assert ".gitattributes of acme/booster not read" in caplog.text
    with closing(Store(config.store)) as store:
        assert "linguist-vendored" in (store.attributes("acme/booster") or "")


@pytest.mark.parametrize("jobs", [1, 4])
def test_jobs_bounds_llm_requests_in_flight_across_the_run(tmp_path, jobs):
    """Map calls of big PRs share the bound with every other PR's calls."""
    data = big_prs(tmp_path / "data", [101, 102])  # two big PRs: map calls of both at once
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github, LLMStandIn(latency=0.15) as slow:
        slow.responder = responder
        config = settings(github, slow, tmp_path, jobs=jobs, input_budget=4000)
        report = week_of(config, year=2026, week=31, narrate=False)
        chunked = sum("digest_notes" in d.meta.prompt for d in report.digests)
        assert chunked == 2, "the test must cover map calls"
        assert len(slow.bodies) > 2 * jobs
        assert slow.most_in_flight == jobs  # reached, never passed


def test_gitattributes_github_cannot_give_and_none_stored_fail_loudly(
    tmp_path: Path, llm: LLMStandIn
) -> None:
    from prhub.errors import GitHubUnavailable

    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN) as github:
        config = settings(github, llm, tmp_path, repo="acme/booster", max_attempts=1)
        github.script(r"/contents/", [(503, {}, {"message": "Service Unavailable"})])
        with pytest.raises(GitHubUnavailable):
            digest_of(12, config)
        assert llm.bodies == []  # no digest keyed without the repository's marks
        github.script(r"/contents/", [(403, {}, {"message": "Resource not accessible"})])
        made = digest_of(12, config)  # a token that may not read contents
    assert made.meta.coverage.generated == []  # read as no .gitattributes, for good
