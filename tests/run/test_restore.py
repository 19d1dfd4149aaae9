"""`prhub import`: a store rebuilt from prhub's JSON serves a rerun without an LLM call, keeps
what is newer, and takes nothing it should not."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from prhub.config import Settings
from prhub.model import PRDigest, WeeklyReport
from prhub.prepare.redact import marker
from prhub.run.restore import import_dir
from prhub.store.store import Store, StoredNarrative
from tests.factories import (
    FIXTURES,
    GITHUB,
    GITHUB_TOKEN,
    OPENAI_KEY,
    assert_fails,
    assert_ok,
    cli_env,
    digest,
    prhub,
    report,
)
from tests.standins import GitHubStandIn, LLMStandIn

WEEKS = {31: [101, 102, 103, 104, 105, 106], 32: [107, 108, 109]}
SITE = Path("acme") / "rocket"  # where a site keeps a repository's pages


class Made:
    """Weeks 31 and 32 made on a first store: each week's Markdown, and the JSON a site holds
    (weeks/YEAR-WNN.json, pr/N.json) under `site`."""

    def __init__(self, env: dict[str, str | None], root: Path, make: bool = True) -> None:
        self.env, self.site, self.first = env, root / "site", root / "first"
        for week, numbers in WEEKS.items() if make else ():
            args = ["weekly", "--year", "2026", "--week", str(week), "--out"]
            assert_ok(prhub(env, *args, str(self.first / f"W{week}.md")))
            assert_ok(prhub(env, *args, str(self.site / SITE / "weeks" / f"2026-W{week}.json")))
            for n in numbers:
                out = str(self.site / SITE / "pr" / f"{n}.json")
                assert_ok(prhub(env, "summarize", "--pr", str(n), "--out", out))

    def folder(self, tmp_path: Path, *globs: str) -> Path:
        """A folder to import holding the site's files that match `globs`."""
        folder = tmp_path / "restore"
        for pattern in globs:
            for path in self.site.glob(pattern):
                target = folder / path.relative_to(self.site)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        return folder


@pytest.fixture(scope="module")
def made_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The weeks made once for the module, on stand-ins of its own."""
    root = tmp_path_factory.mktemp("made")
    with (
        GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN) as github,
        LLMStandIn(api_key=OPENAI_KEY) as llm,
    ):
        Made(cli_env(github, llm, root / "store.db", PRHUB_REPO="acme/rocket"), root)
    return root


@pytest.fixture
def made(env: dict[str, str | None], tmp_path: Path, made_once: Path) -> Made:
    """The weeks made, in this test's folder: their store is the one `env` names."""
    shutil.copytree(made_once, tmp_path, dirs_exist_ok=True)
    return Made(env, tmp_path, make=False)


@pytest.fixture
def new_env(env: dict[str, str | None], tmp_path: Path) -> dict[str, str | None]:
    """The environment of the same runs on a new, empty store."""
    return {**env, "PRHUB_STORE": str(tmp_path / "new.db")}


def rerun_week(new_env: dict[str, str | None], made: Made, week: int, llm: LLMStandIn) -> int:
    """Reruns `week` on the new store; the LLM calls it made, its Markdown checked to be the
    first run's byte for byte."""
    calls = len(llm.bodies)
    out = made.first.parent / "second" / f"W{week}.md"
    result = prhub(new_env, "weekly", "--year", "2026", "--week", str(week), "--out", str(out))
    assert_ok(result)
    assert out.read_bytes() == (made.first / f"W{week}.md").read_bytes()
    return len(llm.bodies) - calls


@pytest.mark.parametrize(
    ("globs", "says"),
    [
        (["*/*/weeks/*.json"], "imported 9 digests and 2 weeks"),
        (["*/*/weeks/*.json", "*/*/pr/10[1-4].json"], "imported 9 digests and 2 weeks"),
    ],
    ids=["weekly-only", "mixed"],
)
def test_a_store_rebuilt_from_json_reruns_without_a_call(made, new_env, llm, tmp_path, globs, says):
    folder = made.folder(tmp_path, *globs)
    result = prhub(new_env, "import", str(folder))
    assert_ok(result)
    assert result.stderr == f"prhub: {says} from {folder} (0 files refused)\n"
    for week in WEEKS:
        assert rerun_week(new_env, made, week, llm) == 0


