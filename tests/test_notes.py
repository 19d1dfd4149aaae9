"""Chunk notes held to their characters: whole items and sentences, never a split character."""

from __future__ import annotations

from prhub.config import Settings
from prhub.model import ChunkNotes
from prhub.notes import note_limits, trim_notes
from prhub.prepare.tokens import count
from tests.test_digest import part_notes


def test_trim_notes_keeps_notes_within_their_limits_as_they_are():
    config = Settings()
    note = ChunkNotes(**part_notes(1))
    assert trim_notes(note, 1200, config) == (note, False)
    cut, shortened = trim_notes(note, 200, config)
    limits = note_limits(200)
    assert shortened and len(cut.summary) <= limits["summary"]
    assert note.summary.startswith(cut.summary) and cut.summary.endswith("。")
    assert all(r in note.risks for r in cut.risks)  # whole risks, or none
    assert sum(map(len, cut.risks)) <= limits["risks"]
    dense = ChunkNotes(summary="🙂" * 2000, risks=["龘靐齉" * 300])
    cut, shortened = trim_notes(dense, 300, config)
    assert shortened and "\ufffd" not in cut.summary + "".join(cut.risks)
    assert count(cut.summary + "".join(cut.risks)) <= 300
