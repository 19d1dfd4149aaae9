"""What many test modules build: PRs, settings and CLI runs for the stand-ins, replies, reports.

Shared fixtures are in `conftest.py`; a test module imports builders and data from here only,
never from another test module.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token
from pydantic import BaseModel, ConfigDict, Field
from typer.testing import CliRunner, Result

from prhub.config import Settings
from prhub.defaults import ENV
from prhub.digest.budgets import NONE
from prhub.github.ratelimit import Budget
from prhub.github.source import GitHubSource
from prhub.llm.llm import LLM
from prhub.llm.prompt import load_prompt
from prhub.model import (
    AuthorCount,
    Coverage,
    FailedPR,
    FileChange,
    PRDigest,
    PreparedPR,
    PullRequest,
    Revert,
    WeeklyReport,
)
from prhub.publish import parts
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import default_responder, prompt_text

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GOLDEN = FIXTURES / "golden"
GITHUB_TOKEN = "ghp_FAKEtoken0000000000000000000000000000"
OPENAI_KEY = "sk-FAKEkey0000000000000000000000"
REPO = "acme/rocket"
# The lead computed from the fixture report's facts.
LEAD = "本周 rocket 共合入 6 个 PR，主要涉及 rollout、trainer、algo，其中重点 PR 4 个。"


# Pull requests


def hunk(start: int, added: int, deleted: int, tag: str) -> str:
    lines = [f"@@ -{start},{deleted + 2} +{start},{added + 2} @@ def {tag}():", "     ctx = 1"]
    lines += [f"-    old_{tag}_{i} = legacy({i})" for i in range(deleted)]
    lines += [f"+    new_{tag}_{i} = compute({i}, scale=2)" for i in range(added)]
    return "\n".join([*lines, "     return ctx"])


def change(path: str, hunks: int = 1, added: int = 5, deleted: int = 1, **kw: object) -> FileChange:
    # Each file's changes differ, so none is sent once as a copy of another's.
    tag = zlib.crc32(path.encode()) % 10_000
    patch = "\n".join(hunk(1 + 50 * i, added, deleted, f"f{i}_{tag}") for i in range(hunks))
    fields: dict = dict(
        path=path,
        status="modified",
        additions=hunks * added,
        deletions=hunks * deleted,
        patch=patch,
    )
    return FileChange(**{**fields, **kw})


def big_prs(data: Path, numbers: list[int]) -> Path:
    """A copy of the fixtures' GitHub data in `data`, the PRs `numbers` of acme/rocket made too
    big for one call at an input budget of 4,000 (24 added files of 40 lines each)."""
    import shutil

    shutil.copytree(FIXTURES / "github" / "acme", data / "acme")
    pulls = data / "acme" / "rocket" / "pulls"
    for number in numbers:
        files = json.loads((pulls / f"{number}.files.json").read_text())
        for i in range(24):
            lines = [f"+value_{number}_{i}_{j} = compute({j}, scale={i * j})" for j in range(40)]
            patch = "@@ -0,0 +1,40 @@\n" + "\n".join(lines)
            name = f"rocket/big_{i}.py"
            files.append({"filename": name, "status": "added", "additions": 40, "patch": patch})
        (pulls / f"{number}.files.json").write_text(json.dumps(files))
        pull = json.loads((pulls / f"{number}.json").read_text())
        pull.update(changed_files=len(files), additions=pull["additions"] + 24 * 40)
        (pulls / f"{number}.json").write_text(json.dumps(pull))
    return data


def make_pr(files: list[FileChange], title: str = "feat: a change", body: str = "") -> PullRequest:
    return PullRequest(
        repo="o/r",
        number=1,
        title=title,
        body=body,
        author="me",
        created_at=datetime(2026, 8, 1, tzinfo=UTC),
        files=files,
    )


@cache
def synthetic(n: int) -> PullRequest:
    """n files: mostly source, some tests, docs, config, noise and patchless files."""
    files = []
    for i in range(n):
        kind = i % 20
        size = dict(hunks=1 + i % 4, added=2 + (i * 7) % 23, deleted=i % 4)
        if kind < 11:
            files.append(change(f"pkg/mod{i % 13}/sub{i % 3}/file_{i}.py", **size))
        elif kind < 15:
            files.append(change(f"tests/mod{i % 5}/test_file_{i}.py", **size))
        elif kind < 17:
            files.append(change(f"docs/guide/page_{i}.md", **size))
        elif kind == 17:
            files.append(change(f"configs/job_{i}.yaml", **size))
        elif kind == 18:
            files.append(change(f"vendor/lib{i}/x.go", **size))
        else:
            files.append(change(f"pkg/big/data_{i}.py", additions=900, deletions=0, patch=None))
    return make_pr(files)


def prepared(body: str) -> PreparedPR:
    """A one-file PR ready for the digest prompt, with `body` as its description."""
    return PreparedPR(
        repo="acme/rocket",
        number=1,
        title="fix: typo",
        body=body,
        author="someone",
        files=[],
        chunks=["+fixed"],
        index="",
        coverage=Coverage(full=["README.md"]),
    )


def digest_messages(pr: PreparedPR, **variables: Any) -> list[dict[str, str]]:
    """The digest prompt's messages for `pr`: one chunk, no discussion, no notes."""
    values = {
        "pr": pr,
        "review_states": [],
        "approvers": [],
        "discussion": NONE,
        "diff": pr.chunks[0],
        "notes": [],
        "index": "",
    }
    return load_prompt("digest").messages(**{**values, "schema": None, **variables})