def test_digests_alone_serve_summarize_and_leave_only_the_narrative_to_make(
    made, new_env, llm, tmp_path
):
    folder = made.folder(tmp_path, "*/*/pr/*.json")
    assert "imported 9 digests and 0 weeks" in prhub(new_env, "import", str(folder)).stderr
    calls = len(llm.bodies)
    for n in (101, 106):
        first, again = (prhub(e, "summarize", "--pr", str(n)) for e in (made.env, new_env))
        assert_ok(again)
        assert again.stdout == first.stdout and "0 LLM calls" in again.stderr
    assert len(llm.bodies) == calls
    week = prhub(new_env, "weekly", "--year", "2026", "--week", "31", "--out", "-", "-q")
    assert_ok(week)
    assert len(llm.bodies) == calls + 1  # the narrative, which no digest file holds


def test_a_weekly_report_names_its_narratives_key(made, store):
    data = json.loads((made.site / SITE / "weeks" / "2026-W31.json").read_text())
    key = data["meta"]["narrative_key"]
    with closing(Store(store)) as s:
        assert key and s.narrative(key) is not None


def test_a_report_without_its_narratives_key_is_restored_by_the_key_of_these_settings(
    made, new_env, llm, tmp_path
):
    folder = made.folder(tmp_path, "*/*/weeks/2026-W31.json")
    path = folder / SITE / "weeks" / "2026-W31.json"
    data = json.loads(path.read_text())
    data["meta"]["narrative_key"] = ""
    path.write_text(json.dumps(data, ensure_ascii=False))
    assert_ok(prhub(new_env, "import", str(folder)))
    assert rerun_week(new_env, made, 31, llm) == 0


