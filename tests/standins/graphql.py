"""What prhub posts to the GitHub stand-in: discussions through GitHub's GraphQL API (the part
of its schema a week's discussion takes, executed by graphql-core, so a query GitHub would
refuse is refused) and issues through REST, where a repository has Discussions off."""

from __future__ import annotations

import re
import threading
import zlib
from typing import TYPE_CHECKING, Any

from graphql import GraphQLError, build_schema, graphql_sync

from tests.standins.server import Answer

if TYPE_CHECKING:
    from tests.standins.github import GitHubStandIn

API = "https://api.github.com"
WEB = "https://github.com"
# GitHub's names and types, for the fields a discussion takes; nothing else is served.
SCHEMA = build_schema("""
type Query {
  repository(owner: String!, name: String!, followRenames: Boolean = true): Repository
}
type Mutation {
  createDiscussion(input: CreateDiscussionInput!): CreateDiscussionPayload
  updateDiscussion(input: UpdateDiscussionInput!): UpdateDiscussionPayload
}
type Repository {
  id: ID!
  name: String!
  nameWithOwner: String!
  url: String!
  hasDiscussionsEnabled: Boolean!
  hasIssuesEnabled: Boolean!
  discussionCategories(first: Int, after: String, last: Int, before: String):
    DiscussionCategoryConnection!
  discussion(number: Int!): Discussion
}
type DiscussionCategoryConnection {
  nodes: [DiscussionCategory]
  totalCount: Int!
  pageInfo: PageInfo!
}
type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! endCursor: String }
type DiscussionCategory {
  id: ID!
  name: String!
  slug: String!
  emoji: String!
  description: String
  isAnswerable: Boolean!
}
type Discussion {
  id: ID!
  number: Int!
  title: String!
  body: String!
  url: String!
  category: DiscussionCategory!
  repository: Repository!
}
input CreateDiscussionInput {
  repositoryId: ID!
  categoryId: ID!
  title: String!
  body: String!
  clientMutationId: String
}
type CreateDiscussionPayload { clientMutationId: String discussion: Discussion }
input UpdateDiscussionInput {
  discussionId: ID!
  title: String
  body: String
  categoryId: ID
  clientMutationId: String
}
type UpdateDiscussionPayload { clientMutationId: String discussion: Discussion }
""")
# A new repository's categories, as GitHub makes them.
CATEGORIES = ["Announcements", "General", "Ideas", "Polls", "Q&A", "Show and tell"]


