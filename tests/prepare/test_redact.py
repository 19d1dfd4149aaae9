"""Secret redaction: every kind is caught, ordinary code is left alone."""

from __future__ import annotations

import json
import shutil
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from prhub.model import Comment, FileChange, PullRequest
from prhub.prepare import redact
from prhub.prepare.redact import entropy, is_env_file, looks_random, scrub
from prhub.store.store import Store
from tests.factories import (
    AWS_ID,
    CASES,
    FIXTURES,
    GITHUB,
    GITHUB_OAUTH,
    GITHUB_TOKEN,
    KEY_BODY,
    OPENAI,
    PASSWORD,
    PRIVATE_KEY,
    digest_of,
    settings,
)
from tests.standins import GitHubStandIn, LLMStandIn


@pytest.mark.parametrize(("kind", "text", "secret"), CASES)
def test_each_kind_is_redacted(kind: str, text: str, secret: str) -> None:
    out, counts = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts == {kind: 1}


def test_url_credentials_keep_scheme_and_host() -> None:
    out, _ = redact(f"git clone https://bob:{PASSWORD}@git.example.com/repo.git")
    assert out == "git clone https://[REDACTED:url_credentials]@git.example.com/repo.git"


def test_private_key_in_a_diff_is_one_marker() -> None:
    lines = PRIVATE_KEY.split("\n")
    patch = "@@ -0,0 +1,4 @@\n+x = 1\n" + "\n".join("+" + line for line in lines) + "\n+y = 2"
    out, counts = redact(patch)
    assert out == "@@ -0,0 +1,4 @@\n+x = 1\n+[REDACTED:private_key]\n+y = 2"
    assert counts == {"private_key": 1}


def test_unterminated_private_key_is_redacted_to_the_end() -> None:
    out, counts = redact("+-----BEGIN OPENSSH " + "PRIVATE KEY-----\n+" + KEY_BODY)
    assert KEY_BODY not in out and counts == {"private_key": 1}


def test_env_file_values() -> None:
    patch = "@@ -1,2 +1,3 @@\n DEBUG=1\n-DB_URL=old-value\n+DB_URL=new-value\n+EMPTY=\n# note"
    out, counts = redact(patch, env_file=True)
    assert "old-value" not in out and "new-value" not in out
    assert " DEBUG=[REDACTED:env_value]" in out and "+EMPTY=\n" in out
    assert counts == {"env_value": 3}
    assert redact(patch)[1] == {}  # the same lines in an ordinary file are left alone


def test_env_file_names() -> None:
    assert is_env_file(".env") and is_env_file("deploy/.env.prod") and is_env_file("local.env")
    assert not is_env_file("env.py") and not is_env_file("docs/environment.md")


def test_a_secret_is_counted_once() -> None:
    out, counts = redact(f'token = "{GITHUB}"')
    assert out == 'token = "[REDACTED:github_token]"'
    assert counts == {"github_token": 1}


def test_several_secrets_in_one_text() -> None:
    text = f"a={GITHUB}\nb={AWS_ID}\nc={GITHUB_OAUTH}\n"
    out, counts = redact(text)
    assert counts == {"github_token": 2, "aws_access_key_id": 1}
    assert out.count("[REDACTED:") == 3


