"""A strong model's recorded week replayed through the whole pipeline: what it grounded is
published whole, what is planted as invented is not, and its titles cost no corrective call."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prhub.cli import app
from prhub.model import WeeklyReport
from prhub.publish import render
from prhub.text import sentences
from prhub.weekly.prose import holds_noun
from tests.factories import GITHUB_TOKEN, OPENAI_KEY, ROOT, cli_env, unlinked
from tests.standins import GitHubStandIn, LLMStandIn

STRONG = ROOT / "tests" / "replies" / "strong"
# Two days answered with earlier prompts, and a whole week (26 PRs) with today's.
RECORDED = STRONG / "verl-2026-07-28.json"
WEEKS = [RECORDED, STRONG / "verl-2026-W31.json"]
LISTS = ("design_decisions", "risks", "follow_ups", "discussion")
# Planted into #7085's answer: a path and a method the PR never had.
INVENTED_PATH = "`verl/utils/magic_cache.py` 里的分片缓存在 EP 切换后不会失效。"
INVENTED_METHOD = "导出后调用 `VeOmniEngine.flush_all_caches()` 清空分片缓存，避免重复占用显存。"


def plain(text: str) -> str:
    """Text as a reader compares it: no code marks, no spacing differences."""
    return re.sub(r"\s+", "", text.replace("`", ""))


def answers(record: dict[str, Any]) -> dict[tuple[str, int | None], dict[str, Any]]:
    found = {(a["kind"], a.get("pr")): copy.deepcopy(a["content"]) for a in record["answers"]}
    planted = found[("digest", 7085)]
    planted["risks"].append(INVENTED_PATH)
    planted["design_decisions"].append(INVENTED_METHOD)
    return found


def responder(recorded: dict[tuple[str, int | None], dict[str, Any]], asked: list[str]):
    def answer(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        number = re.search(r"PR #(\d+)", user)
        if "<facts>" in user:
            kind, pr = "weekly", None
        elif number:
            kind, pr = "digest", int(number.group(1))
        else:
            kind, pr = "title", 7188
        asked.append(f"{kind}:{pr}")
        return json.dumps(recorded[(kind, pr)], ensure_ascii=False)

    return answer


@pytest.fixture(params=WEEKS, ids=[p.stem for p in WEEKS])
def replayed(
    request: pytest.FixtureRequest, corpus_dir: Path, tmp_path: Path, monkeypatch
) -> tuple[dict, dict, list[str]]:
    record = json.loads(request.param.read_text(encoding="utf-8"))
    recorded, asked = answers(record), []
    monkeypatch.chdir(tmp_path)
    with (
        GitHubStandIn(corpus_dir, token=GITHUB_TOKEN) as github,
        LLMStandIn(api_key=OPENAI_KEY, responder=responder(recorded, asked)) as llm,
    ):
        env = cli_env(github, llm, tmp_path / "store.db", PRHUB_MODEL="strong-model")
        args = ["weekly", "--repo", record["repo"], "--tz", record["tz"], "--format", "json"]
        if "week" in record:
            args += ["--week", str(record["week"]), "--year", str(record["year"])]
        else:
            args += ["--since", record["since"], "--until", record["until"]]
        result = CliRunner().invoke(app, [*args, "--out", "week.json"], env=env)
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "week.json").read_text(encoding="utf-8"))
    return record, report, asked


def published_items(digest: dict[str, Any]) -> list[str]:
    content = digest["content"]
    return [plain(x) for name in LISTS for x in content[name]]


def test_every_item_a_strong_model_grounded_is_published_whole(replayed):
    record, report, _ = replayed
    digests = {d["number"]: d for d in report["digests"]}
    expected = {(x["pr"], plain(x["text"])) for x in record["not_grounded"]}
    missing = []
    for a in record["answers"]:
        if a["kind"] != "digest":
            continue
        published = digests[a["pr"]]
        content = published["content"]
        shown = set(published_items(published))
        for name in LISTS:
            for item in a["content"][name]:
                if plain(item) not in shown and (a["pr"], plain(item)) not in expected:
                    missing.append((a["pr"], name, item))
        for name in ("advice", "importance_reason"):
            for sentence in sentences(a["content"][name]):
                if plain(sentence) not in plain(content[name]):
                    missing.append((a["pr"], name, sentence))
        assert content["verdict"] == a["content"]["verdict"]
    assert not missing, missing
    # What was not grounded went, and each drop is recorded with its reason.
    for pr, text in expected:
        assert text not in published_items(digests[pr])
        assert any(plain(d["text"]) == text for d in digests[pr]["meta"]["dropped"])


def test_planted_inventions_are_not_published_and_are_recorded(replayed):
    _, report, _ = replayed
    digest = next(d for d in report["digests"] if d["number"] == 7085)
    shown = published_items(digest)
    assert plain(INVENTED_PATH) not in shown and plain(INVENTED_METHOD) not in shown
    reasons = {plain(d["text"]): d["reason"] for d in digest["meta"]["dropped"]}
    assert reasons[plain(INVENTED_PATH)] == "unknown_path"
    assert reasons[plain(INVENTED_METHOD)] == "unknown_identifier"
    assert digest["meta"]["dropped_citations"] == len(digest["meta"]["dropped"])


def test_titles_like_the_references_cost_no_corrective_call(replayed):
    record, report, asked = replayed
    digests = {d["number"]: d for d in report["digests"]}
    first = [a for a in record["answers"] if a["kind"] == "digest"]
    assert sorted(asked) == sorted([f"digest:{a['pr']}" for a in first] + ["weekly:None"])
    for a in first:
        assert digests[a["pr"]]["content"]["title"] == a["content"]["title"]
        assert digests[a["pr"]]["meta"]["failed_checks"] == []


def test_the_weekly_narrative_publishes_what_the_model_wrote(replayed):
    record, report, _ = replayed
    written = next(a["content"] for a in record["answers"] if a["kind"] == "weekly")
    narrative = report["narrative"]
    for name in ("highlights", "key_changes", "follow_ups"):
        shown = [plain(x) for x in narrative[name]]
        assert [x for x in written[name] if plain(x) not in shown] == [], name
    risks = [plain(r["text"]) for r in narrative["risks"]]  # once texts alone, now with headlines
    said = [x if isinstance(x, dict) else {"text": x, "headline": ""} for x in written["risks"]]
    assert [x for x in said if plain(x["text"]) not in risks] == []
    headlines = [plain(r["headline"]) for r in narrative["risks"]]
    assert [x for x in said if plain(x["headline"]) not in headlines] == []
    assert plain(written["lead"]) == plain(narrative["lead"])
    assert report["meta"]["dropped"] == [] and narrative["carried_over"] == []


# What a reader scans first: the short risks at the top of a weekly report.

REFERENCE = ROOT.parent / "shared" / "reference"
ENDS = "。！？"
CLAUSE_ENDS = "，,；;：:、"


def top_and_full(markdown: str) -> tuple[list[str], list[str]]:
    """The short risks at the top of a report and the risks of its section 4, as read."""
    top = markdown.split("## 风险观察", 1)[1].split("\n## ", 1)[0]
    full = markdown.split("### 4. 风险观察", 1)[1].split("\n### ", 1)[0]

    def items(block: str) -> list[str]:
        return [unlinked(x[2:].strip()) for x in block.splitlines() if x.startswith("- ")]

    return items(top), items(full)


def whole(short: str, risk: str) -> bool:
    """A short risk that reads whole: it ends a sentence, names something its risk names, and
    is either written as a headline or a sentence of the risk up to that sentence's end."""
    if not short or short[-1] not in ENDS or not holds_noun(short, risk):
        return False
    body = plain(short[:-1])
    flat = plain(risk)
    if not flat.startswith(body):
        return True  # written as a headline: a sentence of its own
    rest = flat[len(body) :]
    return not rest or rest[0] in ENDS + "；;"  # a prefix only up to a sentence's end