# Secrets, assembled at run time so that no scanner mistakes this file for a leak.
GITHUB = "gh" + "p_" + "A1b2C3d4E5" * 4
GITHUB_OAUTH = "gh" + "o_" + "Z9y8X7w6V5" * 4
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" + "_" + "q1W2e3R4t5" * 6
OPENAI = "sk" + "-proj-" + "T3BlbkFJ" + "x9Y8z7W6v5" * 4
ANTHROPIC = "sk" + "-ant-api03-" + "Qm9vYmFy" + "k7L6m5N4" * 5
AWS_ID = "AKIA" + "Q3ZKX7PLM2WN4RT6"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY9q8Z2mK7pL"
SLACK = "xo" + "xb-" + "123456789012-" + "aBcDeFgHiJkLmNoP"
WEBHOOK = "https://hooks.slack" + ".com/services/" + "T0AAA1BBB/B0CCC2DDD/" + "q1w2E3r4T5y6U7i8"
KEY_BODY = "MIIEpAIBAAKCAQEA7x9Y8z7W6v5" * 3
PRIVATE_KEY = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\n" + KEY_BODY + "\n-----END RSA " + "PRIVATE KEY-----"
)
PASSWORD = "Zq8vR2mK9pL4xT7w"

# (kind, text holding one secret, the secret)
CASES = [
    ("github_token", f"GITHUB_TOKEN = '{GITHUB}'", GITHUB),
    ("github_token", f"use {GITHUB_OAUTH} here", GITHUB_OAUTH),
    ("github_token", f"token: {GITHUB_PAT}", GITHUB_PAT),
    ("api_key", f'client = OpenAI(api_key="{OPENAI}")', OPENAI),
    ("api_key", f"ANTHROPIC_API_KEY={ANTHROPIC}", ANTHROPIC),
    ("aws_access_key_id", f"aws_access_key_id = {AWS_ID}", AWS_ID),
    ("aws_secret_key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws_secret_key", f'"AWS_SECRET_ACCESS_KEY": "{AWS_SECRET}"', AWS_SECRET),
    ("slack_token", f"slack = '{SLACK}'", SLACK),
    ("slack_webhook", f"post to {WEBHOOK} now", WEBHOOK),
    ("private_key", f"key = '''\n{PRIVATE_KEY}\n'''", KEY_BODY),
    ("url_credentials", f"DB = 'postgres://admin:{PASSWORD}@db.example.com/app'", PASSWORD),
    ("secret", f'password = "{PASSWORD}"', PASSWORD),
    ("secret", f"client_secret: {PASSWORD}", PASSWORD),
    ("secret", f'"apiKey": "{PASSWORD}"', PASSWORD),
    ("secret", f"db_passwd := '{PASSWORD}'", PASSWORD),
]


# Settings and environments for the stand-ins

StandIn = GitHubStandIn | LLMStandIn
# Attempts against a stand-in that injects faults. An attempt is one request, so with 20 % faults
# all 8 attempts of a call fail once in 390,000 calls (6 attempts: once in 15,600); a week of six
# PRs makes about 30 calls.
FAULTY_ATTEMPTS = 8


