"""Input written by strangers: each case a clear line and its exit code, or a clean digest."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from typer.testing import Result

from tests.factories import FIXTURES, GITHUB_TOKEN, cli_env, prhub
from tests.standins import GitHubStandIn, LLMStandIn

PULLS = FIXTURES / "github" / "acme" / "rocket" / "pulls"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of the fixture repository that tests may add odd PRs to."""
    root = tmp_path / "github"
    shutil.copytree(FIXTURES / "github", root)
    return root


def add_pr(data: Path, number: int, files: list[dict], **pull: object) -> None:
    base = json.loads((PULLS / "101.json").read_text())
    text = json.dumps(base).replace("/101", f"/{number}")
    payload = {**json.loads(text), "number": number, "changed_files": len(files), **pull}
    folder = data / "acme" / "rocket" / "pulls"
    (folder / f"{number}.json").write_text(json.dumps(payload))
    (folder / f"{number}.files.json").write_text(json.dumps(files))


def run(github: GitHubStandIn, llm: LLMStandIn, tmp_path: Path, *args: str) -> Result:
    env = cli_env(github, llm, tmp_path / "store.db", PRHUB_REPO="acme/rocket")
    return prhub(env, "summarize", "-q", *args)


def test_a_patch_that_was_not_utf8_is_digested(data, llm, tmp_path):
    # GitHub's JSON can carry lone surrogates where a file's bytes were not UTF-8.
    patch = '@@ -0,0 +1,2 @@\n+caf\udce9 = 1\n+ok = "\ud800"'
    files = [
        {
            "filename": "pkg/latin1.py",
            "status": "added",
            "additions": 2,
            "deletions": 0,
            "patch": patch,
        }
    ]
    add_pr(data, 201, files)
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github:
        result = run(github, llm, tmp_path, "--pr", "201")
    assert result.exit_code == 0, result.stderr
    [body] = llm.bodies
    assert "caf\ufffd = 1" in body["messages"][1]["content"]


def test_a_pr_with_no_files(data, llm, tmp_path):
    add_pr(data, 202, [], additions=0, deletions=0)
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github:
        result = run(github, llm, tmp_path, "--pr", "202", "--format", "json")
    assert result.exit_code == 0, result.stderr
    coverage = json.loads(result.stdout)["meta"]["coverage"]
    assert coverage["full"] == coverage["listed"] == coverage["excluded"] == []


def test_a_pr_with_3000_files_fits_and_leaves_a_trace_of_each(data, llm, tmp_path):
    files = [
        {
            "filename": f"pkg/m{i % 40}/f{i}.py",
            "status": "modified",
            "additions": 3,
            "deletions": 1,
            "patch": f"@@ -1,2 +1,4 @@\n ctx\n-old_{i}\n+new_{i}\n+more_{i}\n+last_{i}",
        }
        for i in range(3000)
    ]
    # GitHub lists at most 3,000 files; the rest are counted, and the digest says so.
    add_pr(data, 203, files, additions=9000, deletions=3000, changed_files=3100)
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github:
        result = run(github, llm, tmp_path, "--pr", "203", "--format", "json")
        file_pages = [r for r in github.requests if r["path"].endswith("/203/files")]
    assert result.exit_code == 0, result.stderr
    assert len(file_pages) == 30  # every page of 100 was read
    cov = json.loads(result.stdout)["meta"]["coverage"]
    assert sum(len(cov[v]) for v in ("full", "excerpt", "listed", "excluded")) == 3000
    assert cov["unlisted"] == 100
    assert 1 < len(llm.bodies) <= 5  # map-reduce within --max-calls, then the digest


def test_a_title_with_markdown_and_html_stays_inert(data, llm, tmp_path):
    title = "[rollout] fix: <img src=x onerror=alert(1)> **bold** | `tick"
    add_pr(data, 204, json.loads((PULLS / "101.files.json").read_text()), title=title)
    with GitHubStandIn(data, token=GITHUB_TOKEN) as github:
        result = run(github, llm, tmp_path, "--pr", "204")
        page = run(github, llm, tmp_path, "--pr", "204", "--format", "html")
    assert result.exit_code == 0, result.stderr
    assert "<img" not in result.stdout and "&lt;img src=x onerror=alert(1)>" in result.stdout
    assert page.exit_code == 0 and "<img src=x" not in page.stdout


class _PlainHTTP(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_tls_failure_is_one_line(llm, tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _PlainHTTP)  # speaks HTTP where HTTPS is expected
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        github = type("G", (), {"url": f"https://127.0.0.1:{server.server_address[1]}"})()
        result = run(github, llm, tmp_path, "--pr", "101")  # type: ignore[arg-type]
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 8, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("prhub: error: TLS failure")
    assert llm.bodies == []


def test_a_read_only_output_directory(github, llm, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    result = run(github, llm, tmp_path, "--pr", "101", "--out", str(blocker / "digest.md"))
    assert result.exit_code == 14
    [line] = result.stderr.splitlines()
    assert line.startswith(f"prhub: error: cannot write {blocker / 'digest.md'}")
    # nothing lost: the digest was kept, so the rerun to a good path makes no new LLM call
    calls = len(llm.bodies)
    again = run(github, llm, tmp_path, "--pr", "101", "--out", str(tmp_path / "ok.md"))
    assert again.exit_code == 0 and len(llm.bodies) == calls


def test_closed_port_is_not_a_traceback(llm, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    github = type("G", (), {"url": f"http://127.0.0.1:{port}"})()
    result = run(github, llm, tmp_path, "--pr", "101")  # type: ignore[arg-type]
    assert result.exit_code == 8 and "Traceback" not in result.output


def test_a_pr_number_past_githubs_range_is_a_usage_error(github, llm, tmp_path):
    result = run(github, llm, tmp_path, "--pr", "100000000000000000000")
    assert result.exit_code == 2 and "is no PR: give its number (1..2147483647)" in result.output
    assert github.requests == []


def test_a_prompt_template_that_is_not_utf8_is_a_config_error(github, llm, tmp_path):
    folder = tmp_path / "prompts" / "digest"
    folder.mkdir(parents=True)
    (folder / "v9.system.j2").write_bytes(b"\xff\xfe not utf-8")
    (folder / "v9.user.j2").write_text("{{ pr.title }}")
    result = run(github, llm, tmp_path, "--pr", "101", "--prompt-dir", str(tmp_path / "prompts"))
    assert result.exit_code == 3, result.output
    assert "prompt digest@v9" in result.stderr and "utf-8" in result.stderr
    assert "Traceback" not in result.output and llm.bodies == []


def test_a_tokenizer_cache_that_is_a_file_only_warns(github, llm, tmp_path, monkeypatch, caplog):
    from prhub.prepare import tokens

    blocker = tmp_path / "cache-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("PRHUB_CACHE_DIR", str(blocker))
    tokens.get_encoding.cache_clear()
    try:
        result = run(github, llm, tmp_path, "--pr", "101")
    finally:
        tokens.get_encoding.cache_clear()
    assert result.exit_code == 0, result.output
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "cannot keep the tokenizer data" in warned and "PRHUB_CACHE_DIR" in warned


def test_a_github_url_that_is_not_a_url_is_a_config_error(github, llm, tmp_path):
    result = run(github, llm, tmp_path, "--pr", "101", "--github-url", "http://[::1")
    assert result.exit_code == 3 and "bad GitHub API URL 'http://[::1'" in result.stderr
