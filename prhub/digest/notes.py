"""A big PR's chunk notes: the characters each field may take, and notes cut to them."""

from __future__ import annotations

import hashlib
import json
from typing import Protocol

from prhub.config import Settings
from prhub.model import ChunkNotes, Usage
from prhub.prepare.tokens import count
from prhub.text import sentences

# A note's room by field, in characters: the unit the map prompt states and trim_notes
# enforces. A character of Chinese or code is at most about a token, so a note within its
# characters fits its tokens; what is denser (emoji, rare characters) is checked in tokens too.
NOTE_SHARES = {"summary": 0.4, "key_files": 0.15, "identifiers": 0.15, "risks": 0.3}
NOTE_LABELS = 32  # tokens of a note's labels and joins in the final prompt (第 N 段：, 风险：)


def note_limits(budget: int) -> dict[str, int]:
    """Characters each field of one chunk's notes may take, from the note's token budget."""
    room = max(len(NOTE_SHARES), budget - NOTE_LABELS)
    return {name: max(1, int(room * share)) for name, share in NOTE_SHARES.items()}


def trim_notes(note: ChunkNotes, budget: int, settings: Settings) -> tuple[ChunkNotes, bool]:
    """The notes within their share of the final prompt, and whether they had to be shortened.

    Notes within `budget` tokens stay whole. Others have each field held to its characters
    (note_limits), what is over cut at whole items and whole sentences; notes denser than a
    token a character are then held to `budget` tokens.
    """
    if count(note_text(note), settings.encoding) <= budget - NOTE_LABELS:
        return note, False  # it fits its room in the final prompt: a field a little over stays
    limits = note_limits(budget)
    kept = _within(note, limits)
    used = count(note_text(kept), settings.encoding)
    if used > budget - NOTE_LABELS:
        share = (budget - NOTE_LABELS) / used
        kept = _within(kept, {name: int(n * share) for name, n in limits.items()})
    return kept, kept != note


def _within(note: ChunkNotes, limits: dict[str, int]) -> ChunkNotes:
    return ChunkNotes(
        summary=_sentences_within(note.summary, limits["summary"]),
        key_files=_items_within(note.key_files, limits["key_files"], split=False),
        identifiers=_items_within(note.identifiers, limits["identifiers"], split=False),
        risks=_items_within(note.risks, limits["risks"], split=True),
    )


def _items_within(items: list[str], limit: int, split: bool) -> list[str]:
    """The first items that fit `limit` characters; a text item (`split`) that does not fit
    whole keeps its first sentences when they do."""
    kept: list[str] = []
    for item in items:
        room = limit - sum(map(len, kept))
        if len(item) <= room:
            kept.append(item)
            continue
        if split and (part := _sentences_within(item, room, whole=not kept)):
            kept.append(part)
        break
    return kept


def _sentences_within(text: str, limit: int, whole: bool = True) -> str:
    """The first sentences of `text` within `limit` characters. When not even the first fits
    and `whole`, its first characters, marked: a note never goes empty for one long sentence."""
    if len(text) <= limit:
        return text
    kept = ""
    for sentence in sentences(text):
        if len(kept) + len(sentence) > limit:
            break
        kept += sentence
    if kept.strip() or not whole:
        return kept.rstrip()
    return text[: max(0, limit - 1)] + "…"


def note_text(note: ChunkNotes) -> str:
    """The notes' own text, without labels: what their limits count."""
    return "".join([note.summary, *note.key_files, *note.identifiers, *note.risks])


class NotesMemo(Protocol):
    """Where a big PR's chunk notes are kept between runs (the store)."""

    def chunk_notes(self, key: str) -> tuple[ChunkNotes, Usage] | None: ...

    def save_chunk_notes(self, key: str, notes: ChunkNotes, usage: Usage) -> None: ...


def notes_key(messages: list[dict[str, str]], settings: Settings) -> str:
    """A chunk request's notes key: the model and every word it is sent."""
    text = json.dumps([settings.model, messages], ensure_ascii=False, sort_keys=True)
    return "notes:" + hashlib.sha256(text.encode()).hexdigest()
