"""The store's migrations: they apply in order on an empty database and are never edited."""

from __future__ import annotations

import re
import sqlite3

from prhub.store.migrations import MIGRATIONS


def test_every_migration_applies_in_order_on_an_empty_database() -> None:
    db = sqlite3.connect(":memory:")
    for number, migration in enumerate(MIGRATIONS, 1):
        for statement in migration.split(";"):
            if statement.strip():
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {number}")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    expected = {"pulls", "digests", "narratives", "runs", "reports", "endpoints", "leases"}
    expected |= {"attributes", "chunk_notes", "posts"}
    assert expected <= tables


def test_no_statement_holds_a_semicolon_in_a_string() -> None:
    # The store splits a migration at ";": one inside a literal would cut a statement in two.
    for migration in MIGRATIONS:
        assert not re.search(r"'[^']*;[^']*'", migration)
