"""A commit's pull requests, as GitHub associates them: what names a revert by its SHA."""

from __future__ import annotations

from typing import Any

from github import GithubException

from prhub.github.source import GitHubSource


def commit_pulls(source: GitHubSource, repo: str, sha: str) -> list[int]:
    """The merged PRs GitHub associates with commit `sha` of `repo` (a squash merge's own PR);
    none when GitHub knows no such commit. One request."""

    def fetch() -> list[Any]:
        try:
            _, data = source.client.requester.requestJsonAndCheck(
                "GET", f"/repos/{repo}/commits/{sha}/pulls"
            )
        except GithubException as exc:
            if exc.status in (404, 409, 422):  # no such commit, or an empty repository
                return []
            raise
        return data if isinstance(data, list) else []

    found = source._call(fetch, f"looking up the PR of commit {sha} in {repo}", repo=repo)
    return [p["number"] for p in found if isinstance(p, dict) and p.get("merged_at")]
