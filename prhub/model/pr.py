"""The pull request as prhub reads it from GitHub, and as it is prepared for prompts."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel


class FileChange(BaseModel):
    """One changed file of a PR as GitHub reports it."""

    path: str
    previous_path: str | None = None
    status: str  # added, removed, modified, renamed, copied, changed, unchanged
    additions: int = 0
    deletions: int = 0
    # None when GitHub sent no patch: a binary file or a diff too large for the API.
    patch: str | None = None
    # What the repository's .gitattributes says of it (linguist-generated / linguist-vendored).
    marked: Literal["generated", "vendored"] | None = None


class Review(BaseModel):
    author: str
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED


class Comment(BaseModel):
    """One piece of review discussion: a review's body, an inline comment or a conversation one."""

    kind: Literal["review", "inline", "conversation"]
    author: str
    # GitHub's author_association: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
    association: str = "NONE"
    bot: bool = False  # the account is a bot (user.type "Bot" or a "[bot]" login)
    body: str
    path: str | None = None  # inline comments: the file and line they are on
    line: int | None = None
    state: str | None = None  # reviews: APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
    created_at: datetime | None = None


class PullRequest(BaseModel):
    """A pull request with everything prhub reads from GitHub."""

    repo: str
    number: int
    title: str
    body: str = ""
    author: str
    author_association: str | None = None
    labels: list[str] = []
    url: str = ""
    created_at: datetime
    merged_at: datetime | None = None
    merged: bool = False
    merge_commit_sha: str | None = None
    base_ref: str = ""
    head_ref: str = ""
    head_sha: str = ""
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    files: list[FileChange] = []
    reviews: list[Review] = []
    discussion: list[Comment] = []  # oldest first
    referenced_issues: list[int] = []
    # Secrets already replaced by markers before this PR was kept, per kind.
    redactions: dict[str, int] = {}

    @property
    def version(self) -> str:
        """What identifies this PR's content: the merge commit, else the head commit."""
        return self.merge_commit_sha or self.head_sha


View = Literal["full", "excerpt", "listed", "excluded"]


Relation = Literal["referenced", "reverted", "same_files"]


class Neighbour(BaseModel):
    """A PR a digest's request names beside its own: one its text references, the one it
    reverts, or one of the same period that changed the same files."""

    number: int
    title: str
    merged_at: datetime | None = None
    relation: Relation
    files: list[str] = []  # same_files: the paths both changed
    digest_title: str = ""  # its stored digest's one-line title, when there is one
    verdict: str = ""  # and that digest's verdict


class FileView(BaseModel):
    """How much of one file the model was shown, and why."""

    path: str
    status: str
    additions: int = 0
    deletions: int = 0
    view: View
    reason: str = ""
    lines_seen: int = 0  # changed lines the model saw
    # Generated, vendored or a lock file: listed by name, its diff not sent, its lines not
    # counted as hand-written.
    generated: bool = False


class Coverage(BaseModel):
    """What part of the diff the model saw; the four lists partition the PR's files."""

    full: list[str] = []
    excerpt: list[str] = []
    listed: list[str] = []
    excluded: list[str] = []
    # Of the excluded: generated, vendored and lock files, named to the model, diff not sent.
    generated: list[str] = []
    lines_seen: int = 0  # hand-written changed lines the model saw
    lines_total: int = 0  # hand-written changed lines: generated files' lines not counted
    lines_generated: int = 0
    unlisted: int = 0  # files GitHub counted but did not list (it lists at most 3,000)
    comments: int = 0  # review discussion entries with text
    comments_shown: int = 0  # of those, how many the budget let the model see
    notes_shortened: int = 0  # chunk notes cut to their length in a map-reduce (digest.trim_notes)

    @property
    def share_seen(self) -> float:
        return self.lines_seen / self.lines_total if self.lines_total else 1.0


class PreparedPR(BaseModel):
    """A PR ready for prompts: redacted text, ranked files and diff chunks within budget."""

    repo: str
    number: int
    title: str  # redacted
    body: str  # redacted, truncated to its budget
    author: str
    labels: list[str] = []
    base_ref: str = ""
    head_ref: str = ""
    additions: int = 0
    deletions: int = 0
    reviews: list[Review] = []
    referenced_issues: list[int] = []
    files: list[FileView]
    # Each chunk is the diff text of one call; a PR that fits one call has exactly one.
    chunks: list[str]
    # A compact list of every file with its view, for the final call after map-reduce.
    index: str
    coverage: Coverage
    redactions: dict[str, int] = {}
    facts: list[str] = []  # what prhub computed, told to the model as fact (prepare.facts)
