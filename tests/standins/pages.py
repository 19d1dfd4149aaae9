"""A GitHub Pages stand-in on 127.0.0.1: a folder served under a project site's path, as
https://OWNER.github.io/REPO/ serves the site a workflow deployed."""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from tests.standins.server import Answer, StandIn

__all__ = ["PagesStandIn"]


class PagesStandIn(StandIn):
    """Serves `root` at `.url` (ending in `/REPO`, no slash); a folder's page is its index.html,
    anything else missing is a 404 page, as Pages answers."""

    def __init__(self, root: Path, *, repo: str = "rocket", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root
        self.prefix = f"/{repo}"

    def script(self, path_regex: str, responses: list[Any]) -> None:
        """Answer requests whose path matches with these (status, headers, body) first."""
        self._queue(path_regex, responses)

    def headers(self, request: dict[str, Any]) -> dict[str, str]:
        return {"Content-Type": "text/html; charset=utf-8"}

    def answer(self, request: dict[str, Any]) -> Answer:
        path: str = request["path"]
        if not (path == self.prefix or path.startswith(self.prefix + "/")):
            return self._not_found()
        inside = path.removeprefix(self.prefix).lstrip("/")
        if ".." in Path(inside).parts:
            return self._not_found()
        file = self.root / inside
        if file.is_dir() and not path.endswith("/"):
            return 301, {"Location": path + "/"}, b""  # as Pages does: links resolve inside it
        if file.is_dir():
            file = file / "index.html"
        if not file.is_file():
            return self._not_found()
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        return 200, {"Content-Type": kind}, file.read_bytes()

    @staticmethod
    def _not_found() -> Answer:
        return 404, {}, b"<!doctype html><title>404</title><p>File not found</p>\n"
