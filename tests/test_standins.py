"""The stand-ins answer like GitHub and OpenAI, as seen through PyGithub and the openai SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import openai
import pytest
import requests
from github import (
    Auth,
    BadCredentialsException,
    Github,
    GithubException,
    GithubRetry,
    RateLimitExceededException,
    UnknownObjectException,
)
from pydantic import BaseModel, Field

from prhub.llm.llm import schema_text
from prhub.model import ChunkNotes, DigestContent
from prhub.prepare import tokens
from tests.standins import GitHubStandIn, LLMStandIn, schema_instance
from tests.standins.batch import BatchStandIn
from tests.standins.github import pr_of

BEIJING_WEEK_31 = "merged:2026-07-27T00:00:00+08:00..2026-08-03T00:00:00+08:00"
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "fixtures" / "github"
PULLS = DATA / "acme" / "rocket" / "pulls"


_clients: list[Github] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    # An unclosed client's pooled socket warns when collected, and warnings are errors here.
    yield
    while _clients:
        _clients.pop().close()


def client(server: GitHubStandIn, token: str | None = None, **kwargs: Any) -> Github:
    options = {"retry": None, "seconds_between_requests": None, "seconds_between_writes": None}
    auth = Auth.Token(token or server.token or "ghp_any")
    gh = Github(base_url=server.url, auth=auth, **{**options, **kwargs})
    _clients.append(gh)
    return gh


def search(gh: Github, query: str) -> list[int]:
    return [issue.number for issue in gh.search_issues(query)]


def raw(
    server: GitHubStandIn, path: str, stream: bool = False, timeout: float = 5, **params: Any
) -> requests.Response:
    headers = {"Authorization": f"token {server.token}"} if server.token else {}
    return requests.get(
        server.url + path, params=params, headers=headers, timeout=timeout, stream=stream
    )


# GitHub


def test_repository_and_pull(github: GitHubStandIn) -> None:
    repo = client(github).get_repo("acme/rocket")
    assert (repo.full_name, repo.default_branch, repo.private) == ("acme/rocket", "main", False)
    pull = repo.get_pull(106)
    assert pull.title.startswith("[BREAKING][trainer] refactor:")
    assert pull.merged and pull.merged_at == datetime(2026, 8, 2, 15, 30, tzinfo=UTC)
    assert pull.user.login == "marta-kowal"
    assert [label.name for label in pull.labels] == ["breaking"]
    assert pull.url == f"{github.url}/repos/acme/rocket/pulls/106"
    assert pull.html_url == "https://github.com/acme/rocket/pull/106"


def test_files_follow_link_pagination(github: GitHubStandIn) -> None:
    files = list(client(github).get_repo("acme/rocket").get_pull(109).get_files())
    assert len(files) == 35
    assert len({f.filename for f in files}) == 35
    pages = [r["query"].get("page") for r in github.requests if r["path"].endswith("/files")]
    assert pages == [None, ["2"]]
    renamed = [f for f in files if f.status == "renamed"]
    assert [(f.previous_filename, f.filename) for f in renamed] == [
        ("rocket/reward/math_reward.py", "rocket/reward/tasks/math.py")
    ]


def test_link_header_is_githubs(github: GitHubStandIn) -> None:
    answer = raw(github, "/repos/acme/rocket/pulls/109/files", per_page=10, page=2)
    base = f"{github.url}/repos/acme/rocket/pulls/109/files?per_page=10"
    assert answer.headers["Link"] == (
        f'<{base}&page=1>; rel="prev", <{base}&page=3>; rel="next", '
        f'<{base}&page=4>; rel="last", <{base}&page=1>; rel="first"'
    )
    assert len(answer.json()) == 10
    assert answer.headers["Content-Type"] == "application/json; charset=utf-8"
    assert answer.headers["X-RateLimit-Resource"] == "core"


def test_binary_file_has_no_patch(github: GitHubStandIn) -> None:
    files = client(github).get_repo("acme/rocket").get_pull(108).get_files()
    patches = {f.filename: f.patch for f in files}
    assert patches["tests/assets/tiny_tokenizer.model"] is None
    assert '+version = "0.22.1"' in patches["uv.lock"]


def test_fixture_patches_match_their_counts() -> None:
    for path in sorted(PULLS.glob("*.files.json")):
        pull = json.loads(path.with_name(path.name.replace(".files", "")).read_text())
        files = json.loads(path.read_text())
        for f in files:
            lines = f.get("patch", "").splitlines()
            assert f["additions"] == sum(x.startswith("+") for x in lines), f["filename"]
            assert f["deletions"] == sum(x.startswith("-") for x in lines), f["filename"]
        assert pull["additions"] == sum(f["additions"] for f in files)
        assert pull["deletions"] == sum(f["deletions"] for f in files)
        assert pull["changed_files"] == len(files)


def test_reviews(github: GitHubStandIn) -> None:
    repo = client(github).get_repo("acme/rocket")
    reviews = [(r.user.login, r.state) for r in repo.get_pull(101).get_reviews()]
    assert reviews == [("marta-kowal", "COMMENTED"), ("hana-sato", "APPROVED")]
    assert list(repo.get_pull(102).get_reviews()) == []


def test_unmerged_pull(github: GitHubStandIn) -> None:
    pull = client(github).get_repo("acme/rocket").get_pull(110)
    assert (pull.state, pull.merged, pull.merged_at, pull.merge_commit_sha) == (
        "open",
        False,
        None,
        None,
    )


def test_search_by_merge_time(github: GitHubStandIn) -> None:
    gh = client(github)
    repo_prs = "repo:acme/rocket is:pr"
    assert search(gh, f"{repo_prs} is:merged {BEIJING_WEEK_31}") == [101, 102, 103, 104, 105, 106]
    utc_week = f"{repo_prs} is:merged merged:2026-07-27..2026-08-02"
    assert search(gh, utc_week) == [101, 102, 103, 104, 105, 106, 107]
    assert search(gh, f"{repo_prs} merged:>=2026-08-03") == [108, 109]
    assert search(gh, f"{repo_prs} merged:<2026-07-28") == [101]
    assert search(gh, f"{repo_prs} is:unmerged") == [110]
    assert search(gh, "repo:acme/elsewhere is:pr") == []


def test_search_items_are_issues(github: GitHubStandIn) -> None:
    results = client(github).search_issues(f"repo:acme/rocket is:pr is:merged {BEIJING_WEEK_31}")
    assert results.totalCount == 6
    first = results[0]
    assert first.url == f"{github.url}/repos/acme/rocket/issues/101"
    assert first.pull_request.url == f"{github.url}/repos/acme/rocket/pulls/101"
    assert first.pull_request.merged_at == datetime(2026, 7, 27, 3, 12, 45, tzinfo=UTC)
    assert first.as_pull_request().merge_commit_sha is not None


def test_search_pages(github: GitHubStandIn) -> None:
    numbers = search(client(github, per_page=4), f"repo:acme/rocket {BEIJING_WEEK_31}")
    assert numbers == [101, 102, 103, 104, 105, 106]
    assert sum(r["path"] == "/search/issues" for r in github.requests) == 2


def test_search_reaches_only_1000_results(tmp_path: Path) -> None:
    pulls = tmp_path / "big" / "repo" / "pulls"
    pulls.mkdir(parents=True)
    template = json.loads((PULLS / "101.json").read_text())
    for number in range(1, 1006):
        merged = f"2026-07-{1 + number // 100:02d}T00:00:{number % 60:02d}Z"
        pull = {**template, "number": number, "merged_at": merged}
        (pulls / f"{number}.json").write_text(json.dumps(pull))
    with GitHubStandIn(tmp_path) as server:
        page = raw(server, "/search/issues", q="repo:big/repo is:merged", per_page=100, page=10)
        assert page.status_code == 200
        assert page.json()["total_count"] == 1005
        assert len(page.json()["items"]) == 100
        beyond = raw(server, "/search/issues", q="repo:big/repo", per_page=100, page=11)
        assert beyond.status_code == 422
        assert beyond.json()["message"] == "Only the first 1000 search results are available"
        found = client(server, per_page=100).search_issues("repo:big/repo is:merged")
        assert len(list(found)) == 1000


def test_a_mirror_serves_a_folder_under_its_own_name() -> None:
    mirrors = {"Acme/Mirror": "acme/rocket", "acme/second": "acme/booster"}
    with GitHubStandIn(DATA, mirrors=mirrors) as server:
        gh = client(server)
        repo = gh.get_repo("acme/mirror")
        assert repo.full_name == "Acme/Mirror"
        pull = repo.get_pull(106)
        assert pull.url == f"{server.url}/repos/Acme/Mirror/pulls/106"
        assert pull.html_url == "https://github.com/Acme/Mirror/pull/106"
        files = list(pull.get_files())
        assert files and all("acme/rocket" not in f.blob_url for f in files)
        assert search(gh, f"repo:Acme/Mirror is:merged {BEIJING_WEEK_31}") == [
            101, 102, 103, 104, 105, 106
        ]  # fmt: skip
        item = gh.search_issues(f"repo:Acme/Mirror {BEIJING_WEEK_31}")[0]
        assert item.html_url == "https://github.com/Acme/Mirror/pull/101"
        contents = raw(server, "/repos/acme/second/contents/.gitattributes").json()
        assert contents["html_url"] == "https://github.com/acme/second/blob/main/.gitattributes"
        # The folder it mirrors is served as before.
        assert gh.get_repo("acme/rocket").get_pull(106).url.endswith("/acme/rocket/pulls/106")


def test_a_repository_that_is_down_answers_502_and_the_others_do_not() -> None:
    with GitHubStandIn(DATA, mirrors={"acme/mirror": "acme/rocket"}) as server:
        server.down.add("ACME/Mirror")
        for path in ("/repos/acme/mirror", "/repos/acme/mirror/pulls/101/files"):
            assert raw(server, path).status_code == 502
        assert raw(server, "/search/issues", q="repo:acme/mirror is:pr").status_code == 502
        assert raw(server, "/repos/acme/rocket/pulls/101").status_code == 200
        assert raw(server, "/search/issues", q="repo:acme/rocket is:pr").status_code == 200
        server.down.clear()
        assert raw(server, "/repos/acme/mirror").status_code == 200


def test_bad_token(github: GitHubStandIn) -> None:
    with pytest.raises(BadCredentialsException):
        client(github, token="ghp_wrong").get_repo("acme/rocket")


def test_unknown_objects(github: GitHubStandIn) -> None:
    gh = client(github)
    with pytest.raises(UnknownObjectException):
        gh.get_repo("acme/missing")
    with pytest.raises(UnknownObjectException):
        gh.get_repo("acme/rocket").get_pull(999)
    answer = raw(github, "/nowhere")
    assert answer.status_code == 404
    assert answer.json()["message"] == "Not Found"


def test_rate_limit(github: GitHubStandIn) -> None:
    gh = client(github)
    gh.get_repo("acme/rocket")
    assert gh.rate_limiting == (4999, 5000)
    overview = gh.get_rate_limit()
    assert overview.resources.core.used == 1
    assert overview.resources.search.limit == 30


def test_scripted_answers(github: GitHubStandIn) -> None:
    gh = client(github)
    github.script(r"/pulls/101$", [(502, {}, {"message": "Server Error"}), "reset"])
    repo = gh.get_repo("acme/rocket")
    with pytest.raises(GithubException) as error:
        repo.get_pull(101)
    assert error.value.status == 502
    with pytest.raises(requests.ConnectionError):
        repo.get_pull(101)
    assert repo.get_pull(101).number == 101
    github.script(r"/pulls/102$", [("sleep", 0.3)])
    start = time.monotonic()
    assert repo.get_pull(102).number == 102
    assert time.monotonic() - start >= 0.3


def test_trickled_and_chunked_answers(github: GitHubStandIn) -> None:
    github.script(
        r"/pulls/101$", [("trickle", 0.05, 200), (200, {"Transfer-Encoding": "chunked"}, [7])]
    )
    start = time.monotonic()
    with raw(github, "/repos/acme/rocket/pulls/101", stream=True) as answer:
        first = answer.raw.read1(4096)  # 10 pieces, 0.05 s apart
        assert len(first) <= 200 and json.loads(first + answer.raw.read())["number"] == 101
    assert time.monotonic() - start > 0.4
    chunked = raw(github, "/repos/acme/rocket/pulls/101")
    assert chunked.json() == [7] and "Content-Length" not in chunked.headers
    with GitHubStandIn(DATA, trickle=0.0005) as slow:  # a trickle in every answer
        assert raw(slow, "/repos/acme/rocket/pulls/104").json()["number"] == 104


def test_stopping_ends_a_trickle_at_once() -> None:
    server = GitHubStandIn(DATA, trickle=60).start()
    with pytest.raises(requests.ConnectionError):
        raw(server, "/repos/acme/rocket/pulls/104", timeout=0.5).json()
    start = time.monotonic()
    server.stop()
    assert time.monotonic() - start < 2


def test_secondary_rate_limit_fault() -> None:
    with GitHubStandIn(DATA) as server:
        answer = server.fault_answer("secondary")
        server.script("/repos/acme/rocket$", [answer])
        with pytest.raises(RateLimitExceededException) as error:
            client(server).get_repo("acme/rocket")
        assert error.value.headers is not None
        assert error.value.headers["retry-after"] == "1"


def test_pygithub_retry_recovers_from_a_server_error(github: GitHubStandIn) -> None:
    github.script(r"/pulls/103$", [(503, {}, {"message": "Service Unavailable"})])
    gh = client(github, retry=GithubRetry(total=2, backoff_factor=0.01))
    assert gh.get_repo("acme/rocket").get_pull(103).number == 103


def test_seeded_faults_repeat() -> None:
    def run() -> list[tuple[str, str]]:
        with GitHubStandIn(DATA, fault_rate=0.5, seed=7) as server:
            for _ in range(30):
                try:
                    raw(server, "/repos/acme/rocket/pulls/101")
                except requests.ConnectionError:
                    pass
            return server.faults

    faults = run()
    assert faults == run()
    assert {kind for _, kind in faults} == {"500", "502", "503", "secondary", "reset"}


def test_review_and_conversation_comments_page_like_githubs() -> None:
    with GitHubStandIn(DATA, page_limit=2) as server:
        pull = client(server).get_repo("acme/booster").get_pull(12)
        inline = list(pull.get_review_comments())
        talk = list(pull.get_issue_comments())
        reviews = list(pull.get_reviews())
        pages = [(r["path"], r["query"].get("page")) for r in server.requests]
    assert [c.path for c in inline] == ["booster/trainer/checkpoint.py"] * 2 + [
        "booster/_vendor/tinyjson.py"
    ]
    assert (inline[0].line, inline[0].original_line, inline[2].user.type) == (None, 14, "Bot")
    assert inline[1].in_reply_to_id == inline[0].id
    assert [c.user.login for c in talk] == ["quiet-otter", "codecov", "lin-yue"]
    assert [c.author_association for c in talk] == ["NONE", "NONE", "CONTRIBUTOR"]
    assert [r.state for r in reviews] == ["CHANGES_REQUESTED", "COMMENTED", "APPROVED"]
    base = "/repos/acme/booster"
    assert pages[-6:] == [
        (f"{base}/pulls/12/comments", None),
        (f"{base}/pulls/12/comments", ["2"]),
        (f"{base}/issues/12/comments", None),
        (f"{base}/issues/12/comments", ["2"]),
        (f"{base}/pulls/12/reviews", None),
        (f"{base}/pulls/12/reviews", ["2"]),
    ]


def test_a_pr_without_comment_data_has_empty_lists(github: GitHubStandIn) -> None:
    assert raw(github, "/repos/acme/rocket/pulls/102/comments").json() == []
    assert raw(github, "/repos/acme/rocket/issues/102/comments").json() == []
    assert raw(github, "/repos/acme/rocket/issues/102/events").status_code == 404


def test_booster_fixture_patches_match_their_counts() -> None:
    pull = json.loads((DATA / "acme" / "booster" / "pulls" / "12.json").read_text())
    files = json.loads((DATA / "acme" / "booster" / "pulls" / "12.files.json").read_text())
    for f in files:
        lines = f["patch"].splitlines()
        assert f["additions"] == sum(x.startswith("+") for x in lines), f["filename"]
        assert f["deletions"] == sum(x.startswith("-") for x in lines), f["filename"]
    assert (pull["additions"], pull["deletions"]) == (
        sum(f["additions"] for f in files),
        sum(f["deletions"] for f in files),
    )
    comments = json.loads((DATA / "acme" / "booster" / "pulls" / "12.comments.json").read_text())
    talk = json.loads((DATA / "acme" / "booster" / "pulls" / "12.issue_comments.json").read_text())
    assert (pull["review_comments"], pull["comments"]) == (len(comments), len(talk))


def test_contents_are_githubs_base64_file_object(github: GitHubStandIn) -> None:
    repo = client(github).get_repo("acme/booster")
    before = len(github.requests)
    content = repo.get_contents(".gitattributes")
    assert not isinstance(content, list)
    text = (DATA / "acme" / "booster" / "contents" / ".gitattributes").read_text()
    assert content.decoded_content.decode() == text
    assert (content.type, content.encoding, content.path) == ("file", "base64", ".gitattributes")
    assert all(len(line) <= 60 for line in content.content.splitlines())
    assert len(github.requests) == before + 1


def test_missing_contents_are_not_found(github: GitHubStandIn) -> None:
    assert raw(github, "/repos/acme/rocket/contents/.gitattributes").status_code == 404
    assert raw(github, "/repos/acme/booster/contents/").status_code == 404


def test_the_stand_in_counts_requests_per_path_per_pr_and_at_once() -> None:
    with GitHubStandIn(DATA, latency=0.2) as server:
        paths = ["/repos/acme/rocket/pulls/101", "/repos/acme/rocket/pulls/101/files"]
        paths += ["/repos/acme/booster/issues/12/comments", "/repos/acme/rocket"]
        with ThreadPoolExecutor(len(paths)) as pool:
            list(pool.map(lambda path: raw(server, path), paths))
        assert server.paths()["/repos/acme/rocket/pulls/101"] == 1
        assert server.per_pr() == {101: 2, 12: 1}
        assert 1 < server.most_in_flight <= len(paths)
        # A handler counts itself out just after its answer is sent: give it that moment.
        deadline = time.monotonic() + 2
        while server.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.in_flight == 0


def test_the_log_tells_a_bench_how_many_requests_were_open(tmp_path: Path) -> None:
    with GitHubStandIn(DATA, latency=0.2) as server, (tmp_path / "log").open("w") as log:
        server.log = log
        with ThreadPoolExecutor(3) as pool:
            list(pool.map(lambda n: raw(server, f"/repos/acme/rocket/pulls/{n}"), [101, 102, 103]))
    lines = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert sorted(pr_of(line["path"]) for line in lines) == [101, 102, 103]
    assert max(line["in_flight"] for line in lines) > 1


@pytest.mark.parametrize(
    ("path", "number"),
    [
        ("/repos/o/r/pulls/7", 7),
        ("/repos/o/r/pulls/7/files", 7),
        ("/repos/o/r/issues/7/comments", 7),
        ("/repos/o/r/pulls/7/comments", 7),
        ("/repos/o/r", None),
        ("/repos/o/r/contents/.gitattributes", None),
        ("/search/issues", None),
    ],
)
def test_pr_of_names_the_pr_a_request_is_about(path: str, number: int | None) -> None:
    assert pr_of(path) == number


def test_an_answer_has_its_etag_and_a_request_holding_it_gets_a_free_304(
    github: GitHubStandIn,
) -> None:
    first = raw(github, "/repos/acme/rocket/pulls/101")
    tag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert tag.startswith('W/"') and modified == "Mon, 27 Jul 2026 03:12:45 GMT"
    auth = {"Authorization": f"token {github.token}"}
    url = github.url + "/repos/acme/rocket/pulls/101"
    for asked in ({"If-None-Match": tag}, {"If-Modified-Since": modified}):
        again = requests.get(url, headers={**auth, **asked}, timeout=5)
        assert again.status_code == 304 and again.content == b""
        assert again.headers["X-RateLimit-Remaining"] == "4999"  # only the first one spent
    stale = requests.get(url, headers={**auth, "If-None-Match": 'W/"other"'}, timeout=5)
    assert stale.status_code == 200 and stale.json()["number"] == 101
    assert github.charged() == {"core": 2, "free": 2}


def test_the_primary_limit_refuses_past_it_until_its_window_ends() -> None:
    now = [1_800_000_000.0]
    with GitHubStandIn(DATA, clock=lambda: now[0], core_limit=2, core_window=60) as server:
        answers = [raw(server, "/repos/acme/rocket/pulls/101") for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 403]
        refused = answers[2]
        assert refused.json()["message"].startswith("API rate limit exceeded")
        assert refused.headers["X-RateLimit-Remaining"] == "0"
        assert refused.headers["X-RateLimit-Reset"] == "1800000060"
        assert raw(server, "/search/issues", q="repo:acme/rocket").status_code == 200
        now[0] += 60
        assert raw(server, "/repos/acme/rocket/pulls/101").headers["X-RateLimit-Used"] == "1"
        assert server.charged() == {"core": 3, "refused": 1, "search": 1}
        assert server.charged_per_pr() == {101: 3}


# LLM


def ask(server: LLMStandIn, key: str | None = None, **kwargs: Any) -> Any:
    params: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Digest this PR."}],
    }
    api_key = key or server.api_key or "sk-any"
    with openai.OpenAI(base_url=server.url, api_key=api_key, max_retries=0) as llm_client:
        return llm_client.chat.completions.create(**{**params, **kwargs})


def digest_format(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    schema = schema or DigestContent.model_json_schema()
    return {
        "type": "json_schema",
        "json_schema": {"name": "digest", "schema": schema, "strict": True},
    }


def test_structured_completion(llm: LLMStandIn) -> None:
    reply = ask(llm, response_format=digest_format())
    content = DigestContent.model_validate_json(reply.choices[0].message.content)
    assert content.minutes >= 1
    assert reply.object == "chat.completion" and reply.model == "gpt-4o-mini"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage.prompt_tokens == tokens.count("Digest this PR.")
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    [request] = llm.requests
    assert request["headers"]["authorization"] == f"Bearer {llm.api_key}"
    assert llm.bodies[0]["response_format"]["json_schema"]["name"] == "digest"


def test_json_object_follows_the_schema_in_the_prompt(llm: LLMStandIn) -> None:
    schema = json.dumps(ChunkNotes.model_json_schema(), ensure_ascii=False, indent=2)
    messages = [
        {"role": "system", "content": f"Reply with JSON matching:\n```json\n{schema}\n```"},
        {"role": "user", "content": "diff --git a/x b/x"},
    ]
    reply = ask(llm, messages=messages, response_format={"type": "json_object"})
    ChunkNotes.model_validate_json(reply.choices[0].message.content)
    assert ask(llm).choices[0].message.content == "{}"
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        ask(llm, response_format={"type": "json_object"})


def test_json_object_follows_the_example_in_the_prompt(llm: LLMStandIn) -> None:
    example = schema_text("json_object", DigestContent)
    messages = [{"role": "system", "content": f"JSON 格式：\n```json\n{example}\n```"}]
    reply = ask(llm, messages=messages, response_format={"type": "json_object"})
    # The example's first choice would be 精读; the stand-in weighs it as a model does.
    answer = DigestContent.model_validate_json(reply.choices[0].message.content)
    assert answer.verdict == "快速浏览" and answer.advice


def test_flavours_answer_response_format_as_their_servers_do() -> None:
    grammar = {"type": "json_object", "schema": ChunkNotes.model_json_schema()}
    with (
        LLMStandIn(flavour="deepseek") as deepseek,
        LLMStandIn(flavour="llama-cpp-python") as local,
    ):
        with pytest.raises(openai.BadRequestError, match="response_format type is unavailable"):
            ask(deepseek, response_format=digest_format())
        with pytest.raises(openai.InternalServerError, match="Input should be 'text' or 'json_"):
            ask(local, response_format=digest_format())
        ChunkNotes.model_validate_json(
            ask(local, response_format=grammar).choices[0].message.content
        )
        json_please = [{"role": "user", "content": "Reply in JSON."}]
        with pytest.raises(openai.BadRequestError, match="Unknown parameter"):
            ask(deepseek, messages=json_please, response_format=grammar)


def test_replay_serves_a_files_bodies_in_order(llm: LLMStandIn) -> None:
    record = llm.replay(ROOT / "tests" / "replies" / "deepseek-refuses-json-schema.json")
    with pytest.raises(openai.BadRequestError):
        ask(llm)
    assert ask(llm).model_dump(exclude_none=True)["id"] == record["responses"][1]["body"]["id"]
    assert ask(llm).choices[0].message.content == "{}"  # then the stand-in's own answers


def test_wrong_key(llm: LLMStandIn) -> None:
    with pytest.raises(openai.AuthenticationError) as error:
        ask(llm, key="sk-wrong")
    assert error.value.code == "invalid_api_key"
    assert "Incorrect API key provided" in error.value.message


def test_rate_limit_script(llm: LLMStandIn) -> None:
    body = {"error": {"message": "Rate limit reached", "type": "requests", "param": None}}
    llm.script([(429, {"Retry-After": "1"}, body)])
    with pytest.raises(openai.RateLimitError) as error:
        ask(llm)
    assert error.value.response.headers["retry-after"] == "1"
    assert ask(llm).choices[0].message.content == "{}"


def test_context_limit() -> None:
    with LLMStandIn(context_limit=10) as server:
        with pytest.raises(openai.BadRequestError) as error:
            ask(server, messages=[{"role": "user", "content": "word " * 50}])
    assert error.value.code == "context_length_exceeded"
    assert "maximum context length is 10 tokens" in error.value.message


def test_output_limit_truncates(llm: LLMStandIn) -> None:
    reply = ask(llm, response_format=digest_format(), max_completion_tokens=5)
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 5
    with pytest.raises(ValueError):
        DigestContent.model_validate_json(reply.choices[0].message.content)


def test_scripted_content_reset_and_timeout(llm: LLMStandIn) -> None:
    llm.script([("content", "not json at all"), "reset", ("sleep", 1.0)])
    assert ask(llm).choices[0].message.content == "not json at all"
    with pytest.raises(openai.APIConnectionError):
        ask(llm)
    with pytest.raises(openai.APITimeoutError):
        ask(llm, timeout=0.2)


def test_sdk_retries_through_faults() -> None:
    with LLMStandIn(fault_rate=0.6, seed=3) as server:
        with openai.OpenAI(base_url=server.url, api_key="sk-any", max_retries=8) as llm_client:
            reply = llm_client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": "hi"}],
                response_format=digest_format(),
            )
        DigestContent.model_validate_json(reply.choices[0].message.content)
        assert server.faults and len(server.requests) == len(server.faults) + 1


def test_latency_overlaps() -> None:
    """Requests in flight together wait out their latency together: a ratio, not a time limit."""
    with LLMStandIn(latency=0.3) as server:
        start = time.monotonic()
        for _ in range(4):
            ask(server)
        one_by_one = time.monotonic() - start  # at least 4 × 0.3 s
        start = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: ask(server), range(4)))
        together = time.monotonic() - start
    assert together < one_by_one * 0.75, (together, one_by_one)


def test_strict_schema_must_require_every_property(llm: LLMStandIn) -> None:
    class Loose(BaseModel):
        title: str
        note: str = ""

    with pytest.raises(openai.BadRequestError, match="additionalProperties"):
        ask(llm, response_format=digest_format(Loose.model_json_schema()))


def test_models(llm: LLMStandIn) -> None:
    with openai.OpenAI(base_url=llm.url, api_key=llm.api_key, max_retries=0) as llm_client:
        assert [m.id for m in llm_client.models.list()] == ["gpt-4o-mini"]


@pytest.mark.parametrize("model", [DigestContent, ChunkNotes])
def test_schema_instance_fits_prhub_models(model: type[BaseModel]) -> None:
    model.model_validate_json(json.dumps(schema_instance(model.model_json_schema())))


def test_schema_instance_respects_constraints() -> None:
    class Inner(BaseModel):
        flag: bool

    class Sample(BaseModel):
        short: str = Field(max_length=2)
        long: str = Field(min_length=10)
        above: int = Field(gt=5)
        below: float = Field(lt=0)
        many: list[int] = Field(min_length=3)
        maybe: Inner | None
        kind: str = Field(json_schema_extra={"enum": ["a", "b"]})

    instance = schema_instance(Sample.model_json_schema())
    Sample.model_validate(instance)
    assert (len(instance["short"]), len(instance["long"])) == (2, 10)
    assert (instance["above"], instance["many"], instance["maybe"]) == (
        6,
        [1, 1, 1],
        {"flag": True},
    )


# The Batch API


def test_a_batch_is_answered_as_the_endpoint_answers_online() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Reply with one JSON object."}],
        "response_format": {"type": "json_object"},
    }
    lines = [
        {"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}
        for i in range(3)
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with (
        BatchStandIn(api_key="k", polls=1, expire=1) as llm,
        openai.OpenAI(base_url=llm.url, api_key="k", max_retries=0) as client,
    ):
        upload = client.files.create(file=("in.jsonl", data), purpose="batch")
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert batch.status == "validating"
        assert client.batches.retrieve(batch.id).status == "in_progress"
        done = client.batches.retrieve(batch.id)
        assert done.output_file_id and done.error_file_id and done.request_counts
        output = client.files.content(done.output_file_id).text.splitlines()
        [expired] = client.files.content(done.error_file_id).text.splitlines()
        online = client.chat.completions.create(**body)  # type: ignore[call-overload]
        with pytest.raises(openai.NotFoundError):
            client.batches.retrieve("batch_none")
    assert done.status == "expired"
    assert (done.request_counts.completed, done.request_counts.failed) == (2, 1)
    answers = [json.loads(line) for line in output]
    assert [a["custom_id"] for a in answers] == ["r1", "r2"]
    assert {a["response"]["status_code"] for a in answers} == {200}
    content = {a["response"]["body"]["choices"][0]["message"]["content"] for a in answers}
    assert content == {online.choices[0].message.content}
    assert json.loads(expired)["custom_id"] == "r0"
    assert json.loads(expired)["error"]["code"] == "batch_expired"


# Command line


def test_command_line_serves_until_killed() -> None:
    command = [sys.executable, "-m", "tests.standins", "github", "--data", str(DATA)]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            answer = requests.get(f"{url}/repos/acme/rocket/pulls/104", timeout=5)
            assert answer.json()["author_association"] == "FIRST_TIME_CONTRIBUTOR"
        finally:
            process.terminate()


def test_command_line_serves_the_batch_api_when_asked() -> None:
    command = [sys.executable, "-m", "tests.standins", "llm", "--batch-polls", "2"]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            answer = requests.get(f"{url}/batches/batch_none", timeout=5)
            assert answer.status_code == 404
            assert answer.json()["error"]["message"] == "No batch found with id 'batch_none'."
        finally:
            process.terminate()


def test_the_prefix_cache_counts_a_long_shared_prefix_by_128s() -> None:
    system = {"role": "system", "content": "规则 " * 1500}
    with (
        LLMStandIn(prefix_cache=True) as llm,
        openai.OpenAI(base_url=llm.url, api_key="k", max_retries=0) as client,
    ):

        def cached(user: str, **extra: Any) -> int:
            messages: Any = [system, {"role": "user", "content": user}]
            answer = client.chat.completions.create(model="m", messages=messages, **extra)
            assert answer.usage and answer.usage.prompt_tokens_details
            return answer.usage.prompt_tokens_details.cached_tokens or 0

        first, second = cached("PR 1"), cached("PR 2")
        other_format = cached("PR 3 json", response_format={"type": "json_object"})
    assert first == 0 and other_format == 0  # nothing seen before with this prefix
    assert second >= 1024 and second % 128 == 0
    assert second <= tokens.count("\n".join([system["content"], "PR 2"]))
    with (
        LLMStandIn() as plain,
        openai.OpenAI(base_url=plain.url, api_key="k", max_retries=0) as client,
    ):
        for _ in range(2):
            answer = client.chat.completions.create(model="m", messages=[system])
            assert answer.usage and answer.usage.prompt_tokens_details
            assert answer.usage.prompt_tokens_details.cached_tokens == 0
