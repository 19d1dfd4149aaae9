"""Chunk notes held to their characters: whole items and sentences, never a split character."""

from __future__ import annotations

from prhub.config import Settings
from prhub.digest.notes import note_limits, trim_notes
from prhub.model import ChunkNotes
from prhub.prepare.tokens import count
from tests.factories import part_notes


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


def test_a_field_a_little_over_its_characters_stays_whole_when_the_note_fits_its_tokens():
    # A strong model counts characters roughly: 324 of a 320-character summary, with the other
    # fields under theirs, still fits the note's room in the final prompt.
    config, budget = Settings(), 1200
    limits = note_limits(budget)
    first = "改动" * (limits["summary"] // 4) + "。"
    note = ChunkNotes(summary=first + "第二句" * ((limits["summary"] - len(first)) // 3 + 2) + "。")
    assert len(note.summary) > limits["summary"]
    assert trim_notes(note, budget, config) == (note, False)
