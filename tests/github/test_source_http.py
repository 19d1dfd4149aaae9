"""GitHubSource against a GitHub that redirects, times out its search or answers malformed data."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from prhub import retry
from prhub.errors import ConfigError, GitHubUnavailable, PRNotFound
from prhub.github.source import GITHUB_IN_FLIGHT, GitHubSource
from tests.factories import FIXTURES, GITHUB_TOKEN, REPO, MakeSource, closed_port_url, settings
from tests.standins import GitHubStandIn

WEEK = datetime(2026, 7, 27, tzinfo=timezone(timedelta(hours=8)))
WEEK_NUMBERS = [101, 102, 103, 104, 105, 106]
PULLS = FIXTURES / "github" / "acme" / "rocket" / "pulls"


@pytest.fixture
def source(make_source: MakeSource) -> GitHubSource:
    return make_source()


@pytest.fixture
def elsewhere() -> Iterator[GitHubStandIn]:
    """A second GitHub with the same data on another port, so another host: it must get nothing."""
    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN) as server:
        yield server
    assert not server.errors, server.errors


def week(source: GitHubSource) -> list[int]:
    return [h["number"] for h in source.merged_between(REPO, WEEK, WEEK + timedelta(days=7))]


def searches(github: GitHubStandIn) -> list[str]:
    """The merged: ranges searched, each once, in the order they were first asked."""
    queries = [r["query"]["q"][0] for r in github.requests if r["path"] == "/search/issues"]
    return list(dict.fromkeys(q.split("merged:")[1].split()[0] for q in queries))


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert message and "\n" not in message
    return message


# Redirects: followed on the same scheme, host and port; refused anywhere else


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("absolute", [True, False])
def test_a_renamed_repository_is_followed_on_the_same_host(
    status: int, absolute: bool, source: GitHubSource, github: GitHubStandIn
) -> None:
    location = f"{github.url if absolute else ''}/repos/acme/rocket/pulls/101"
    moved = (status, {"Location": location}, {"message": "Moved Permanently"})
    github.script(r"^/repos/acme/old-rocket/pulls/101$", [moved])
    pr = source.pull("acme/old-rocket", 101)
    assert pr.number == 101 and len(pr.files) == 2 and len(pr.reviews) == 2


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_same_host_redirect_keeps_headers_and_query(
    status: int, source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/search/issues$", [("redirect", status, f"{github.url}/moved")])
    back = ("redirect", status, github.url, "/moved")
    github.script(r"^/moved/search/issues$", [back])
    assert week(source) == WEEK_NUMBERS
    asked, moved, back = github.requests[:3]
    assert moved["path"] == "/moved/search/issues" and back["path"] == "/search/issues"
    assert asked["query"] == moved["query"] == back["query"]
    assert back["headers"]["authorization"] == f"token {GITHUB_TOKEN}"


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize("target", ["other name", "other port"])
def test_a_redirect_to_another_host_fails_naming_it(
    status: int,
    target: str,
    source: GitHubSource,
    github: GitHubStandIn,
    elsewhere: GitHubStandIn,
) -> None:
    # The same server under another name is another host too: the rule is scheme, host, port.
    other = github.url.replace("127.0.0.1", "localhost")
    if target == "other port":
        other = elsewhere.url  # a GitHub that would answer with the same, plausible data
    github.script(r"^/search/issues$", [("redirect", status, other)] * 5)
    with pytest.raises(GitHubUnavailable) as caught:
        week(source)
    message = one_line(caught)
    assert other.removeprefix("http://") in message and "another host" in message
    assert elsewhere.requests == []
    assert len([r for r in github.requests if r["path"] == "/search/issues"]) == 1  # no retry


def test_a_redirect_to_another_scheme_fails(source: GitHubSource, github: GitHubStandIn) -> None:
    https = github.url.replace("http://", "https://")
    github.script(r"/pulls/101$", [("redirect", 301, https)])
    with pytest.raises(GitHubUnavailable, match="another host"):
        source.pull_payload(REPO, 101)


def test_a_redirect_names_no_credentials_of_the_other_host(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    location = "http://bob:hunter2@127.0.0.2:9/repos/acme/rocket/pulls/101?access_token=abc123"
    github.script(r"/pulls/101$", [(301, {"Location": location}, {"message": "Moved"})])
    with pytest.raises(GitHubUnavailable) as caught:
        source.pull_payload(REPO, 101)
    message = one_line(caught)
    assert "127.0.0.2:9" in message
    assert "hunter2" not in message and "abc123" not in message and "bob" not in message


def test_a_redirect_loop_stops(source: GitHubSource, github: GitHubStandIn) -> None:
    github.script(r"/pulls/101$", [("redirect", 307, github.url)] * 30)
    with pytest.raises(GitHubUnavailable, match="redirect"):
        source.pull_payload(REPO, 101)
    assert len(github.requests) < 10


def test_a_redirect_without_location_fails(source: GitHubSource, github: GitHubStandIn) -> None:
    github.script(r"/pulls/101$", [(302, {}, {"message": "Found"})])
    with pytest.raises(GitHubUnavailable, match="302"):
        source.pull_payload(REPO, 101)


def test_a_next_page_on_another_host_fails(
    source: GitHubSource, github: GitHubStandIn, elsewhere: GitHubStandIn
) -> None:
    files = json.loads((PULLS / "101.files.json").read_text())
    link = f'<{elsewhere.url}/repos/acme/rocket/pulls/101/files?page=2>; rel="next"'
    github.script(r"/pulls/101/files$", [(200, {"Link": link}, files)])
    with pytest.raises(GitHubUnavailable, match=elsewhere.url):
        source.pull(REPO, 101)
    assert elsewhere.requests == []


def test_a_pull_whose_url_is_on_another_host_fails(
    source: GitHubSource, github: GitHubStandIn, elsewhere: GitHubStandIn
) -> None:
    pull = json.loads((PULLS / "101.json").read_text())
    pull["url"] = f"{elsewhere.url}/repos/acme/rocket/pulls/101"
    github.script(r"/pulls/101$", [(200, {}, pull)])
    with pytest.raises(GitHubUnavailable, match=elsewhere.url):
        source.pull(REPO, 101)
    assert elsewhere.requests == []


# Incomplete search results: retried, then the window halved, then an error


def test_an_incomplete_search_is_retried(source: GitHubSource, github: GitHubStandIn) -> None:
    github.script(r"^/search/issues$", [("incomplete",)])
    assert week(source) == WEEK_NUMBERS
    assert source.stop_token is not None and source.stop_token.retries == 1


def test_a_search_incomplete_twice_is_retried_twice(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/search/issues$", [("incomplete",), ("incomplete",)])
    assert week(source) == WEEK_NUMBERS
    assert source.stop_token is not None and source.stop_token.retries == 2


def test_a_week_costs_one_search_request(source: GitHubSource, github: GitHubStandIn) -> None:
    """The first page carries GitHub's count: no request of one item asks for it first."""
    assert week(source) == WEEK_NUMBERS
    asked = [r["query"] for r in github.requests if r["path"] == "/search/issues"]
    assert len(asked) == 1 and asked[0].get("per_page") == ["100"]