def settings(*given: StandIn | Path, **overrides: Any) -> Settings:
    """Settings for the stand-ins given, in any order, with their credentials; a folder given
    holds the store. Retries are fast, and numerous enough for a stand-in's faults; `overrides`
    win over all of it."""
    values: dict[str, Any] = {"retry_base_wait": 0.01, "max_attempts": 3}
    for item in given:
        if isinstance(item, GitHubStandIn):
            values.update(repo=REPO, github_url=item.url, github_token=GITHUB_TOKEN)
        elif isinstance(item, LLMStandIn):
            values.update(openai_base_url=item.url, openai_api_key=OPENAI_KEY)
        else:
            values["store"] = item / "store.db"
        if isinstance(item, StandIn) and item.fault_rate:
            values["max_attempts"] = FAULTY_ATTEMPTS
    return Settings(**{**values, **overrides})


def cli_env(
    github: GitHubStandIn | str, llm: LLMStandIn | str, store: Path | str, **extra: str | None
) -> dict[str, str | None]:
    """The environment of a CLI run against the stand-ins (or the URLs given): every prhub
    variable cleared (a developer's own must not leak in), then the stand-ins, the fake
    credentials, `store` and fast retries, then `extra` (None unsets)."""
    env: dict[str, str | None] = dict.fromkeys([*ENV.values(), "PRHUB_CONFIG"])
    env.update(
        GITHUB_TOKEN=GITHUB_TOKEN,
        OPENAI_API_KEY=OPENAI_KEY,
        OPENAI_BASE_URL=llm if isinstance(llm, str) else llm.url,
        GITHUB_API_URL=github if isinstance(github, str) else github.url,
        PRHUB_STORE=str(store),
        PRHUB_MAX_ATTEMPTS="2",
        PRHUB_RETRY_BASE_WAIT="0.01",
    )
    env.update(extra)
    return env


