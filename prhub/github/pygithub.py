"""What prhub needs of PyGithub beyond its public API, all here: tests/github/test_pygithub.py names
each private piece a PyGithub release moved."""

from __future__ import annotations

import threading
from typing import Any, Protocol

import requests
from github import Github
from github.GithubObject import CompletableGithubObject, GithubObject
from github.Requester import (
    HTTPRequestsConnectionClass,
    HTTPSRequestsConnectionClass,
    RequestsResponse,
)

# Where a Requester keeps the classes it builds its connections from: the one for its base URL,
# and those for a URL on another host (a redirect, a page).
CONNECTION_CLASSES = (
    "_Requester__connectionClass",
    "_Requester__httpConnectionClass",
    "_Requester__httpsConnectionClass",
)


class Send(Protocol):
    """Sends one of PyGithub's requests through the session of the connection it chose."""

    def __call__(
        self,
        session: requests.Session,
        verb: str,
        url: str,
        *,
        headers: dict[str, str],
        data: Any,
        timeout: float | None,
        verify: Any,
    ) -> requests.Response: ...


def route(client: Github, send: Send) -> None:
    """Makes `send` send every request of `client`, and of no other client, in the thread that
    asks for it."""
    # PyGithub builds its requests sessions inside its connection classes and offers no hook;
    # it looks the classes up on the requester, so replacing them there changes this client
    # only (its injectConnectionClasses would change every client in the process).
    state = vars(client.requester)
    if CONNECTION_CLASSES[0] not in state:
        raise RuntimeError(
            f"this PyGithub version has no Requester.{CONNECTION_CLASSES[0]}: cannot route its "
            "requests"
        )
    own = {"send": staticmethod(send)}
    http = type("RoutedHTTP", (_Routed, HTTPRequestsConnectionClass), own)
    https = type("RoutedHTTPS", (_Routed, HTTPSRequestsConnectionClass), own)
    secure = client.requester.base_url.startswith("https:")
    state.update(zip(CONNECTION_CLASSES, (https if secure else http, http, https), strict=True))


class _Routed:
    """A PyGithub connection whose requests `send` makes, each kept by the thread that asks."""

    send: Send
    session: requests.Session
    protocol: str
    host: str
    port: int
    timeout: int | None
    verify: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._asked = threading.local()

    def request(
        self, verb: str, url: str, input: Any, headers: dict[str, str], stream: bool = False
    ) -> None:
        # PyGithub shares one connection object between threads and keeps the request on it
        # until getresponse(): kept per thread, one thread's request never leaves as another's.
        self._asked.request = (verb, url, input, headers)

    def getresponse(self) -> RequestsResponse:
        verb, url, data, headers = self._asked.request
        # PyGithub keeps the host without the brackets an IPv6 literal needs in a URL.
        host = f"[{self.host}]" if ":" in self.host else self.host
        answer = self.send(
            self.session,
            verb,
            f"{self.protocol}://{host}:{self.port}{url}",
            headers=headers,
            data=data,
            timeout=self.timeout,
            verify=self.verify,
        )
        return RequestsResponse(answer)


def page_data(item: GithubObject) -> dict[str, Any]:
    """An item of a paginated list as its page sent it: its raw_data, except that raw_data of a
    completable item (a comment) first fetches the item again, so its page's data is read."""
    if isinstance(item, CompletableGithubObject):
        return item._rawData  # type: ignore[no-any-return]
    return item.raw_data
