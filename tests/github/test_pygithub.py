"""What prhub/github/pygithub.py takes from PyGithub beyond its public API: each piece named, so
that a PyGithub release that moves one fails here, saying which, and not in a run."""

from __future__ import annotations

import inspect
import re
import threading
from typing import Any

import pytest
import requests
from github import Github
from github.File import File
from github.GithubObject import CompletableGithubObject
from github.PullRequestComment import PullRequestComment
from github.Requester import HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass

from prhub.github import pygithub
from tests.conftest import ROOT

BASE = "http://127.0.0.1:9"  # nothing is sent: every request goes to a recording send


class Recorder:
    """A send that answers every request with `body` and keeps what it was asked."""

    def __init__(self, body: bytes = b"{}") -> None:
        self.body = body
        self.urls: list[str] = []

    def __call__(self, session: requests.Session, verb: str, url: str, **send: Any) -> Any:
        assert isinstance(session, requests.Session) and set(send) == {
            "headers",
            "data",
            "timeout",
            "verify",
        }
        self.urls.append(url)
        answer = requests.Response()
        answer.status_code, answer.url, answer._content = 200, url, self.body
        answer.headers["Content-Type"] = "application/json"
        return answer


def client(base: str = BASE) -> Github:
    return Github(base_url=base, timeout=3, retry=None, user_agent="prhub")


# The private pieces, each named when it is gone


@pytest.mark.parametrize("name", pygithub.CONNECTION_CLASSES)
def test_the_requester_keeps_its_connection_classes_where_the_adapter_replaces_them(
    name: str,
) -> None:
    requester = client().requester
    assert hasattr(requester, name), f"PyGithub's Requester has no {name}: see pygithub.route"
    if name == pygithub.CONNECTION_CLASSES[0]:
        assert name in vars(requester), f"PyGithub's Requester sets no {name} of its own"


@pytest.mark.parametrize("cls", [HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass])
def test_a_connection_has_what_the_routed_one_reads(cls: type) -> None:
    connection = cls("127.0.0.1", 9, timeout=3, retry=None, pool_size=4, verify=True)
    for name in ("session", "protocol", "host", "port", "timeout", "verify"):
        assert hasattr(connection, name), f"PyGithub's {cls.__name__} has no .{name}"
    assert isinstance(connection.session, requests.Session), f"{cls.__name__}.session"
    request = list(inspect.signature(cls.request).parameters)
    assert request == ["self", "verb", "url", "input", "headers", "stream"], (
        f"PyGithub's {cls.__name__}.request takes {request}"
    )


def test_a_comment_of_a_page_keeps_its_data_in_raw_data_underscored() -> None:
    data = {"id": 1, "body": "x", "url": f"{BASE}/repos/a/b/pulls/comments/1"}
    comment = PullRequestComment(client().requester, {}, dict(data))
    assert isinstance(comment, CompletableGithubObject), "a comment completes itself no more"
    assert vars(comment).get("_rawData") == data, "PyGithub keeps no _rawData on its objects"


# What the adapter does with them


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_every_request_of_a_routed_client_goes_through_send(scheme: str) -> None:
    recorder = Recorder(b'{"full_name": "a/b"}')
    github = client(BASE.replace("http", scheme))
    pygithub.route(github, recorder)
    _, data = github.requester.requestJsonAndCheck("GET", "/repos/a/b")
    assert data["full_name"] == "a/b"
    assert recorder.urls == [f"{scheme}://127.0.0.1:9/repos/a/b"]


def test_routing_one_client_leaves_the_others_alone() -> None:
    routed, other = client(), client()
    pygithub.route(routed, Recorder())
    connection = vars(other.requester)[pygithub.CONNECTION_CLASSES[0]]
    assert connection is HTTPRequestsConnectionClass


def test_an_ipv6_host_is_sent_in_brackets() -> None:
    recorder = Recorder()
    github = client("http://[::1]:9")
    pygithub.route(github, recorder)
    github.requester.requestJsonAndCheck("GET", "/repos/a/b")
    assert recorder.urls == ["http://[::1]:9/repos/a/b"]


def test_one_threads_request_never_leaves_as_anothers() -> None:
    # PyGithub shares one connection object between threads, between request() and
    # getresponse(): another thread's request() in that gap must not replace this one's.
    recorder = Recorder()
    github = client()
    pygithub.route(github, recorder)
    routed = vars(github.requester)[pygithub.CONNECTION_CLASSES[0]]
    connection = routed("127.0.0.1", 9, timeout=3, retry=None, pool_size=4, verify=True)
    connection.request("GET", "/pulls/101", None, {})
    other = threading.Thread(target=connection.request, args=("GET", "/pulls/102", None, {}))
    other.start()
    other.join()
    connection.getresponse()
    assert recorder.urls == [f"{BASE}/pulls/101"]


def test_page_data_is_what_the_page_sent_without_another_request() -> None:
    recorder = Recorder()
    github = client()
    pygithub.route(github, recorder)
    comment = {"id": 1, "body": "x", "url": f"{BASE}/repos/a/b/pulls/comments/1"}
    file = {"filename": "a.py", "status": "added"}
    assert pygithub.page_data(PullRequestComment(github.requester, {}, dict(comment))) == comment
    assert pygithub.page_data(File(github.requester, {}, dict(file))) == file
    assert recorder.urls == []


# Only the adapter touches PyGithub's private names

PRIVATE = re.compile(r"_Requester|_rawData|__connection")


def test_no_module_but_the_adapter_touches_pygithubs_private_names() -> None:
    adapter = ROOT / "prhub" / "github" / "pygithub.py"
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "prhub").rglob("*.py"))
        if path != adapter
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert not found, "only prhub/github/pygithub.py may touch these:\n" + "\n".join(found)