def table(path: Path, name: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall()


def test_importing_twice_changes_nothing(made, new_env, tmp_path):
    folder = made.site
    assert "imported 9 digests and 2 weeks" in prhub(new_env, "import", str(folder)).stderr
    new = Path(str(new_env["PRHUB_STORE"]))
    before = {name: table(new, name) for name in ("digests", "narratives", "reports")}
    again = prhub(new_env, "import", str(folder))
    said = f"prhub: imported 0 digests and 0 weeks from {folder} (0 files refused)\n"
    assert again.stderr == said
    assert {name: table(new, name) for name in before} == before


def test_other_files_are_ignored_and_an_invalid_one_named_refused_and_kept_out(
    made, new_env, tmp_path
):
    folder = made.folder(tmp_path, "*/*/weeks/2026-W31.json", "*/*/pr/107.json")
    (folder / "search.json").write_text('{"index": ["标题"]}')  # a site's: no report, ignored
    (folder / "notes.json").write_text("not json at all")
    (folder / "feed.xml").write_text("<feed/>")  # not JSON by name: not even counted
    week = folder / SITE / "weeks" / "2026-W31.json"
    data = json.loads(week.read_text())
    del data["digests"][-1]["content"]["advice"]  # one embedded digest broken: none kept
    week.write_text(json.dumps(data, ensure_ascii=False))
    pr = json.loads((folder / SITE / "pr" / "107.json").read_text())
    pr["meta"]["cache_key"] = ""
    (folder / SITE / "pr" / "108.json").write_text(json.dumps(pr))
    result = prhub(new_env, "import", str(folder))
    assert result.exit_code == 20, result.stderr
    assert result.stderr.splitlines() == [
        f"prhub: refused {folder / SITE / 'pr' / '108.json'}: the digest of #107 has no "
        "meta.cache_key to be found by",
        f"prhub: refused {week}: not a valid weekly report: digests.5.content.advice: "
        "Field required (1 problem)",
        f"prhub: refused {folder / 'notes.json'}: cannot be read (not JSON)",
        f"prhub: imported 1 digest and 0 weeks from {folder} (3 files refused, 1 other JSON "
        "file ignored)",
        f"prhub: error: 3 files of {folder} refused (named above): the valid ones are "
        "imported; replace the refused ones with files prhub wrote, and import again",
    ]


def settings_on(tmp_path: Path) -> Settings:
    return Settings(store=tmp_path / "store.db")


def one(tmp_path: Path, name: str, item: PRDigest | WeeklyReport) -> Path:
    """A folder holding `item` as prhub writes it, as `name`."""
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(item.model_dump_json(indent=2))
    return folder


def made_at(d: PRDigest, when: datetime) -> PRDigest:
    return d.model_copy(update={"meta": d.meta.model_copy(update={"created_at": when})})


def test_a_newer_digest_wins_whichever_side_it_is_on(tmp_path):
    settings = settings_on(tmp_path)
    old, new = digest(title="旧的标题"), digest(title="新的标题")
    new = made_at(new, old.meta.created_at + timedelta(hours=1))
    key = old.meta.cache_key
    with closing(Store(settings.store)) as s:
        s.save_digest(new)
    assert import_dir(one(tmp_path, "101.json", old), settings).digests == 0
    with closing(Store(settings.store)) as s:
        assert (found := s.digest(key)) and found.content.title == "新的标题"
        s.save_digest(old)
    assert import_dir(one(tmp_path, "101.json", new), settings).digests == 1
    with closing(Store(settings.store)) as s:
        assert (found := s.digest(key)) and found.content.title == "新的标题"


def test_of_two_files_of_one_digest_the_newer_is_kept(tmp_path):
    settings = settings_on(tmp_path)
    old = digest(title="旧的标题")
    new = made_at(digest(title="新的标题"), old.meta.created_at + timedelta(minutes=5))
    one(tmp_path, "a.json", new)
    assert import_dir(one(tmp_path, "b.json", old), settings).digests == 1
    with closing(Store(settings.store)) as s:
        assert (found := s.digest(old.meta.cache_key)) and found.content.title == "新的标题"


def week_made(r: WeeklyReport, when: datetime, lead: str) -> WeeklyReport:
    assert r.narrative is not None
    narrative = r.narrative.model_copy(update={"lead": lead})
    meta = r.meta.model_copy(update={"generated_at": when, "narrative_key": "k31"})
    return r.model_copy(update={"narrative": narrative, "meta": meta})


def test_a_newer_week_wins_and_its_narrative_keeps_its_time_and_cost(tmp_path):
    settings = settings_on(tmp_path)
    base = report()
    when = datetime(2026, 8, 3, 1, 0, tzinfo=UTC)
    old, new = week_made(base, when, "旧导语"), week_made(base, when + timedelta(days=1), "新导语")
    f = base.facts
    assert import_dir(one(tmp_path, "w.json", new), settings).weeks == 1
    assert import_dir(one(tmp_path, "w.json", old), settings).weeks == 0
    with closing(Store(settings.store)) as s:
        stored, narrative = s.report(f.repo, f.start, f.end), s.narrative("k31")
    assert stored is not None and stored.meta.generated_at == new.meta.generated_at
    spent = new.meta.usage - sum((d.meta.usage for d in new.digests), type(new.meta.usage)())
    assert narrative == StoredNarrative(
        new.narrative, new.meta.dropped_citations, spent, new.meta.generated_at
    )


def test_a_secret_in_a_file_is_replaced_by_its_marker_and_counted(tmp_path, caplog):
    settings = settings_on(tmp_path)
    leaked = digest(advice=f"先看 `rocket/rollout/sampler.py`，令牌 {GITHUB} 不要外传。")
    done = import_dir(one(tmp_path, "101.json", leaked), settings)
    assert done.redacted == 1
    assert done.summary().endswith("(0 files refused, 1 secret-shaped text redacted)")
    with closing(Store(settings.store)) as s:
        found = s.digest(leaked.meta.cache_key)
    assert found is not None and GITHUB not in found.model_dump_json()
    assert marker("github_token") in found.content.advice
    assert "1 secret replaced by markers (github_token)" in caplog.text


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: p / "file.json"])
def test_a_folder_that_is_not_there_is_a_config_error(env, tmp_path, make):
    (tmp_path / "file.json").write_text("{}")
    folder = make(tmp_path)
    assert_fails(prhub(env, "import", str(folder)), 3, str(folder))
    assert not (tmp_path / "store.db").exists()  # nothing to import: no store made