def test_a_search_that_stays_incomplete_is_split_in_two(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/search/issues$", [("incomplete",)] * 3)  # every attempt of max_attempts
    assert week(source) == WEEK_NUMBERS
    _whole, first, second = searches(github)
    assert first.split("..")[0] == "2026-07-27T00:00:00+08:00"
    assert second.split("..")[1] == "2026-08-02T23:59:59+08:00"
    assert first.split("..")[1] < second.split("..")[0]


def test_a_search_whose_halves_stay_incomplete_fails(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/search/issues$", [("incomplete",)] * 9)
    with pytest.raises(GitHubUnavailable) as caught:
        week(source)
    message = one_line(caught)
    assert message == (
        f"GitHub's search for PRs of {REPO} merged 2026-07-27T00:00:00+08:00.."
        "2026-07-30T11:59:59+08:00 stayed incomplete after retries and halving (it answered "
        "with incomplete results: it timed out): rerun later"
    )  # the search named once, not again in what went wrong
    # Three attempts at the week, three at its first half; the second half is not searched.
    assert len([r for r in github.requests if r["path"] == "/search/issues"]) == 6


@pytest.mark.parametrize("listed", [0, 1])
def test_a_search_listing_fewer_prs_than_it_counts_fails(
    source: GitHubSource, github: GitHubStandIn, listed: int
) -> None:
    github.script(r"^/search/issues$", [("short", listed)] * 9)
    with pytest.raises(GitHubUnavailable) as caught:
        week(source)
    assert caught.value.exit_code == 8
    assert f"(it counted 3 but listed {listed})" in one_line(caught) and REPO in one_line(caught)
    assert one_line(caught).count("GitHub's search for PRs") == 1


def test_a_search_listing_fewer_prs_once_is_searched_again_in_halves(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/search/issues$", [("short", 2)])
    assert week(source) == WEEK_NUMBERS


# Malformed answers: one line, exit 8, for every endpoint


def pull_with(**changes: Any) -> dict[str, Any]:
    return {**json.loads((PULLS / "101.json").read_text()), **changes}


def search_with(**changes: Any) -> dict[str, Any]:
    return {"total_count": 1, "incomplete_results": False, "items": [], **changes}


INLINE = {"path": "a.py", "body": "x", "created_at": "2026-07-27T00:00:00Z"}
HTML = (200, {"Content-Type": "text/html; charset=utf-8"}, b"<!DOCTYPE html><html>Sign in</html>")
ENDPOINTS: dict[str, tuple[str, Callable[[GitHubSource], Any]]] = {
    "search": (r"^/search/issues$", week),
    "pull": (r"/pulls/101$", lambda s: s.pull(REPO, 101)),
    "files": (r"/pulls/101/files$", lambda s: s.pull(REPO, 101)),
    "reviews": (r"/pulls/101/reviews$", lambda s: s.pull(REPO, 101)),
    "review comments": (r"/pulls/12/comments$", lambda s: s.pull("acme/booster", 12)),
    "conversation": (r"/issues/12/comments$", lambda s: s.pull("acme/booster", 12)),
    "contents": (r"/contents/\.gitattributes$", lambda s: s.attributes("acme/booster")),
}
ANY_ENDPOINT: list[tuple[str, Any, str]] = [
    ("an HTML page", HTML, "not JSON"),
    ("truncated JSON", (200, {}, b'[{"filename": "a.py", "stat'), "not JSON"),
    ("an empty body", (200, {}, b""), "no body"),
    ("null", (200, {}, None), "null"),
    ("a number", (200, {}, 5), "a number"),
    ("a string", (200, {}, "ok"), "a string"),
    ("a short Content-Length", (200, {"Content-Length": "3"}, [{"a": 1}]), "not JSON"),
    ("an answer of 204", (204, {}, b""), "204"),
]
WRONG_TYPES: list[tuple[str, str, Any, str]] = [
    ("search", "items not a list", search_with(items=5), "items"),
    ("search", "a string count", search_with(total_count="many"), "total_count"),
    ("search", "no items", {"total_count": 0, "incomplete_results": False}, "items"),
    ("search", "an item without number", search_with(items=[{"title": "x"}]), "number"),
    ("search", "a naive time", search_with(items=[{"number": 1, "updated_at": "2026-07-27"}]), ""),
    ("pull", "a list", [pull_with()], "list"),
    ("pull", "a string number", pull_with(number="101a"), "number"),
    ("pull", "no created_at", {k: v for k, v in pull_with().items() if k != "created_at"}, ""),
    ("pull", "labels a number", pull_with(labels=3), "labels"),
    ("pull", "a label without name", pull_with(labels=[{"id": 1}]), "labels"),
    ("pull", "user a string", pull_with(user="lin-yue"), "user"),
    ("pull", "head a list", pull_with(head=[]), "head"),
    ("pull", "additions a string", pull_with(additions="many"), "additions"),
    ("files", "an object", {"files": []}, "list"),
    ("files", "numbers", [1, 2], "0"),
    ("files", "a number filename", [{"filename": 5, "status": "added"}], "filename"),
    ("files", "no filename", [{"status": "added"}], "filename"),
    ("files", "a list patch", [{"filename": "a.py", "patch": ["+x"]}], "patch"),
    ("reviews", "an object", {"reviews": []}, "list"),
    ("reviews", "user a number", [{"user": 7, "state": "APPROVED"}], "user"),
    ("reviews", "state a list", [{"user": None, "state": []}], "state"),
    ("reviews", "a body a number", [{"user": None, "body": 5}], "body"),
    ("reviews", "a naive submitted_at", [{"submitted_at": "2026-07-27T10:00:00"}], "submitted"),
    ("review comments", "no path", [{"body": "x", "created_at": "2026-07-27T00:00:00Z"}], "path"),
    ("review comments", "a string line", [{**INLINE, "line": "7"}], "line"),
    ("review comments", "no created_at", [{"path": "a.py", "body": "x"}], "created_at"),
    (
        "review comments",
        "user type a number",
        [{**INLINE, "user": {"login": "a", "type": 1}}],
        "type",
    ),
    ("conversation", "an object", {"comments": []}, "list"),
    (
        "conversation",
        "a list body",
        [{"body": ["x"], "created_at": "2026-07-27T00:00:00Z"}],
        "body",
    ),
    (
        "conversation",
        "a user without login",
        [{"user": {}, "created_at": "2026-07-27T00:00:00Z"}],
        "login",
    ),
    ("contents", "a directory listing", [{"type": "file", "name": ".gitattributes"}], "list"),
    ("contents", "no type", {"content": "", "encoding": "base64"}, "type"),
    (
        "contents",
        "content a number",
        {"type": "file", "encoding": "base64", "content": 5},
        "content",
    ),
]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize(("name", "answer", "says"), ANY_ENDPOINT, ids=[a[0] for a in ANY_ENDPOINT])
def test_a_malformed_answer_is_a_one_line_service_error(
    endpoint: str, name: str, answer: Any, says: str, source: GitHubSource, github: GitHubStandIn
) -> None:
    path, call = ENDPOINTS[endpoint]
    github.script(path, [answer] * 5)
    with pytest.raises(GitHubUnavailable) as caught:
        call(source)
    assert says in one_line(caught)


@pytest.mark.parametrize(("endpoint", "name", "body", "says"), WRONG_TYPES)
def test_an_answer_of_the_wrong_shape_is_a_one_line_service_error(
    endpoint: str, name: str, body: Any, says: str, source: GitHubSource, github: GitHubStandIn
) -> None:
    path, call = ENDPOINTS[endpoint]
    github.script(path, [(200, {}, body)] * 5)
    with pytest.raises(GitHubUnavailable) as caught:
        call(source)
    message = one_line(caught)
    assert says in message and "malformed" in message


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_body_longer_than_sent_is_retried_then_a_service_error(
    endpoint: str, source: GitHubSource, github: GitHubStandIn
) -> None:
    path, call = ENDPOINTS[endpoint]
    github.script(path, [(200, {"Content-Length": "100000"}, [])] * 3)
    with pytest.raises(GitHubUnavailable, match="cut short") as caught:
        call(source)
    one_line(caught)
    assert source.stop_token is not None and source.stop_token.retries == 2


def test_another_pull_than_asked_is_a_service_error(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [(200, {}, pull_with(number=102))])
    with pytest.raises(GitHubUnavailable, match="#102 when asked for acme/rocket#101"):
        source.pull(REPO, 101)


def test_a_pull_and_reviews_without_user_are_by_ghost(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    reviews = json.loads((PULLS / "101.reviews.json").read_text())
    github.script(r"/pulls/101$", [(200, {}, pull_with(user=None))])
    github.script(r"/pulls/101/reviews$", [(200, {}, [{**reviews[0], "user": None}])])
    pr = source.pull(REPO, 101)
    assert pr.author == "ghost"
    assert [r.author for r in pr.reviews] == ["ghost"]


def test_an_error_answer_with_broken_json_is_a_service_error(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [(502, {}, b'{"message": "Bad Gat')] * 5)
    with pytest.raises(GitHubUnavailable) as caught:
        source.pull_payload(REPO, 101)
    assert "502" in one_line(caught)


# The repository look-up that tells a missing PR from a missing repository


@pytest.mark.parametrize(
    ("answer", "says"),
    [((503, {}, {"message": "Service Unavailable"}), "503"), ("reset", "cannot reach GitHub")],
)
def test_a_failing_repository_look_up_is_not_repo_not_found(
    answer: Any, says: str, source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/repos/acme/rocket$", [answer] * 3)  # every attempt of max_attempts
    with pytest.raises(GitHubUnavailable) as caught:
        source.pull(REPO, 999)
    assert says in one_line(caught)


def test_a_repository_look_up_that_recovers_finds_the_missing_pr(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"^/repos/acme/rocket$", [(502, {}, {"message": "Server Error"})])
    with pytest.raises(PRNotFound):
        source.pull(REPO, 999)


# Connections and what messages show of the URL


def test_the_connection_pool_fits_the_jobs(
    make_source: MakeSource, github: GitHubStandIn, caplog: pytest.LogCaptureFixture
) -> None:
    jobs = 14
    source = make_source(jobs=jobs)
    github.script(r"/pulls/101$", [("sleep", 0.3)] * jobs)
    start = threading.Barrier(jobs)

    def fetch() -> None:
        start.wait()
        source.pull_payload(REPO, 101)

    threads = [threading.Thread(target=fetch) for _ in range(jobs)]
    with caplog.at_level(logging.WARNING, logger="urllib3"):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(github.requests) == jobs
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


@pytest.mark.parametrize(
    "url",
    [
        "http://bob:hunter2@{host}/api/v3",
        "http://{host}/api/v3?access_token=hunter2",
        "http://{host}/api/v3?client_secret=hunter2&x=1#hunter2",
    ],
)
def test_messages_show_no_credentials_of_the_github_url(url: str, make_source: MakeSource) -> None:
    source = make_source(github_url=url.format(host=closed_port_url().removeprefix("http://")))
    with pytest.raises(GitHubUnavailable) as caught:
        source.pull_payload(REPO, 101)
    message = one_line(caught)
    assert "hunter2" not in message and "bob" not in message and "/api/v3" in message


@pytest.mark.parametrize(
    "url", ["ftp://bob:hunter2@example.com", "http://bob:hunter2@", "notaurl?token=hunter2"]
)
def test_a_bad_github_url_is_shown_without_credentials(url: str, github: GitHubStandIn) -> None:
    with pytest.raises(ConfigError) as caught:
        GitHubSource(settings(github, github_url=url))
    assert "hunter2" not in str(caught.value)


# Deadlines: PRHUB_TIMEOUT bounds each whole answer, not each read


def test_a_trickling_search_ends_at_the_deadline(
    make_source: MakeSource, github: GitHubStandIn
) -> None:
    github.script(r"^/search/issues$", [("trickle", 0.5)] * 2)  # a byte every 0.5 s
    source = make_source(timeout=3, max_attempts=2)
    started = time.monotonic()
    with pytest.raises(GitHubUnavailable) as caught:
        week(source)
    spent = time.monotonic() - started
    message = one_line(caught)
    assert "PRHUB_TIMEOUT" in message and "within 3 s" in message and "/search/issues" in message
    assert caught.value.exit_code == 8
    assert len([r for r in github.requests if r["path"] == "/search/issues"]) == 2
    assert source.stop_token is not None and source.stop_token.retries == 1
    assert 6 <= spent < 15


def test_a_trickling_github_fails_every_endpoint_in_time() -> None:
    with GitHubStandIn(FIXTURES / "github", token=GITHUB_TOKEN, trickle=0.5) as server:
        source = GitHubSource(settings(server, timeout=3, max_attempts=1))
        started = time.monotonic()
        try:
            with pytest.raises(GitHubUnavailable, match="PRHUB_TIMEOUT") as caught:
                source.pull(REPO, 101)
        finally:
            source.close()
        assert time.monotonic() - started < 10
        assert not server.errors
    assert "/repos/acme/rocket/pulls/101" in one_line(caught)


def test_a_slow_answer_within_the_deadline_is_read(
    make_source: MakeSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [("trickle", 0.1, 150)])  # whole in about 1.5 s
    started = time.monotonic()
    assert make_source(timeout=3, max_attempts=1).pull_payload(REPO, 101)["number"] == 101
    assert time.monotonic() - started > 1


def test_a_silence_after_the_headers_ends_at_the_deadline(
    make_source: MakeSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [("trickle", 30, 10**6)])  # headers now, the body in 30 s
    started = time.monotonic()
    # 2 s: a loaded machine may take most of one second to connect, which is a connect error.
    with pytest.raises(GitHubUnavailable, match="PRHUB_TIMEOUT"):
        make_source(timeout=2, max_attempts=1).pull_payload(REPO, 101)
    assert time.monotonic() - started < 6


def test_a_read_still_waiting_at_the_deadline_is_cut_there(
    make_source: MakeSource, github: GitHubStandIn
) -> None:
    # Of the 1.8 kB, the first kB comes at 2.5 s and the rest at 5 s: the read that waits for
    # it began at 2.5 s with a timeout of 3 s.
    github.script(r"/pulls/101$", [("trickle", 2.5, 1000)])
    started = time.monotonic()
    with pytest.raises(GitHubUnavailable, match="within 3 s"):
        make_source(timeout=3, max_attempts=1).pull_payload(REPO, 101)
    assert time.monotonic() - started < 4


def test_headers_that_never_come_name_prhub_timeout(
    make_source: MakeSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [("sleep", 3)])
    with pytest.raises(GitHubUnavailable, match="PRHUB_TIMEOUT") as caught:
        make_source(timeout=1, max_attempts=1).pull_payload(REPO, 101)
    assert "within 1 s" in one_line(caught)


def test_a_request_waiting_for_its_slot_is_not_sent_once_halted(
    source: GitHubSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [("sleep", 0.5)] * GITHUB_IN_FLIGHT)
    held = [
        threading.Thread(target=source.pull_payload, args=(REPO, 101))
        for _ in range(GITHUB_IN_FLIGHT)
    ]
    for thread in held:
        thread.start()
    while github.in_flight < GITHUB_IN_FLIGHT:  # every slot taken
        time.sleep(0.01)
    outcome: list[BaseException] = []

    def waiting() -> None:
        try:
            source.pull_payload(REPO, 102)
        except BaseException as exc:  # Halted is a BaseException
            outcome.append(exc)

    late = threading.Thread(target=waiting)
    late.start()
    time.sleep(0.2)  # long enough to be waiting for a slot
    retry.halt()
    for thread in [*held, late]:
        thread.join()
    assert [type(exc) for exc in outcome] == [retry.Halted]
    assert f"/repos/{REPO}/pulls/102" not in github.paths()


# Answers too big to be GitHub's: refused before they fill the memory


@pytest.mark.parametrize("headers", [{}, {"Transfer-Encoding": "chunked"}])
def test_an_answer_over_the_size_limit_is_refused_naming_what_was_fetched(
    source: GitHubSource, github: GitHubStandIn, monkeypatch: pytest.MonkeyPatch, headers: Any
) -> None:
    from prhub.github import source_http

    monkeypatch.setattr(source_http, "MAX_ANSWER", 2**20)
    huge = json.dumps(pull_with(body="x" * 2 * 2**20)).encode()
    github.script(r"/pulls/101$", [(200, headers, huge)] * 5)
    with pytest.raises(GitHubUnavailable) as caught:
        source.pull(REPO, 101)
    assert "/repos/acme/rocket/pulls/101" in one_line(caught) and "over 1 MB" in one_line(caught)


def test_an_answer_under_the_size_limit_is_read(
    source: GitHubSource, github: GitHubStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prhub.github import source_http

    monkeypatch.setattr(source_http, "MAX_ANSWER", 2**20)
    github.script(r"/pulls/101$", [(200, {}, pull_with(body="x" * 2**19))])
    assert source.pull(REPO, 101).body.startswith("x" * 1000)


def test_a_hanging_github_is_given_up_within_the_time_all_attempts_may_take(
    make_source: MakeSource, github: GitHubStandIn
) -> None:
    github.script(r"/pulls/101$", [("sleep", 30)] * 5)
    source = make_source(timeout=1, max_attempts=5, max_retry_time=2.5, retry_base_wait=0.01)
    started = time.monotonic()
    with pytest.raises(GitHubUnavailable):
        source.pull_payload(REPO, 101)
    spent = time.monotonic() - started
    assert len([r for r in github.requests if r["path"].endswith("/pulls/101")]) == 3
    assert 2.3 < spent < 2.8
