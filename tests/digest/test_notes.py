"""Chunk notes held to the characters the prompt states: whole items and sentences, never a
split character; and together within the final call's room, counted in tokens."""

from __future__ import annotations

from prhub.config import Settings
from prhub.digest.notes import fit_notes, note_limits, note_text, trim_notes
from prhub.model import ChunkNotes
from prhub.prepare.tokens import count
from tests.factories import part_notes


def test_trim_notes_holds_each_field_to_its_stated_characters():
    note = ChunkNotes(**part_notes(1))
    assert trim_notes(note, note_limits(1200)) == (note, False)
    limits = note_limits(200)
    cut, shortened = trim_notes(note, limits)
    assert shortened and len(cut.summary) <= limits["summary"]
    assert note.summary.startswith(cut.summary) and cut.summary.endswith("。")
    assert all(r in note.risks for r in cut.risks)  # whole risks, or none
    assert sum(map(len, cut.risks)) <= limits["risks"]


def test_a_field_over_its_stated_characters_is_cut_though_the_note_fits_its_tokens():
    # The prompt states the limit in characters, so the limit holds in characters: a note that
    # passed untouched over its stated length was a rule stated and not kept.
    limits = note_limits(1200)
    first = "改动" * (limits["summary"] // 4) + "。"
    note = ChunkNotes(summary=first + "第二句" * ((limits["summary"] - len(first)) // 3 + 2) + "。")
    assert len(note.summary) > limits["summary"]
    cut, shortened = trim_notes(note, limits)
    assert shortened and cut.summary == first


def test_notes_denser_than_their_characters_are_held_to_the_final_calls_room():
    config = Settings()
    dense = ChunkNotes(summary="🙂。" * 1000, risks=["龘靐齉。" * 300])
    held = trim_notes(dense, note_limits(300))[0]
    [fitted] = fit_notes([held], 300, config)
    assert count(note_text(fitted)) <= 300 and "\ufffd" not in note_text(fitted)
    plain = ChunkNotes(**part_notes(2))
    assert fit_notes([plain], 1200, config) == [plain]  # notes that fit stay as they are
