"""The store's schema, as numbered migrations: the database's user_version says how many ran."""

from __future__ import annotations

# Numbered migrations: the database's user_version says how many have run. Never edit one.
# Each runs in one transaction with its version bump; statements are split at ";", so none may
# hold a ";" inside a string.
MIGRATIONS = [
    """
    CREATE TABLE pulls (
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        version TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL,
        fetched_at TEXT NOT NULL,
        PRIMARY KEY (repo, number)
    );
    CREATE TABLE digests (
        key TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX digests_pr ON digests (repo, number);
    """,
    """
    CREATE TABLE narratives (
        key TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        dropped INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        command TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        counts TEXT NOT NULL DEFAULT '{}',
        tokens_in INTEGER NOT NULL DEFAULT 0,
        tokens_out INTEGER NOT NULL DEFAULT 0,
        calls INTEGER NOT NULL DEFAULT 0,
        errors TEXT NOT NULL DEFAULT '[]'
    );
    """,
    """
    CREATE TABLE reports (
        repo TEXT NOT NULL,
        start TEXT NOT NULL,
        "end" TEXT NOT NULL,
        data TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (repo, start, "end")
    );
    """,
    """
    CREATE TABLE endpoints (
        base_url TEXT NOT NULL,
        model TEXT NOT NULL,
        mode TEXT NOT NULL,
        learned_at TEXT NOT NULL,
        PRIMARY KEY (base_url, model)
    );
    """,
    """
    CREATE TABLE leases (
        key TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    # A repository's root .gitattributes, kept for runs when GitHub cannot give it. PRs kept
    # before prhub read review discussion lack it: dropped, so the next run fetches them again.
    """
    CREATE TABLE attributes (
        repo TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        fetched_at TEXT NOT NULL
    );
    DELETE FROM pulls;
    """,
    # What a narrative cost to make, so a report can show it on every rerun.
    """
    ALTER TABLE narratives ADD COLUMN usage TEXT NOT NULL DEFAULT '{}';
    """,
    # A big PR's chunk notes, by their request: an interrupted digest does not pay for them twice.
    """
    CREATE TABLE chunk_notes (
        key TEXT PRIMARY KEY,
        data TEXT NOT NULL,
        usage TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
    # What was posted of a week, one post a target, so a rerun never posts it twice: a
    # discussion or an issue (its page and node, updated in place) in a repository, or a chat
    # message to a webhook (named by a fingerprint, never its URL); `hash` is what was posted.
    """
    CREATE TABLE posts (
        repo TEXT NOT NULL,
        start TEXT NOT NULL,
        "end" TEXT NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        url TEXT NOT NULL,
        node TEXT NOT NULL,
        hash TEXT NOT NULL,
        posted_at TEXT NOT NULL,
        PRIMARY KEY (repo, start, "end", target)
    );
    """,
    # Batch mode: each batch sent to the provider, and each request in one (by its custom_id,
    # with its repository) with its answer once collected; requests of several repositories
    # may share a batch.
    """
    CREATE TABLE batches (
        id TEXT PRIMARY KEY,
        endpoint TEXT NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL,
        submitted_at TEXT NOT NULL,
        collected_at TEXT
    );
    CREATE TABLE batch_requests (
        key TEXT PRIMARY KEY,
        repo TEXT NOT NULL,
        batch_id TEXT,
        status INTEGER,
        answer TEXT,
        answered_at TEXT,
        read_at TEXT
    );
    CREATE INDEX batch_requests_batch ON batch_requests (batch_id);
    CREATE INDEX batch_requests_repo ON batch_requests (repo);
    """,
    # A fetched pull's ETag and Last-Modified (NULL for none): revalidated with them, an
    # unchanged PR costs no rate limit (GitHub answers 304).
    """
    ALTER TABLE pulls ADD COLUMN etag TEXT;
    ALTER TABLE pulls ADD COLUMN last_modified TEXT;
    """,
    # A batch being sent, kept before its upload and until its batch is recorded: a run that
    # finds one left by an interrupted run looks for what the provider made of it before
    # sending the same requests again (`ident` is the hash of their keys, in the batch's
    # metadata; `requests` their keys and repositories; `file_id` the upload, once answered).
    """
    CREATE TABLE batch_sends (
        ident TEXT PRIMARY KEY,
        endpoint TEXT NOT NULL,
        model TEXT NOT NULL,
        run TEXT NOT NULL,
        requests TEXT NOT NULL,
        file_id TEXT,
        started_at REAL NOT NULL
    );
    """,
    # What grounding removed from a narrative, each with its field and reason (JSON), so a
    # report rendered again from the store says what its sections lost.
    """
    ALTER TABLE narratives ADD COLUMN drops TEXT NOT NULL DEFAULT '[]';
    """,
]