ORDINARY = [
    "token = tokenizer.encode(x)",
    "password: str",
    "token: str",
    'api_key=os.environ["OPENAI_API_KEY"]',
    'password = os.environ["DB_PASSWORD"]',
    'token = "abc"',
    "max_tokens: 1000",
    'pad_token = "<|endoftext|>"',
    'tokenizer_path = "Qwen/Qwen2.5-7B-Instruct"',
    'password: "your_password_here"',
    "if token == expected_token_value_here:",
    'commit = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"',
    'request_id = "123e4567-e89b-12d3-a456-426614174000"',
    "url = 'https://user@example.com/path'",
    "dsn = 'postgres://{user}:{password}@{host}/db'",
    "risk-aware-scheduling-with-4-experts-enabled",
    "task-0123456789abcdefghij",
    "See https://github.com/verl-project/verl/pull/7224 for details.",
    "secret_key_path: /etc/keys/service.pem",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_is_left_alone(text: str) -> None:
    assert redact(text) == (text, {})


def test_entropy_threshold() -> None:
    assert entropy("aaaa") == 0
    assert looks_random(PASSWORD)
    assert not looks_random("hunter2")  # too short
    assert not looks_random("abcabcabcabcabc123")  # too regular


def test_scrub_replaces_secrets_in_every_field_and_counts_them() -> None:
    token = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
    pr = PullRequest(
        repo="o/r",
        number=1,
        title=f"fix: drop {token}",
        body=f"see https://bob:{PASSWORD}@git.example.com/x",
        author="me",
        created_at=datetime(2026, 8, 1, tzinfo=UTC),
        files=[
            FileChange(path=".env", status="added", additions=1, patch=f"+DB_URL={PASSWORD}"),
            FileChange(path="a.py", status="modified", additions=1, patch=f"+t = '{token}'"),
        ],
        redactions={"github_token": 1},
    )
    kept = scrub(pr)
    dumped = kept.model_dump_json()
    assert token not in dumped and PASSWORD not in dumped
    assert kept.files[0].patch is not None and "[REDACTED:" in kept.files[0].patch
    # What an earlier pass counted is kept, and this pass adds its own.
    assert kept.redactions["github_token"] == 3
    assert sum(kept.redactions.values()) >= 5


def test_scrub_replaces_secrets_in_review_discussion_and_counts_them() -> None:
    def said(kind: Any, body: str, **extra: Any) -> Comment:
        return Comment(kind=kind, author="a", body=body, **extra)

    pr = PullRequest(
        repo="o/r",
        number=1,
        title="t",
        author="me",
        created_at=datetime(2026, 8, 1, tzinfo=UTC),
        discussion=[
            said("review", f"please rotate {GITHUB}", state="COMMENTED"),
            said("inline", f"OPENAI_API_KEY={OPENAI} works here", path="a.py", line=3),
            said("conversation", f"curl https://bob:{PASSWORD}@git.example.com"),
            said("conversation", "nothing to hide"),
        ],
    )
    kept = scrub(pr)
    dumped = kept.model_dump_json()
    assert GITHUB not in dumped and OPENAI not in dumped and PASSWORD not in dumped
    assert [c.body.count("[REDACTED:") for c in kept.discussion] == [1, 1, 1, 0]
    assert kept.redactions == {"github_token": 1, "api_key": 1, "url_credentials": 1}
    assert (kept.discussion[1].path, kept.discussion[1].line) == ("a.py", 3)


def test_a_token_pasted_in_comments_reaches_neither_the_store_nor_the_model(
    tmp_path: Path, llm: LLMStandIn
) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURES / "github" / "acme" / "booster", data / "acme" / "booster")
    pulls = data / "acme" / "booster" / "pulls"
    for name, index in [
        ("12.reviews.json", 2),
        ("12.comments.json", 1),
        ("12.issue_comments.json", 0),
    ]:
        items = json.loads((pulls / name).read_text())
        items[index]["body"] += f"\n\nuse token {GITHUB} for the mirror"
        (pulls / name).write_text(json.dumps(items))
    with GitHubStandIn(data, token=GITHUB_TOKEN, page_limit=2) as github:
        config = settings(github, llm, tmp_path, repo="acme/booster")
        made = digest_of(12, config)
    with closing(Store(config.store)) as store:
        kept = store.pull("acme/booster", 12)
    assert kept is not None
    pr = kept[0]
    assert pr.redactions == {"github_token": 3}
    assert sum("[REDACTED:github_token]" in c.body for c in pr.discussion) == 3
    assert GITHUB not in made.model_dump_json()
    prompts = json.dumps(llm.bodies, ensure_ascii=False)
    assert "use token [REDACTED:github_token] for the mirror" in prompts  # the comments went in
    assert GITHUB not in prompts
    for file in tmp_path.glob("store.db*"):  # the database and its write-ahead log
        assert GITHUB.encode() not in file.read_bytes()