class FakeClock:
    """Time that passes only when slept, from now on: waits for GitHub's limits in no time,
    the same clock for prhub's budget and the stand-in's limits."""

    def __init__(self) -> None:
        self.now = time.time()
        self.slept: list[float] = []
        self._lock = threading.Lock()

    def time(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds
            self.slept.append(seconds)

    def budget(self, wait: float = 900.0, attempts: int = 5) -> Budget:
        """A request budget on this clock."""
        return Budget(wait, attempts, clock=self.time, sleep=self.sleep)


def process_env(env: dict[str, str | None]) -> dict[str, str]:
    """This process's environment with `env` applied, for a run in a process of its own."""
    merged = {**os.environ, **env}
    return {name: value for name, value in merged.items() if value is not None}


def closed_port_url() -> str:
    """A loopback URL nothing listens on: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# CLI runs


def prhub(env: dict[str, str | None], *args: str) -> Result:
    """Runs `prhub ARGS` in CliRunner with `env`."""
    from prhub.cli import app

    return CliRunner().invoke(app, list(args), env=env)


def summarize(env: dict[str, str | None], *args: str, pr: int = 101) -> Result:
    """Runs `prhub summarize --pr N --repo acme/rocket ARGS`."""
    return prhub(env, "summarize", "--pr", str(pr), "--repo", REPO, *args)


def assert_ok(result: Result) -> None:
    assert result.exit_code == 0, (result.stderr, result.exception)


def assert_fails(result: Result, exit_code: int, says: str, spent: bool = False) -> None:
    """One `prhub: error:` line on stderr naming the problem, its exit code, no traceback;
    after the run's summary line when it spent LLM calls before failing."""
    assert result.exit_code == exit_code, (result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # not a crash
    lines = result.stderr.splitlines()
    if spent:
        summary = lines.pop(0)
        assert summary.startswith("prhub: 1 PR (0 from the store, "), summary
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("prhub: error: ")
    assert says in lines[0]
    assert "Traceback" not in result.output
    assert result.stdout == ""


# LLM calls

MESSAGES = [
    {"role": "system", "content": "Rate the pull request. Reply with one JSON object."},
    {"role": "user", "content": "PR #1: fix a typo in the README."},
]
VALID = '{"verdict": "可跳过", "score": 2}'


class Rating(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: str
    score: int = Field(ge=0, le=10)


MakeLLM = Callable[..., LLM]
MakeSource = Callable[..., GitHubSource]


def responder(body: dict[str, Any]) -> str:
    """Digests scored by PR number (#106 -> 6.0); a weekly narrative citing #101 and #999 and
    stating a PR count no fact holds."""
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    text = prompt_text(body)
    if name == "DigestContent":
        found = re.search(r"PR #(\d+)", text)
        assert found, text
        number = int(found.group(1))
        content = json.loads(default_responder(body))
        content.update(title=f"第 {number} 号改动", importance=float(number % 10), related_prs=[])
        return json.dumps(content, ensure_ascii=False)
    if name == "WeeklyNarrative":
        narrative = json.loads(default_responder(body))
        narrative["highlights"] = [
            "#101 修复温度为零，另见 #999。",
            "本周合入 6 个 PR。",
            "共 42 个 PR",
        ]
        narrative["trends"] = [{"theme": "rollout", "prs": [101, 999], "judgement": "升温"}]
        narrative["key_prs"] = [
            {"number": 106, "topic": "重命名", "note": "配置项改名"},
            {"number": 999, "topic": "不存在", "note": "不在本周"},
        ]
        return json.dumps(narrative, ensure_ascii=False)
    return default_responder(body)


def part_notes(part: int) -> dict[str, Any]:
    """Notes a strong model writes for one part: long, several risks, all within the limits."""
    return {
        "summary": f"第{part}段笔记开头。"
        + "这一段重写了调度器的批处理逻辑，并补上边界检查。" * 6
        + f"第{part}段笔记结尾。",
        "key_files": [f"pkg/mod{part}/sub0/file_{part}.py"],
        "identifiers": [f"Scheduler{part}.flush_batch", f"retry_limit_{part}"],
        "risks": [
            f"第{part}段风险{i}：批大小为零时调度器会空转，重试上限未做校验会反复提交。"
            for i in range(4)
        ],
    }


# Digests, reports and how their Markdown reads

# GitHub's dialect as far as markdown-it reads it: CommonMark with tables and strikethrough.
MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# A model reply that tries to leave its field: a table, a heading, a list, a quote, raw HTML.
INJECT = "标题\n\n| a | b |\n|---|---|\n# 标题\n- 列表\u2028> 引用\u2029<b>粗</b>\r\n1. 一"
INJECTED = parts.one_line(INJECT)
# Invisible controls that reorder or hide text (Trojan Source).
HIDDEN = "\u202e\u202a\u2066\u2067\u2068\u2069\u200b\u200c\u200d\u200e\u200f\ufeff\u061c"
SPOOFED = f"修复 {HIDDEN}gnp.exe 的加载"


def check_golden(name: str, text: str) -> None:
    """`text` is the golden file `name` (PRHUB_UPDATE_GOLDEN=1 rewrites it)."""
    path = GOLDEN / name
    if os.environ.get("PRHUB_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def unlinked(text: str) -> str:
    """Markdown with its PR links as the text they show: [#12](url) reads #12."""
    return re.sub(r"\[(#\d+)\]\([^)\s]*\)", r"\1", text)


def digest(**content: Any) -> PRDigest:
    """The fixture digest of #101, its content changed by `content`."""
    d = PRDigest.model_validate_json((FIXTURES / "digests" / "101.json").read_text())
    return d.model_copy(update={"content": d.content.model_copy(update=content)})


def numbered(number: int, merged: datetime | None = None, **content: Any) -> PRDigest:
    """The fixture digest as acme/rocket's PR `number`, with its own URL and key, merged at
    `merged` (else when the fixture's was), its content changed by `content`."""
    d = digest(**content)
    return d.model_copy(
        update={
            "number": number,
            "url": f"https://github.com/acme/rocket/pull/{number}",
            "merged_at": merged or d.merged_at,
            "meta": d.meta.model_copy(update={"cache_key": f"acme/rocket#{number}"}),
        }
    )


def report() -> WeeklyReport:
    """The fixture report of acme/rocket, 2026 week 31."""
    path = FIXTURES / "reports" / "acme-rocket-2026-W31.json"
    return WeeklyReport.model_validate_json(path.read_text())


def plain(token: Token, ticks: bool = True) -> str:
    """An inline token's text as a reader sees it; code spans keep their backticks if `ticks`."""
    out = []
    for child in token.children or []:
        if child.type == "code_inline":
            out.append(f"{child.markup}{child.content}{child.markup}" if ticks else child.content)
        elif child.type in ("text", "softbreak"):
            out.append(child.content or " ")
    return "".join(out)


def shape(text: str) -> Counter[str]:
    """How many of each block a document holds."""
    return Counter(t.type for t in MARKDOWN.parse(text) if t.nesting == 1 or t.type == "html_block")


def injected_digest(text: str, advice: str) -> PRDigest:
    """The fixture digest with `text` in every field the model writes, and `advice`."""
    d = digest()
    c = d.content
    content = c.model_copy(
        update={
            "title": text,
            "importance_reason": text,
            "advice": advice,
            "design_decisions": [text, *c.design_decisions],
            "risks": [text],
            "follow_ups": [text],
        }
    )
    return d.model_copy(update={"content": content, "original_title": text})


def hostile_narrative_report() -> WeeklyReport:
    """The fixture report with INJECT in every text the model writes, a label and a title."""
    r = report()
    assert r.narrative is not None
    n = r.narrative
    key_prs = [n.key_prs[0].model_copy(update={"topic": INJECT, "note": INJECT}), *n.key_prs[1:]]
    trends = [n.trends[0].model_copy(update={"theme": INJECT, "judgement": INJECT})]
    narrative = n.model_copy(
        update={
            "lead": INJECT,
            "summary": INJECT,
            "highlights": [INJECT, *n.highlights[1:]],
            "risks": [n.risks[0].model_copy(update={"text": INJECT}), *n.risks[1:]],
            "key_changes": [INJECT, *n.key_changes[1:]],
            "follow_ups": [INJECT, *n.follow_ups[1:]],
            "trends": [*trends, *n.trends[1:]],
            "key_prs": key_prs,
        }
    )
    digests = [
        r.digests[0].model_copy(
            update={
                "labels": [INJECT],
                "content": r.digests[0].content.model_copy(update={"title": INJECT}),
            }
        ),
        *r.digests[1:],
    ]
    return r.model_copy(update={"narrative": narrative, "digests": digests})


def sparse_report() -> WeeklyReport:
    """A week whose model found no trend and no key change, two authors tied, no time known."""
    r = report()
    assert r.narrative is not None
    narrative = r.narrative.model_copy(update={"lead": "", "trends": [], "key_changes": []})
    tie = [
        AuthorCount(author="marta-kowal", prs=[102, 106]),
        AuthorCount(author="lin-yue", prs=[101, 103]),
        *r.facts.authors[2:],
    ]
    facts = r.facts.model_copy(update={"authors": tie, "key_prs": [101, 102, 103, 106]})
    meta = r.meta.model_copy(update={"generated_at": None})
    return r.model_copy(update={"narrative": narrative, "facts": facts, "meta": meta})


def revert_report() -> WeeklyReport:
    """A week where #104 reverted #103 a day after it merged."""
    r = report()
    rev = Revert(number=104, reverted=103, delay_hours=24.0)
    return r.model_copy(update={"facts": r.facts.model_copy(update={"reverts": [rev]})})


def no_narrative_report() -> WeeklyReport:
    r = report()
    meta = r.meta.model_copy(update={"dropped_citations": 2})
    failed = [FailedPR(number=107, error="超时 `read`")]
    return r.model_copy(update={"narrative": None, "failed": failed, "meta": meta})


def unchecked_report() -> WeeklyReport:
    """The fixture week where the digest of #102, its most important PR, failed two checks."""
    r = report()
    failed = ["docs_overrated", "advice_uncited"]
    digests = [
        d.model_copy(update={"meta": d.meta.model_copy(update={"failed_checks": failed})})
        if d.number == 102
        else d
        for d in r.digests
    ]
    return r.model_copy(update={"digests": digests})


def empty_report() -> WeeklyReport:
    r = report()
    facts = r.facts.model_copy(update={"prs": [], "pr_count": 0, "key_prs": []})
    return r.model_copy(update={"facts": facts, "narrative": None, "digests": []})


def week_of(
    config: Settings,
    *,
    narrate: bool = True,
    source: GitHubSource | None = None,
    llm: LLM | None = None,
    store: Any = None,
    progress: Callable[[str, int, int], None] | None = None,
    **when: Any,
) -> Any:
    """A week's report (or what it waits for) as a run makes it, in process: the use case
    without its publishing, on the clients given or the run's own."""
    from prhub.run import week
    from prhub.run.run import Run, window

    w = window(config, **when)
    command = "weekly" if narrate else "labels"
    with Run(config, command, source=source, llm=llm, store=store, progress=progress) as run:
        return week.weekly(run, w, narrate_week=narrate)


def digest_of(
    number: int,
    config: Settings,
    *,
    source: GitHubSource | None = None,
    llm: LLM | None = None,
    store: Any = None,
) -> Any:
    """One PR's digest (or what it waits for) as a run makes it, in process."""
    from prhub.run import week
    from prhub.run.run import Run

    with Run(config, "summarize", source=source, llm=llm, store=store) as run:
        return week.summarize(run, number)


def site_store(path: Path) -> Path:
    """A store for a site: acme/rocket's week 31 in Asia/Shanghai and in UTC, a window of
    dates, an empty later week 32, and #120, a digest that failed its checks with no body."""
    from datetime import timedelta

    from prhub.store.store import Store

    r = report()
    f = r.facts
    utc = r.model_copy(
        update={
            "facts": f.model_copy(
                update={
                    "tz": "UTC",
                    "start": f.start + timedelta(hours=8),
                    "end": f.end + timedelta(hours=8),
                }
            )
        }
    )
    window = r.model_copy(
        update={
            "facts": f.model_copy(
                update={"week": None, "start": f.start + timedelta(days=2), "end": f.end}
            )
        }
    )
    empty = empty_report()
    later = {"week": 32, "start": f.start + timedelta(days=7), "end": f.end + timedelta(days=7)}
    empty = empty.model_copy(update={"facts": empty.facts.model_copy(update=later)})
    d = digest()
    bare = d.model_copy(
        update={
            "number": 120,
            "url": "https://github.com/acme/rocket/pull/120",
            "content": d.content.model_copy(
                update={
                    "advice": "",
                    "design_decisions": [],
                    "risks": [],
                    "follow_ups": [],
                    "importance": 2.3,
                    "importance_reason": "",
                }
            ),
            "meta": d.meta.model_copy(
                update={"failed_checks": ["advice_uncited"], "cache_key": "bare-120"}
            ),
        }
    )
    store = Store(path)
    try:
        for made in (r, utc, window, empty):
            store.save_report(made)
        store.save_digest(bare)
    finally:
        store.close()
    return path


# A built site's links


class Links(HTMLParser):
    """A page's links and the ids it holds."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(found["id"] or "")
        for name in ("href", "src"):
            if found.get(name) is not None:
                self.hrefs.append(found[name] or "")


def crawl(site: Path) -> dict[Path, list[str]]:
    """Every page reachable from the home page, with the internal links it has that resolve
    to nothing: no file, or no element of the anchor's id (a script's #q=… state aside)."""
    seen: dict[Path, list[str]] = {}
    parsed: dict[Path, Links] = {}

    def links_of(page: Path) -> Links:
        if page not in parsed:
            parsed[page] = Links(page.read_text(encoding="utf-8"))
        return parsed[page]

    todo = [site / "index.html"]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        seen[page] = []
        for href in links_of(page).hrefs:
            parts = urlsplit(href)
            if parts.scheme in ("http", "https"):
                continue
            assert not parts.scheme and not parts.netloc and not href.startswith("/"), href
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if site.resolve() not in [target, *target.parents] or not target.is_file():
                seen[page].append(href)
            elif target.suffix == ".html":
                anchor = unquote(parts.fragment)
                if anchor and "=" not in anchor and anchor not in links_of(target).ids:
                    seen[page].append(href)
                todo.append(target)
    return seen


# Published sites


def site_manifest(site: Path) -> dict[str, Any]:
    """The site's manifest.json: the one `prhub site` wrote, else one written here by its
    contract (format 1: each report's and digest's JSON with its kind, repository and SHA-256,
    paths relative to the site's root) for a site built before prhub wrote it."""
    import hashlib

    from prhub import __version__

    path = site / "manifest.json"
    if path.is_file():
        return dict(json.loads(path.read_bytes()))
    files = []
    for found in sorted(site.glob("*/*/*.json")) + sorted(site.glob("*/*/pr/*.json")):
        relative = found.relative_to(site).as_posix()
        owner, name = relative.split("/")[:2]
        files.append(
            {
                "path": relative,
                "kind": "digest" if "/pr/" in relative else "report",
                "repo": f"{owner}/{name}",
                "sha256": hashlib.sha256(found.read_bytes()).hexdigest(),
            }
        )
    manifest = {
        "format": 1,
        "generator": f"prhub {__version__}",
        "reports": sum(f["kind"] == "report" for f in files),
        "digests": sum(f["kind"] == "digest" for f in files),
        "files": files,
    }
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def digest_content(**fields: Any) -> Any:
    """A digest's content as a model writes it, its fields changed by `fields`."""
    from prhub.model import DigestContent

    values: dict[str, Any] = {
        "title": "改进 a 模块",
        "verdict": "精读",
        "minutes": 5,
        "advice": "",
        "importance": 5,
        "importance_reason": "局部改动。",
    }
    return DigestContent(**{**values, **fields})