def _node(prefix: str, text: str) -> str:
    """A node id in GitHub's look: a type prefix and an opaque tail."""
    return f"{prefix}_kwDO{zlib.crc32(text.encode()):08X}"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class Posts:
    """Discussions and issues posted to the stand-in's repositories, kept as GitHub keeps them:
    `discussions` and `issues` (dicts of their fields), `off` (repositories with Discussions
    off) and `categories` (each repository's, by its full name in lower case)."""

    def __init__(self, standin: GitHubStandIn) -> None:
        self.standin = standin
        self.off: set[str] = set()
        self.categories: dict[str, list[str]] = {}
        self.discussions: list[dict[str, Any]] = []
        self.issues: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def answer(self, request: dict[str, Any]) -> Answer | None:
        """The answer to a request about posts; None for any other request."""
        path, method = request["path"], request["method"]
        if path in ("/graphql", "/api/graphql") and method == "POST":
            return self._graphql(request["body"] or {})
        match = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues(?:/(\d+))?", path)
        if not match or not (found := self.standin._folder(match[1], match[2])):
            return None
        full = "/".join(found)
        if match[3] is None:
            return self._open_issue(full, request["body"] or {}) if method == "POST" else None
        issue = next((i for i in self.issues if i["number"] == int(match[3])), None)
        if issue is None or issue["repo"] != full:
            return None  # a PR's issue, served by the stand-in
        if method == "PATCH":
            body = request["body"] or {}
            with self._lock:
                issue.update({k: body[k] for k in ("title", "body") if k in body})
        return 200, {}, self._issue(issue)

    def _graphql(self, body: dict[str, Any]) -> Answer:
        query, variables = body.get("query"), body.get("variables") or {}
        if not isinstance(query, str):
            errors = [{"message": "A query attribute must be specified and must be a string."}]
            return 200, {}, {"errors": errors}
        root = {
            "repository": lambda info, owner, name, **_: self._repository(owner, name),
            "createDiscussion": lambda info, input: self._create(input),
            "updateDiscussion": lambda info, input: self._update(input),
        }
        with self._lock:
            done = graphql_sync(SCHEMA, query, root_value=root, variable_values=variables)
        answer: dict[str, Any] = {}
        if done.errors:
            answer["errors"] = [_error(e) for e in done.errors]
        if done.data is not None or not done.errors:
            answer["data"] = done.data
        return 200, {}, answer

    def _number(self, full: str) -> int:
        """The next number of the repository: its issues, PRs and discussions share them."""
        pulls = self.standin._dir(*full.split("/")) / "pulls"
        taken = [int(p.stem) for p in pulls.glob("*.json") if p.stem.isdigit()]
        taken += [x["number"] for x in (*self.discussions, *self.issues) if x["repo"] == full]
        return max(taken, default=0) + 1

    def _categories(self, full: str) -> list[dict[str, Any]]:
        names = self.categories.get(full.lower(), CATEGORIES)
        return [
            {
                "id": _node("DIC", f"{full}:{n}"),
                "name": n,
                "slug": _slug(n),
                "emoji": ":speech_balloon:",
                "description": None,
                "isAnswerable": n == "Q&A",
            }
            for n in names
        ]

    def _repository(self, owner: str, name: str) -> dict[str, Any]:
        found = self.standin._folder(owner, name)
        if not found:
            raise _not_found(f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        full = "/".join(found)
        categories = self._categories(full)

        def discussion(info: Any, number: int) -> dict[str, Any]:
            made = [d for d in self.discussions if d["repo"] == full and d["number"] == number]
            if not made:
                raise _not_found(f"Could not resolve to a Discussion with the number of {number}.")
            return self._discussion(made[0])

        return {
            "id": _node("R", full),
            "name": found[1],
            "nameWithOwner": full,
            "url": f"{WEB}/{full}",
            "hasDiscussionsEnabled": full.lower() not in self.off,
            "hasIssuesEnabled": True,
            "discussionCategories": lambda info, **_: {
                "nodes": categories,
                "totalCount": len(categories),
                "pageInfo": {"hasNextPage": False, "hasPreviousPage": False, "endCursor": None},
            },
            "discussion": discussion,
        }

    def _repo_of(self, node: str) -> str:
        folders = [f"{d.parent.name}/{d.name}" for d in self.standin.data_dir.glob("*/*")]
        for full in [*self.standin.mirrors, *folders]:
            if _node("R", full) == node:
                return full
        raise _not_found(f"Could not resolve to a node with the global id of '{node}'")

    def _category(self, full: str, node: str) -> dict[str, Any]:
        for category in self._categories(full):
            if category["id"] == node:
                return category
        raise _not_found(f"Could not resolve to a node with the global id of '{node}'")

    def _discussion(self, d: dict[str, Any]) -> dict[str, Any]:
        return {
            **d,
            "category": self._category(d["repo"], d["category"]),
            "repository": self._repository(*d["repo"].split("/")),
        }

    def _create(self, given: dict[str, Any]) -> dict[str, Any]:
        full = self._repo_of(given["repositoryId"])
        if full.lower() in self.off:
            raise GraphQLError(
                "Discussions are disabled for this repository", extensions={"type": "FORBIDDEN"}
            )
        self._category(full, given["categoryId"])
        number = self._number(full)
        made = {
            "id": _node("D", f"{full}#{number}"),
            "number": number,
            "title": given["title"],
            "body": given["body"],
            "url": f"{WEB}/{full}/discussions/{number}",
            "category": given["categoryId"],
            "repo": full,
        }
        self.discussions.append(made)
        return {
            "clientMutationId": given.get("clientMutationId"),
            "discussion": self._discussion(made),
        }

    def _update(self, given: dict[str, Any]) -> dict[str, Any]:
        made = next((d for d in self.discussions if d["id"] == given["discussionId"]), None)
        if made is None:
            raise _not_found(
                f"Could not resolve to a node with the global id of '{given['discussionId']}'"
            )
        if given.get("categoryId"):
            made["category"] = self._category(made["repo"], given["categoryId"])["id"]
        made.update({k: given[k] for k in ("title", "body") if given.get(k) is not None})
        return {
            "clientMutationId": given.get("clientMutationId"),
            "discussion": self._discussion(made),
        }

    def _open_issue(self, full: str, body: dict[str, Any]) -> Answer:
        if not isinstance(body.get("title"), str) or not body["title"]:
            errors = [{"resource": "Issue", "code": "missing_field", "field": "title"}]
            return 422, {}, {"message": "Validation Failed", "errors": errors, "status": "422"}
        with self._lock:
            issue = {
                "number": self._number(full),
                "title": body["title"],
                "body": body.get("body"),
                "repo": full,
            }
            self.issues.append(issue)
        return 201, {"Location": f"{API}/repos/{full}/issues/{issue['number']}"}, self._issue(issue)

    def _issue(self, issue: dict[str, Any]) -> dict[str, Any]:
        full, number = issue["repo"], issue["number"]
        url = f"{API}/repos/{full}/issues/{number}"
        return {
            "url": url,
            "repository_url": f"{API}/repos/{full}",
            "comments_url": f"{url}/comments",
            "html_url": f"{WEB}/{full}/issues/{number}",
            "id": zlib.crc32(f"{full}#{number}".encode()),
            "node_id": _node("I", f"{full}#{number}"),
            "number": number,
            "title": issue["title"],
            "body": issue["body"],
            "user": {"login": "prhub-bot", "id": 1, "type": "User"},
            "labels": [],
            "state": "open",
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": 0,
            "created_at": "2026-08-03T09:00:00Z",
            "updated_at": "2026-08-03T09:00:00Z",
            "closed_at": None,
            "author_association": "OWNER",
            "state_reason": None,
        }


def _not_found(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"type": "NOT_FOUND"})


def _error(error: GraphQLError) -> dict[str, Any]:
    """An error as GitHub words it: its type beside the message, not in extensions."""
    shown = dict(error.formatted)
    extensions = dict(shown.pop("extensions", None) or {})
    if "type" in extensions:
        return {"type": extensions.pop("type"), **shown}
    return {**shown, **({"extensions": extensions} if extensions else {})}
