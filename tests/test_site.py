"""`prhub site`: a static site from a store of the corpus weeks 31 and 32 of verl, made through
the real pipeline on the stand-ins: links that resolve, pages that fit a phone and a desktop, a
search that finds Chinese words, a valid feed, the same bytes on a rebuild, and a store that
`prhub import` rebuilds from it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from zoneinfo import ZoneInfo

import pytest

from prhub.model import VERDICTS, PRDigest
from prhub.weekly.report import WeeklyReport
from tests.factories import GITHUB_TOKEN, OPENAI_KEY, ROOT, assert_fails, assert_ok, cli_env, prhub
from tests.standins import GitHubStandIn, LLMStandIn
from tests.standins.llm import default_responder, prompt_text

REPO = "verl-project/verl"
WEEKS = (31, 32)
# Each digest's title names one of these, so a search for one finds a known set of PRs.
TOPICS = ("采样", "调度", "检查点", "显存", "通信", "奖励", "日志")
TZ = ZoneInfo("Asia/Shanghai")


def topic(number: int) -> str:
    return TOPICS[number % len(TOPICS)]


def corpus() -> Path:
    path = ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        pytest.skip(f"shared corpus not found at {path}")
    return path


def week_prs(week: int) -> list[int]:
    """The corpus PRs merged in ISO week `week` of 2026, in Asia/Shanghai."""
    found = []
    for path in (corpus() / REPO / "pulls").glob("*.json"):
        if path.name.endswith(".files.json"):
            continue
        merged = datetime.fromisoformat(json.loads(path.read_text())["merged_at"])
        if merged.astimezone(TZ).isocalendar()[:2] == (2026, week):
            found.append(int(path.stem))
    return sorted(found)


def responder(failing: int):
    """Digests titled after their topic, every eleventh one too long (a failed check the
    digest keeps); `failing` never gets valid JSON, so its week is partial."""

    def answer(body: dict[str, Any]) -> str:
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if schema != "DigestContent":
            return default_responder(body)
        number = int(re.search(r"PR #(\d+)", prompt_text(body)).group(1))  # type: ignore[union-attr]
        if number == failing:
            return "这不是 JSON"
        content = json.loads(default_responder(body))
        title = f"{topic(number)}路径的第 {number} 号改动"
        if number % 11 == 0:
            title += "，同时整理了与之相关的配置说明、示例脚本和全部测试用例以及文档"
        verdict = VERDICTS[number % len(VERDICTS)]
        content.update(title=title, verdict=verdict, importance=float(number % 10), related_prs=[])
        return json.dumps(content, ensure_ascii=False)

    return answer


@dataclass
class Corpus:
    """A store holding weeks 31 and 32, and the environment that made it."""

    env: dict[str, str | None]
    store: Path
    failing: int
    llm: LLMStandIn

    def run(self, *args: str, **extra: str | None) -> Any:
        return prhub({**self.env, **extra}, *args)

    def reports(self) -> list[WeeklyReport]:
        from contextlib import closing

        from prhub.store.store import Store

        with closing(Store(self.store)) as s:
            return s.reports(REPO)

    def digests(self) -> list[PRDigest]:
        from contextlib import closing

        from prhub.store.store import Store

        with closing(Store(self.store)) as s:
            return s.digests(REPO)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    root = tmp_path_factory.mktemp("corpus")
    failing = week_prs(32)[-1]
    with (
        GitHubStandIn(corpus(), token=GITHUB_TOKEN) as github,
        LLMStandIn(api_key=OPENAI_KEY, responder=responder(failing)) as llm,
    ):
        env = cli_env(
            github, llm, root / "store.db", PRHUB_REPO=REPO, PRHUB_CACHE_DIR=str(root / "cache")
        )
        made = Corpus(env, root / "store.db", failing, llm)
        for week in WEEKS:
            out = str(root / f"W{week}.json")
            result = made.run("weekly", "--year", "2026", "--week", str(week), "--out", out, "-q")
            assert result.exit_code == (12 if week == 32 else 0), result.stderr
        yield made


def build(made: Corpus, out: Path, *args: str, **extra: str | None) -> Any:
    result = made.run("site", str(out), *args, **extra)
    assert_ok(result)
    return result


@pytest.fixture(scope="module")
def site(made: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site of the corpus store, with PDFs when Chromium is there."""
    out = tmp_path_factory.mktemp("site") / "site"
    build(made, out)
    return out


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
    to nothing."""
    seen: dict[Path, list[str]] = {}
    todo = [site / "index.html"]
    while todo:
        page = todo.pop()
        if page in seen:
            continue
        links = Links(page.read_text(encoding="utf-8"))
        seen[page] = []
        for href in links.hrefs:
            parts = urlsplit(href)
            if parts.scheme in ("http", "https"):
                continue
            assert not parts.scheme and not parts.netloc and not href.startswith("/"), href
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if site.resolve() not in [target, *target.parents] or not target.is_file():
                seen[page].append(href)
            elif target.suffix == ".html":
                todo.append(target)
    return seen


def test_every_internal_link_resolves_and_every_file_is_reached(site, made):
    pages = crawl(site)
    assert {p: bad for p, bad in pages.items() if bad} == {}
    reports, digests = made.reports(), made.digests()
    repo = site / REPO
    assert len(reports) == 2 and len(digests) == sum(map(len, map(week_prs, WEEKS))) - 1
    expected = {site / "index.html", site / "search.html", repo / "index.html", repo / "tags.html"}
    expected |= {repo / f"2026-W{w}.html" for w in WEEKS}
    expected |= {repo / "pr" / f"{d.number}.html" for d in digests}
    assert {p.relative_to(site.resolve()) for p in pages} == {
        p.relative_to(site) for p in expected
    }
    for week in WEEKS:
        for suffix in ("md", "json"):
            assert (repo / f"2026-W{week}.{suffix}").is_file()