def reference_risks() -> tuple[list[str], list[str]]:
    """The weekly reference's short and full risks, read at test time; skips without it."""
    found = sorted(REFERENCE.glob("003_*.txt"))
    if not found:
        pytest.skip(f"the weekly reference is not at {REFERENCE}")
    text = found[0].read_text(encoding="utf-8")
    top = text.split("风险观察", 1)[1].split("完整周报", 1)[0]
    full = text.split("4. 风险观察", 1)[1].split("5. ", 1)[0]

    def bullets(block: str) -> list[str]:
        return [x.strip().lstrip("•").strip() for x in block.splitlines() if "•" in x]

    return bullets(top), bullets(full)


def test_the_checker_of_short_risks_takes_the_references_and_refuses_fragments():
    shorts, fulls = reference_risks()
    assert len(shorts) == len(fulls) >= 3
    assert all(whole(s, f) for s, f in zip(shorts, fulls, strict=True))  # calibrated
    # A clause cut where a sentence goes on, as the old rule cut them.
    fragment = "#7347 把 D2H 改为异步后。"
    assert not whole(fragment, "#7347 把 D2H 改为异步后，采样偶发读到旧值。")


def test_the_top_risks_of_a_replayed_week_are_whole_sentences(replayed):
    _, report, _ = replayed
    shown = render.weekly_markdown(WeeklyReport.model_validate(report))
    shorts, fulls = top_and_full(shown)
    assert shorts and len(shorts) == len(report["narrative"]["risks"])
    for short, risk in zip(shorts, fulls, strict=False):
        assert whole(short, risk), (short, risk)
        numbers = set(re.findall(r"#\d+", short))
        assert numbers <= set(re.findall(r"#\d+", risk)), short  # never other PRs appended


