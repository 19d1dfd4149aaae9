"""GitHub's REST payloads as prhub's model: a pull with its files, reviews and discussion."""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Any, Literal

from prhub.errors import GitHubUnavailable
from prhub.model import Comment, FileChange, PullRequest, Review

Kind = Literal["review", "inline", "conversation"]
_REFERENCE = re.compile(
    r"(?:(?<![\w/])#|github\.com/[\w.-]+/[\w.-]+/(?:pull|issues)/)(\d{1,7})\b", re.IGNORECASE
)


def references(text: str, own: int | None = None) -> list[int]:
    """Issue and PR numbers a text refers to ("fixes #12", "#34", a GitHub URL), in order."""
    found = dict.fromkeys(int(m) for m in _REFERENCE.findall(text or ""))
    return [n for n in found if n != own]


def pull_request_from_payload(
    repo: str,
    pull: dict[str, Any],
    files: list[dict[str, Any]],
    reviews: list[dict[str, Any]] | None = None,
    inline: list[dict[str, Any]] | None = None,
    conversation: list[dict[str, Any]] | None = None,
) -> PullRequest:
    """A PullRequest from GitHub REST payloads: the pull, its files, reviews, inline review
    comments and conversation comments."""
    number = pull["number"]
    title, body = _text(pull.get("title")), _text(pull.get("body"))
    return PullRequest(
        repo=repo,
        number=number,
        title=title,
        body=body,
        author=(pull.get("user") or {}).get("login", "ghost"),
        author_association=pull.get("author_association"),
        labels=[label["name"] for label in pull.get("labels") or []],
        url=pull.get("html_url") or "",
        created_at=pull["created_at"],
        merged_at=pull.get("merged_at"),
        merged=bool(pull.get("merged") or pull.get("merged_at")),
        merge_commit_sha=pull.get("merge_commit_sha") if pull.get("merged_at") else None,
        base_ref=(pull.get("base") or {}).get("ref", ""),
        head_ref=(pull.get("head") or {}).get("ref", ""),
        head_sha=(pull.get("head") or {}).get("sha", ""),
        additions=pull.get("additions", 0),
        deletions=pull.get("deletions", 0),
        changed_files=pull.get("changed_files", len(files)),
        files=[
            FileChange(
                path=_text(f["filename"]),
                previous_path=_text(f.get("previous_filename")) or None,
                status=f.get("status", "modified"),
                additions=f.get("additions", 0),
                deletions=f.get("deletions", 0),
                patch=None if f.get("patch") is None else _text(f["patch"]),
            )
            for f in files
        ],
        reviews=[
            Review(author=(r.get("user") or {}).get("login", "ghost"), state=r.get("state", ""))
            for r in reviews or []
        ],
        discussion=discussion(reviews or [], inline or [], conversation or []),
        referenced_issues=references(f"{title}\n{body}", own=number),
    )


def discussion(
    reviews: list[dict[str, Any]],
    inline: list[dict[str, Any]],
    conversation: list[dict[str, Any]],
) -> list[Comment]:
    """Every review body, inline comment and conversation comment that says something,
    oldest first (what has no time, a pending review, last)."""
    said = [
        *(_comment("review", r, r.get("submitted_at"), state=r.get("state")) for r in reviews),
        *(
            _comment(
                "inline",
                c,
                c.get("created_at"),
                path=_text(c.get("path")) or None,
                # line is None once the diff moved past it; original_line still names it.
                line=c.get("line") if c.get("line") is not None else c.get("original_line"),
            )
            for c in inline
        ),
        *(_comment("conversation", c, c.get("created_at")) for c in conversation),
    ]
    kept = [c for c in said if c.body.strip()]
    # A stable sort: comments of one time keep GitHub's order.
    return sorted(kept, key=lambda c: (c.created_at is None, _seconds(c.created_at)))


def _seconds(when: datetime | None) -> float:
    return when.timestamp() if when else 0.0


def _comment(kind: Kind, raw: dict[str, Any], when: str | None, **extra: Any) -> Comment:
    user = raw.get("user") or {}
    login = user.get("login", "ghost")  # a deleted account has no user: GitHub's "ghost"
    return Comment(
        kind=kind,
        author=login,
        association=raw.get("author_association") or "NONE",
        bot=user.get("type") == "Bot" or login.endswith("[bot]"),
        body=_text(raw.get("body")),
        created_at=datetime.fromisoformat(when) if when else None,
        **extra,
    )


def attributes_text(repo: str, content: dict[str, Any]) -> str:
    """The text of a .gitattributes file from GitHub's contents answer."""
    if content.get("type") != "file":  # a symlink or submodule: no attributes to read
        return ""
    if content.get("encoding") != "base64":
        raise GitHubUnavailable(
            f"GitHub did not send the text of {repo}'s .gitattributes "
            f"(encoding {content.get('encoding') or 'none'!r}): rerun later"
        )
    try:
        data = base64.b64decode(content.get("content") or "", validate=False)
    except (binascii.Error, ValueError):
        raise GitHubUnavailable(
            f"GitHub sent {repo}'s .gitattributes in broken base64: rerun later"
        ) from None
    return _text(data.decode("utf-8", "replace"))


def _text(value: str | None) -> str:
    """Text safe to store and send: a lone surrogate (bytes that were not UTF-8) becomes U+FFFD."""
    return (value or "").encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def same_time(a: str | None, b: Any) -> bool:
    """Whether two GitHub timestamps name the same moment."""
    if not a or not b or not isinstance(b, str):
        return False
    return datetime.fromisoformat(a.replace("Z", "+00:00")) == datetime.fromisoformat(
        b.replace("Z", "+00:00")
    )


def version(payload: dict[str, Any]) -> str:
    """What identifies a pull payload's content, as PullRequest.version does."""
    head = (payload.get("head") or {}).get("sha", "")
    return (payload.get("merge_commit_sha") if payload.get("merged_at") else None) or head
