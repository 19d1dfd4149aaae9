"""A big PR's chunk notes: the characters each field may take, and notes held to them."""

from __future__ import annotations

import hashlib
import json
from typing import Protocol

from prhub.config import Settings
from prhub.model import ChunkNotes, Usage
from prhub.prepare.tokens import count
from prhub.text import sentences

# A note's room by field: the share of its token budget each field may take.
NOTE_SHARES = {"summary": 0.4, "key_files": 0.15, "identifiers": 0.15, "risks": 0.3}
NOTE_LABELS = 32  # tokens of a note's labels and joins in the final prompt (第 N 段：, 风险：)
# Characters a token of a note holds: the prompt states each field's room in characters, the
# unit a model can keep to and trim_notes enforces. Measured with o200k_base: notes that mix
# Chinese with paths and identifiers hold 2 to 4, Chinese prose alone 1.1; a note of prose
# alone at its limits is over its tokens, which fit_notes holds the notes to together.
CHARS_PER_TOKEN = 1.5
# A note is a reply: at most this share of the reply's tokens, with its JSON around it.
REPLY_SHARE = 0.6


def note_cap(settings: Settings) -> int:
    """The most tokens one chunk's notes may take: what a reply of output_tokens holds."""
    return int(settings.output_tokens * REPLY_SHARE)


def note_limits(budget: int) -> dict[str, int]:
    """Characters each field of one chunk's notes may take, from the note's token budget."""
    room = max(len(NOTE_SHARES), budget - NOTE_LABELS)
    return {
        name: max(1, int(room * share * CHARS_PER_TOKEN)) for name, share in NOTE_SHARES.items()
    }


def trim_notes(note: ChunkNotes, limits: dict[str, int]) -> tuple[ChunkNotes, bool]:
    """The notes with each field within the characters the prompt stated (`limits`), what is
    over cut at whole items and whole sentences; and whether they had to be."""
    kept = _within(note, limits)
    return kept, kept != note


def fit_notes(notes: list[ChunkNotes], budget: int, settings: Settings) -> list[ChunkNotes]:
    """The notes within the final call's room for them, `budget` tokens each on average: as
    they are when they fit together, else each over its share held to it in tokens."""
    room = len(notes) * (budget - NOTE_LABELS)
    used = [count(note_text(n), settings.encoding) for n in notes]
    if sum(used) <= room:
        return notes
    share = budget - NOTE_LABELS
    fitted = []
    for note, size in zip(notes, used, strict=True):
        if size <= share:
            fitted.append(note)
            continue
        scale = share / size
        limits = {name: int(len(_field(note, name)) * scale) for name in NOTE_SHARES}
        fitted.append(_within(note, limits))
    return fitted


def _field(note: ChunkNotes, name: str) -> str:
    value = getattr(note, name)
    return value if isinstance(value, str) else "".join(value)


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
