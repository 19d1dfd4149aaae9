"""Tests of the deterministic weekly facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from prhub.errors import ConfigError
from prhub.model import (
    AuthorCount,
    BreakingChange,
    Coverage,
    DigestContent,
    DigestMeta,
    FileChange,
    HotPath,
    PRDigest,
    PullRequest,
    Revert,
    Usage,
    WeeklyFacts,
)
from prhub.weekly.analyse import last_complete_week, week_window, weekly_facts, window

REPO = "verl-project/verl"
SHANGHAI = ZoneInfo("Asia/Shanghai")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def pr(
    number: int,
    title: str = "chore: tidy",
    *,
    author: str = "alice",
    merged: str = "2026-08-04T10:00:00Z",
    files: list[FileChange] | None = None,
    **fields: object,
) -> PullRequest:
    return PullRequest.model_validate(
        {
            "repo": REPO,
            "number": number,
            "title": title,
            "author": author,
            "created_at": at("2026-08-01T00:00:00Z"),
            "merged_at": at(merged),
            "merged": True,
            "files": files or [],
            **fields,
        }
    )


def fc(path: str, patch: str | None = None, status: str = "modified") -> FileChange:
    return FileChange(path=path, status=status, patch=patch)


def digest(number: int, importance: float) -> PRDigest:
    content = DigestContent(
        title="标题",
        verdict="快速浏览",
        minutes=5,
        advice="读 main.py",
        design_decisions=[],
        risks=[],
        follow_ups=[],
        importance=importance,
        importance_reason="理由",
        related_prs=[],
    )
    meta = DigestMeta(
        prompt="digest@v1",
        model="fake",
        usage=Usage(),
        coverage=Coverage(),
        created_at=at("2026-08-10T00:00:00Z"),
    )
    return PRDigest(
        repo=REPO,
        number=number,
        url=f"https://github.com/{REPO}/pull/{number}",
        original_title="t",
        author="alice",
        merged_at=None,
        content=content,
        meta=meta,
    )


def facts(prs: list[PullRequest], digests: dict[int, PRDigest] | None = None) -> WeeklyFacts:
    start, end = week_window(2026, 32, "Asia/Shanghai")
    return weekly_facts(
        prs,
        digests or {},
        repo=REPO,
        start=start,
        end=end,
        tz="Asia/Shanghai",
        year=2026,
        week=32,
    )


# Week windows


@pytest.mark.parametrize(
    ("year", "week", "monday"),
    [
        (2026, 1, datetime(2025, 12, 29)),
        (2026, 31, datetime(2026, 7, 27)),
        (2026, 32, datetime(2026, 8, 3)),
        (2026, 53, datetime(2026, 12, 28)),  # 2026 ends on a Thursday, so it has 53 weeks
        (2027, 52, datetime(2027, 12, 27)),
    ],
)
def test_week_window_runs_monday_to_monday(year: int, week: int, monday: datetime) -> None:
    start, end = week_window(year, week, "Asia/Shanghai")
    assert start == monday.replace(tzinfo=SHANGHAI)
    assert end == (monday + timedelta(days=7)).replace(tzinfo=SHANGHAI)


@pytest.mark.parametrize(
    ("year", "week", "tz", "words"),
    [
        (2026, 0, "UTC", "week 0 does not exist in 2026"),
        (2027, 53, "UTC", "week 53 does not exist in 2027: its ISO weeks run 1 to 52"),
        (2026, 54, "UTC", "week 54 does not exist in 2026: its ISO weeks run 1 to 53"),
        (2026, 1, "Mars/Olympus", "unknown timezone 'Mars/Olympus'"),
    ],
)
def test_week_window_rejects_bad_input(year: int, week: int, tz: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        week_window(year, week, tz)


def test_week_depends_on_timezone() -> None:
    merged = at("2026-08-02T16:30:00Z")  # Monday 00:30 in Shanghai, still Sunday in UTC
    start, end = week_window(2026, 32, "Asia/Shanghai")
    assert start <= merged < end
    start, end = week_window(2026, 31, "UTC")
    assert start <= merged < end
    assert merged >= week_window(2026, 31, "Asia/Shanghai")[1]


def test_week_window_across_dst_keeps_midnight() -> None:
    zone = ZoneInfo("America/New_York")
    start, end = week_window(2026, 10, "America/New_York")  # clocks go forward on 8 March
    assert (start.isoformat(), end.isoformat()) == (
        "2026-03-02T00:00:00-05:00",
        "2026-03-09T00:00:00-04:00",
    )
    assert end.astimezone(zone).hour == 0
    assert end.timestamp() - start.timestamp() == (7 * 24 - 1) * 3600


@pytest.mark.parametrize(
    ("now", "tz", "expected"),
    [
        ("2026-08-03T00:00:00Z", "Asia/Shanghai", (2026, 31)),  # Monday 08:00 in Shanghai
        ("2026-08-02T17:00:00Z", "Asia/Shanghai", (2026, 31)),  # Monday 01:00 in Shanghai
        ("2026-08-02T17:00:00Z", "UTC", (2026, 30)),  # Sunday in UTC: week 31 is not over
        ("2026-08-09T12:00:00Z", "Asia/Shanghai", (2026, 31)),  # Sunday evening
        ("2026-01-04T12:00:00Z", "UTC", (2025, 52)),  # Sunday of 2026 W1
        ("2026-01-05T12:00:00Z", "UTC", (2026, 1)),
    ],
)
def test_last_complete_week(now: str, tz: str, expected: tuple[int, int]) -> None:
    assert last_complete_week(at(now), tz) == expected


def test_last_complete_week_needs_aware_now() -> None:
    with pytest.raises(ValueError):
        last_complete_week(datetime(2026, 8, 3), "UTC")


NOW = at("2026-11-30T09:00:00Z")  # Monday of 2026-W49


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"year": 2026, "week": 0}, "week 0 does not exist in 2026"),
        ({"year": 2026, "week": 54}, "week 54 does not exist in 2026"),
        ({"year": 2026, "week": 50}, r"week 50 of 2026 has not started yet \(UTC\)"),
        ({"year": 2099, "week": 50}, "has not started"),
        ({"year": 2026}, "--year needs --week"),
        ({"since": "2026-13-01"}, "--since '2026-13-01' is not a date"),
        ({"since": "2026-02-30"}, "--since '2026-02-30' is not a date"),
        ({"since": "2026-08-01", "until": "soon"}, "--until 'soon' is not a date"),
        ({"until": "2026-08-01"}, "--until needs --since too"),
        ({"since": "2026-08-02", "until": "2026-08-01"}, "must come after --since"),
        ({"week": 3, "since": "2026-08-01"}, "give either --week or --since/--until"),
    ],
)
def test_window_rejects_bad_weeks_and_dates(kwargs: dict, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        window("UTC", now=NOW, **kwargs)


def test_window_rejects_unknown_timezone() -> None:
    with pytest.raises(ConfigError, match="unknown timezone 'Mars/Olympus'"):
        window("Mars/Olympus", year=2026, week=31, now=NOW)


def test_window_defaults_to_the_last_complete_week() -> None:
    start, end, year, week = window("UTC", now=NOW)
    assert (year, week) == (2026, 48)
    assert (start, end) == (at("2026-11-23T00:00:00Z"), at("2026-11-30T00:00:00Z"))


def test_window_of_a_week_defaults_to_the_iso_year_of_now() -> None:
    # 2 January 2027 is a Saturday of 2026-W53.
    start, _, year, week = window("UTC", week=53, now=at("2027-01-02T12:00:00Z"))
    assert (year, week) == (2026, 53) and start == at("2026-12-28T00:00:00Z")
    assert window("UTC", year=2026, week=49, now=NOW)[:2] == week_window(2026, 49, "UTC")


def test_window_of_the_current_week_is_allowed() -> None:
    start, end, _, _ = window("Asia/Shanghai", year=2026, week=49, now=NOW)
    assert start <= NOW < end


def test_window_of_dates_covers_whole_local_days() -> None:
    start, end, year, week = window(
        "Asia/Shanghai", since="2026-07-27", until="2026-08-02", now=NOW
    )
    assert (start, end) == (
        datetime(2026, 7, 27, tzinfo=SHANGHAI),
        datetime(2026, 8, 3, tzinfo=SHANGHAI),
    )
    assert (year, week) == (2026, None)


def test_window_of_times_reads_naive_as_local_and_runs_to_now() -> None:
    start, end, _, week = window("Asia/Shanghai", since="2026-11-29T08:30", now=NOW)
    assert start == datetime(2026, 11, 29, 8, 30, tzinfo=SHANGHAI)
    assert end == NOW and week is None
    start, end, _, _ = window(
        "Asia/Shanghai", since="2026-11-29T00:00:00+00:00", until="2026-11-29T12:00Z", now=NOW
    )
    assert (start, end) == (at("2026-11-29T00:00:00Z"), at("2026-11-29T12:00:00Z"))


def test_window_year_of_dates_is_the_local_year_of_the_start() -> None:
    _, _, year, week = window("Asia/Shanghai", since="2025-12-31T20:00:00Z", now=NOW)
    assert (year, week) == (2026, None)  # 04:00 on 1 January in Shanghai


# The facts of one week


def week() -> list[PullRequest]:
    return [
        pr(
            105,
            'Revert "[trainer] feat: add Y (#102)"',
            merged="2026-08-05T13:30:00Z",
            files=[fc("verl/trainer/main.py"), fc("verl/trainer/util.py")],
            additions=1,
            deletions=20,
        ),
        pr(
            101,
            "[trainer, rollout] fix: handle X",
            labels=["NPU"],
            files=[fc("verl/trainer/main.py"), fc("verl/rollout/b.py"), fc("tests/test_main.py")],
            additions=10,
            deletions=2,
        ),
        pr(
            102,
            "[trainer] feat: add Y",
            author="bob",
            labels=["npu", "hardware"],
            files=[fc("verl/trainer/main.py"), fc("verl/trainer/util.py", status="added")],
            additions=20,
        ),
        pr(103, "docs: update README", files=[fc("README.md"), fc("docs/index.md")], additions=3),
        pr(
            104,
            "[rollout] perf: speed up",
            author="carol",
            author_association="FIRST_TIME_CONTRIBUTOR",
            files=[fc("verl/rollout/a.py"), fc("verl/trainer/util.py"), fc("setup.py")],
            additions=5,
            deletions=1,
        ),
    ]


def test_weekly_facts_counts() -> None:
    result = facts(week(), {101: digest(101, 7.5), 102: digest(102, 9.0), 104: digest(104, 7.5)})
    assert result.prs == [101, 102, 103, 104, 105]
    assert (result.pr_count, result.additions, result.deletions) == (5, 39, 23)
    assert list(result.tags.items()) == [
        ("npu", 2),
        ("rollout", 2),
        ("trainer", 2),
        ("bugfix", 1),
        ("docs", 1),
        ("feature", 1),
        ("hardware", 1),
        ("perf", 1),
        ("revert", 1),
    ]
    assert list(result.modules.items()) == [("rollout", 2), ("trainer", 2)]
    assert list(result.kinds.items()) == [
        ("bugfix", 1),
        ("docs", 1),
        ("feature", 1),
        ("perf", 1),
        ("revert", 1),
    ]
    assert result.hot_files == [
        HotPath(path="verl/trainer/main.py", prs=[101, 102, 105]),
        HotPath(path="verl/trainer/util.py", prs=[102, 104, 105]),
    ]
    # README.md and setup.py are both at the root, which is not a hot directory.
    assert result.hot_dirs == [
        HotPath(path="verl/trainer", prs=[101, 102, 104, 105]),
        HotPath(path="verl/rollout", prs=[101, 104]),
    ]
    assert result.authors == [
        AuthorCount(author="alice", prs=[101, 103, 105]),
        AuthorCount(author="bob", prs=[102]),
        AuthorCount(author="carol", prs=[104]),
    ]
    assert result.top_author_share == 0.6
    assert result.reverts == [Revert(number=105, reverted=102, delay_hours=27.5)]
    assert result.untested == [102, 104, 105]
    assert result.breaking == []
    assert result.first_time == [AuthorCount(author="carol", prs=[104])]
    assert result.mean_importance == 8.0
    assert result.key_prs == [102, 101, 104]
    assert (result.repo, result.year, result.week, result.tz) == (REPO, 2026, 32, "Asia/Shanghai")
    assert result.start == datetime(2026, 8, 3, tzinfo=SHANGHAI)


def test_key_prs_are_capped_and_mean_is_rounded() -> None:
    digests = {1: digest(1, 6.0), 2: digest(2, 7.0), 3: digest(3, 7.0), 99: digest(99, 10.0)}
    result = weekly_facts(
        [pr(1), pr(2), pr(3), pr(4)],
        digests,
        repo=REPO,
        start=at("2026-08-03T00:00:00Z"),
        end=at("2026-08-10T00:00:00Z"),
        tz="UTC",
        year=2026,
        week=None,
        key_count=2,
    )
    assert result.key_prs == [2, 3]  # a digest of a PR outside the input is ignored
    assert result.mean_importance == 6.67
    assert result.week is None


def test_tags_count_each_pr_once_and_skip_unknown_types() -> None:
    result = facts(
        [
            pr(1, "[npu] fix: a", labels=["NPU", "npu", "bug"]),
            pr(2, "vLLM: bump to 0.9", labels=["Dependencies"]),
        ]
    )
    assert result.tags == {"bugfix": 1, "dependencies": 1, "npu": 1}  # label "bug" folds in
    assert result.kinds == {"bugfix": 1}


def test_hot_paths_need_two_prs_and_stop_at_ten() -> None:
    prs = [pr(n, files=[fc(f"d{i}/f{i}.md") for i in range(12)]) for n in (1, 2)]
    prs.append(pr(3, files=[fc("d0/f0.md"), fc("d0/other.md")]))
    result = facts(prs)
    assert [h.path for h in result.hot_files] == ["d0/f0.md"] + [
        f"d{i}/f{i}.md" for i in (1, 10, 11, 2, 3, 4, 5, 6, 7)
    ]
    assert result.hot_files[0].prs == [1, 2, 3]
    assert len(result.hot_dirs) == 10


def test_lock_vendored_and_generated_files_are_never_hot() -> None:
    files = ["uv.lock", "vendor/x/y.go", "api/service_pb2.py", "conf/_generated_ppo.yaml", "a/b.py"]
    result = facts([pr(n, files=[fc(path) for path in files]) for n in (1, 2)])
    assert result.hot_files == [HotPath(path="a/b.py", prs=[1, 2])]
    assert result.hot_dirs == [HotPath(path="a", prs=[1, 2])]


def test_files_marked_or_headed_as_generated_are_never_hot_nor_untested() -> None:
    header = "@@ -0,0 +1,2 @@\n+# Code generated by gen.py. DO NOT EDIT.\n+X = 1"
    made = [
        FileChange(path="pkg/api.py", status="modified", marked="generated"),
        FileChange(path="pkg/ext.py", status="modified", marked="vendored"),
        FileChange(path="pkg/consts.py", status="added", patch=header),
    ]
    result = facts([pr(n, files=made) for n in (1, 2)])
    assert result.hot_files == [] and result.hot_dirs == []
    assert result.untested == []
    # A generated config losing a key is not a breaking change; its source is.
    removed = "@@ -1,3 +1,2 @@\n a: 1\n-b: 2\n c: 3"
    conf = FileChange(path="conf/all.yaml", status="modified", patch=removed, marked="generated")
    assert facts([pr(3, files=[conf])]).breaking == []
    assert facts([pr(3, files=[conf.model_copy(update={"marked": None})])]).breaking != []


def test_renamed_file_counts_under_new_path() -> None:
    moved = FileChange(path="pkg/new.py", previous_path="pkg/old.py", status="renamed")
    result = facts([pr(1, files=[moved]), pr(2, files=[fc("pkg/old.py")])])
    assert result.hot_files == []
    assert result.hot_dirs == [HotPath(path="pkg", prs=[1, 2])]


@pytest.mark.parametrize(
    ("files", "untested"),
    [
        (["src/a.py"], True),
        (["src/a.cu", "README.md"], True),
        (["scripts/run.sh"], True),
        (["src/a.py", "tests/unit/test_a.py"], False),
        (["src/a.py", "pkg/test/fixture.json"], False),
        (["src/a.py", "src/test_a.py"], False),
        (["src/a.go", "src/a_test.go"], False),
        (["web/a.ts", "web/a.test.ts"], False),
        (["src/a.py", "conftest.py"], False),
        (["src/app.py", "e2e/login.py"], False),
        (["src/app.py", "spec/models/user_spec.rb"], False),
        (["src/app.py", "testing/helpers.py"], False),
        (["src/a.py", "tests/fixtures/data.json"], False),
        (["api/service_pb2.py", "vendor/x/y.go", "web/app.min.js"], False),  # nothing written
        (["docs/conf.py"], False),
        (["tests/test_a.py"], False),  # only tests changed
        (["docs/a.md", "conf/x.yaml"], False),  # no code
        ([], False),
    ],
)
def test_untested(files: list[str], untested: bool) -> None:
    assert facts([pr(1, files=[fc(path) for path in files])]).untested == ([1] if untested else [])


def test_deleting_code_is_not_untested() -> None:
    assert facts([pr(1, files=[fc("src/a.py", status="removed")])]).untested == []


def test_first_time_contributors() -> None:
    result = facts(
        [
            pr(1, author="dan", author_association="FIRST_TIMER"),
            pr(2, author="dan", author_association="CONTRIBUTOR"),
            pr(3, author="eve", author_association="FIRST_TIME_CONTRIBUTOR"),
            pr(4, author="fay", author_association="MEMBER"),
        ]
    )
    assert result.first_time == [
        AuthorCount(author="dan", prs=[1, 2]),
        AuthorCount(author="eve", prs=[3]),
    ]


def test_empty_week() -> None:
    result = facts([])
    assert result.model_dump(exclude={"start", "end"}) == {
        "repo": REPO,
        "year": 2026,
        "week": 32,
        "tz": "Asia/Shanghai",
        "prs": [],
        "pr_count": 0,
        "additions": 0,
        "deletions": 0,
        "tags": {},
        "modules": {},
        "kinds": {},
        "hot_files": [],
        "hot_dirs": [],
        "authors": [],
        "top_author_share": 0.0,
        "reverts": [],
        "untested": [],
        "breaking": [],
        "first_time": [],
        "mean_importance": None,
        "key_prs": [],
        "last": None,  # the run gives the last period's stored report, where there is one
    }


# Reverts


def test_revert_named_in_quoted_title() -> None:
    prs = [
        pr(7106, "[megatron] fix: R2 router replay", merged="2026-08-03T02:00:00Z"),
        pr(
            7786, 'Revert "[megatron] fix: R2 router replay (#7106)"', merged="2026-08-04T03:06:00Z"
        ),
    ]
    assert facts(prs).reverts == [Revert(number=7786, reverted=7106, delay_hours=25.1)]


def test_revert_of_a_pr_outside_the_input() -> None:
    prs = [pr(8, "Revert 'feat: a (#3)' (#8)")]  # the revert's own number is outside the quotes
    assert facts(prs).reverts == [Revert(number=8, reverted=3)]


def test_revert_of_a_revert_names_the_inner_revert() -> None:
    prs = [pr(9, 'Revert "Revert "feat: a (#3)" (#5)"')]
    assert facts(prs).reverts == [Revert(number=9, reverted=5)]


@pytest.mark.parametrize(
    ("body", "reverted"),
    [
        ("Reverts #12", 12),
        ("This PR reverts #12 because it broke CI.", 12),
        ("Revert #12", 12),
        (f"Reverts {REPO}#12", 12),
        ("Reverts other/repo#12", None),
        ("Broke nightly.", None),
    ],
)
def test_revert_named_in_body(body: str, reverted: int | None) -> None:
    prs = [pr(12, merged="2026-08-03T00:00:00Z"), pr(20, 'Revert "feat: add Y"', body=body)]
    delay = 34.0 if reverted else None
    assert facts(prs).reverts == [Revert(number=20, reverted=reverted, delay_hours=delay)]


def test_revert_named_by_commit_sha() -> None:
    body = "Router replay broke THD packing.\n\nThis reverts commit ABCDEF1234.\n"
    prs = [
        pr(12, merged="2026-08-04T08:00:00Z", merge_commit_sha="abcdef1234567890"),
        pr(13, merge_commit_sha="0123456789abcdef"),
        pr(20, "Undo router replay", body=body, merged="2026-08-04T09:15:00Z"),
    ]
    assert facts(prs).reverts == [Revert(number=20, reverted=12, delay_hours=1.2)]


@pytest.mark.parametrize(
    "body",
    [
        "This reverts commit 9999999999.",  # no PR in the input merged as this commit
        "This reverts commit abcdef.",  # too short to trust
        "This reverts commit abcdef1.",  # ambiguous: two PRs share the prefix
    ],
)
def test_revert_with_unknown_commit(body: str) -> None:
    prs = [
        pr(12, merge_commit_sha="abcdef1234567890"),
        pr(13, merge_commit_sha="abcdef1999999999"),
        pr(20, "Undo a change", body=body),
    ]
    assert facts(prs).reverts == [Revert(number=20)]


@pytest.mark.parametrize(
    ("title", "body"),
    [
        ("fix: revert handling in rollout", ""),
        ("[trainer] refactor: loop", "Reverts #12 partially, by hand."),
        ("Reverted 'old' behaviour of X", ""),
    ],
)
def test_not_a_revert(title: str, body: str) -> None:
    assert facts([pr(12), pr(20, title, body=body)]).reverts == []


# Breaking changes


def breaks(*files: FileChange, title: str = "chore: tidy") -> list[str]:
    result = facts([pr(1, title, files=list(files))]).breaking
    return result[0].reasons if result else []


@pytest.mark.parametrize(
    ("title", "reason"),
    [
        ("[BREAKING] drop python 3.9", "标题标注 [BREAKING]"),
        ("[trainer][Breaking] fix: rename config", "标题标注 [BREAKING]"),
        ("feat!: drop the v0 trainer", "标题带破坏性变更标记"),
        ("refactor(rollout)!: new API", "标题带破坏性变更标记"),
        ("[trainer, breaking] refactor: loop", "标题带破坏性变更标记"),
    ],
)
def test_breaking_title(title: str, reason: str) -> None:
    assert breaks(title=title) == [reason]


def test_yaml_key_removed() -> None:
    patch = "@@ -1,5 +1,4 @@\n actor:\n   lr: 1e-3\n-  clip_ratio: 0.2\n   epochs: 2\n"
    assert breaks(fc("conf/ppo.yaml", patch)) == ["配置项删除：actor.clip_ratio（conf/ppo.yaml）"]


def test_yaml_keys_moved_to_a_config_group_of_the_same_pr_are_no_break() -> None:
    """Hydra's config groups: a block moved out of the trainer's file into
    `transfer_queue/transfer_queue.yaml`, its keys the same paths, breaks nothing; a key
    that went nowhere still does."""
    removed = (
        "@@ -1,6 +1,2 @@\n trainer:\n   epochs: 2\n-transfer_queue:\n-  enable: false\n"
        "-  metrics:\n-    port: 0\n-  lost_knob: 3\n"
    )
    group = "@@ -0,0 +1,3 @@\n+enable: false\n+metrics:\n+  port: 0\n"
    assert breaks(
        fc("conf/ppo.yaml", removed), fc("conf/transfer_queue/transfer_queue.yaml", group)
    ) == ["配置项删除：transfer_queue.lost_knob（conf/ppo.yaml）"]


def test_yaml_key_renamed() -> None:
    patch = (
        "@@ -1,4 +1,4 @@\n"
        " rollout:\n"
        "-  merge_non_assistant: true\n"
        "+  merge_context: true\n"
        "   n: 4\n"
    )
    assert breaks(fc("conf/ppo.yaml", patch)) == [
        "配置项改名：rollout.merge_non_assistant → rollout.merge_context（conf/ppo.yaml）"
    ]


def test_yaml_key_without_visible_parent_is_named_alone() -> None:
    patch = "@@ -10,3 +10,2 @@ actor:\n     lr: 1e-3\n-    warmup: 10\n"
    assert breaks(fc("conf/ppo.yml", patch)) == ["配置项删除：warmup（conf/ppo.yml）"]


def test_toml_and_json_keys() -> None:
    toml = '@@ -1,4 +1,3 @@\n [tool.prhub]\n model = "x"\n-timeout = 30\n'
    json = '@@ -1,4 +1,4 @@\n {\n-  "max_len": 10,\n+  "max_length": 10,\n   "n": 1\n'
    assert breaks(fc("pyproject.toml", toml), fc("conf/a.json", json)) == [
        "配置项删除：tool.prhub.timeout（pyproject.toml）",
        "配置项改名：max_len → max_length（conf/a.json）",
    ]


def test_cli_flag_removed() -> None:
    argparse = (
        "@@ -1,6 +1,3 @@\n"
        " parser = argparse.ArgumentParser()\n"
        '-parser.add_argument("--old-flag", type=int)\n'
        ' parser.add_argument("--keep", type=int)\n'
    )
    typer = (
        "@@ -1,6 +1,2 @@\n"
        " def main(\n"
        "-    workers: int = typer.Option(\n"
        "-        4,\n"
        '-        "--workers",\n'
        "-    ),\n"
        " ):\n"
    )
    assert breaks(fc("tools/run.py", argparse), fc("prhub/cli.py", typer)) == [
        "命令行参数删除：--old-flag（tools/run.py）",
        "命令行参数删除：--workers（prhub/cli.py）",
    ]


@pytest.mark.parametrize(
    "files",
    [
        # comment lines
        [fc("conf/a.yaml", "@@ -1,3 +1,2 @@\n a:\n-# old_key: 1\n-  # other: 2\n")],
        [fc("tools/run.py", '@@ -1,2 +1,1 @@\n-# parser.add_argument("--x")\n')],
        # a key moved within the file: removed in one hunk, added in another
        [
            fc(
                "conf/a.yaml",
                "@@ -1,3 +1,2 @@\n a:\n-  lr: 1\n   n: 2\n@@ -9,2 +8,3 @@\n b:\n+  lr: 1\n",
            )
        ],
        # a changed value
        [fc("conf/a.yaml", "@@ -1,2 +1,2 @@\n a:\n-  lr: 1e-3\n+  lr: 1e-4\n")],
        # a flag moved to another file of the same PR
        [
            fc("a/cli.py", '@@ -1,1 +1,0 @@\n-parser.add_argument("--foo")\n'),
            fc("b/cli.py", '@@ -0,0 +1,1 @@\n+    "--foo", type=int,\n'),
        ],
        # a flag passed to a program, not defined
        [fc("tools/run.py", '@@ -1,1 +1,0 @@\n-subprocess.run(["x", "--foo"])\n')],
        # CI workflows, test fixtures, lock files, requirements, whole files
        [fc(".github/workflows/ci.yml", "@@ -1,2 +1,1 @@\n jobs:\n-  timeout-minutes: 5\n")],
        [fc("tests/data/a.yaml", "@@ -1,2 +1,1 @@\n a:\n-  b: 1\n")],
        [fc("web/package-lock.json", '@@ -1,2 +1,1 @@\n {\n-  "left-pad": {\n')],
        [fc("e2e/conf/a.yaml", "@@ -1,2 +1,1 @@\n a:\n-  b: 1\n")],
        [fc("vendor/lib/conf.yaml", "@@ -1,2 +1,1 @@\n a:\n-  b: 1\n")],
        [fc("vendor/lib/cli.py", '@@ -1,1 +1,0 @@\n-parser.add_argument("--foo")\n')],
        [fc("setup.cfg", "@@ -1,3 +1,2 @@\n install_requires =\n-    torch==2.1\n")],
        [fc("conf/old.yaml", "@@ -1,2 +0,0 @@\n-a:\n-  b: 1\n", status="removed")],
        [fc("conf/big.yaml", None)],
        # URL values are not keys
        [fc("conf/a.yaml", "@@ -1,2 +1,1 @@\n urls:\n-  - http://example.com\n")],
    ],
)
def test_not_breaking(files: list[FileChange]) -> None:
    assert breaks(*files) == []


def test_breaking_lists_reasons_per_pr() -> None:
    patch = "@@ -1,2 +1,1 @@\n a:\n-  b: 1\n"
    prs = [
        pr(2, "[BREAKING] feat: x", files=[fc("c.yaml", patch)]),
        pr(1, "fix: y", files=[fc("c.yaml", patch), fc("d.yaml", patch)]),
        pr(3, "fix: z"),
    ]
    assert facts(prs).breaking == [
        BreakingChange(
            number=1,
            reasons=["配置项删除：a.b（c.yaml）", "配置项删除：a.b（d.yaml）"],
        ),
        BreakingChange(number=2, reasons=["标题标注 [BREAKING]", "配置项删除：a.b（c.yaml）"]),
    ]


def test_timestamps_in_utc_and_shanghai_agree() -> None:
    start, _ = week_window(2026, 32, "Asia/Shanghai")
    assert start == datetime(2026, 8, 2, 16, 0, tzinfo=UTC)