def test_the_reduce_call_of_a_two_part_pr_reads_both_parts_notes_whole(corpus_dir, tmp_path):
    record = json.loads((RECORDED.parent / "verl-7101-two-parts.json").read_text("utf-8"))
    notes = {a["part"]: a["content"] for a in record["answers"] if a["kind"] == "notes"}
    final = next(a["content"] for a in record["answers"] if a["kind"] == "digest")

    def answer(body: dict[str, Any]) -> str:
        part = re.search(r"这是第 (\d+) 段，共 (\d+) 段", body["messages"][-1]["content"])
        return json.dumps(notes[int(part.group(1))] if part else final, ensure_ascii=False)

    with (
        GitHubStandIn(corpus_dir, token=GITHUB_TOKEN) as github,
        LLMStandIn(api_key=OPENAI_KEY, responder=answer) as llm,
    ):
        env = cli_env(github, llm, tmp_path / "store.db", PRHUB_MODEL="strong-model")
        args = ["summarize", "--repo", record["repo"], "--pr", str(record["pr"])]
        args += ["--input-budget", str(record["input_budget"]), "--format", "json"]
        result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "d.json")], env=env)
        bodies = llm.bodies
    assert result.exit_code == 0, result.stderr
    reduce = bodies[-1]["messages"][-1]["content"]
    assert len(bodies) == 3 and "\ufffd" not in "".join(str(b) for b in bodies)
    for part, note in notes.items():
        for item in [note["summary"], *note["key_files"], *note["identifiers"], *note["risks"]]:
            assert item in reduce, (part, item)
    assert reduce.index(notes[1]["summary"]) < reduce.index(notes[2]["summary"])
    digest = json.loads((tmp_path / "d.json").read_text("utf-8"))
    assert digest["meta"]["coverage"]["notes_shortened"] == 0
    assert digest["content"]["title"] == final["title"] and digest["meta"]["failed_checks"] == []
    for name in LISTS:
        assert [plain(x) for x in digest["content"][name]] == [plain(x) for x in final[name]]
