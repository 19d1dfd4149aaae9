"""What the store remembers beyond reports: the endpoint's response mode (learned, forgotten,
beaten by a setting) and the records of past runs."""

from __future__ import annotations

from contextlib import closing
from typing import Any

from prhub.config import Settings, default_store
from prhub.store.store import Store


def explicit_mode(settings: Settings) -> bool:
    """Whether the response mode was chosen (flag, variable, file) rather than defaulted."""
    return "response_mode" in settings.sources or settings.response_mode != "json_schema"


def runs(settings: Settings, limit: int) -> list[dict[str, Any]]:
    """The store's latest run records, newest first; none when there is no store yet."""
    if not (settings.store or default_store()).exists():
        return []
    with closing(Store(settings.store)) as store:
        return store.runs(limit)


def learned_mode(settings: Settings) -> tuple[str, str] | None:
    """The response mode the store learned for the endpoint and model, and when."""
    if not (settings.store or default_store()).exists():
        return None  # showing settings must not create a store
    with closing(Store(settings.store)) as store:
        return store.endpoint_learned(settings.endpoint, settings.model)


def forget_mode(settings: Settings) -> bool:
    """Forgets the learned response mode of the endpoint and model; False when none was."""
    with closing(Store(settings.store)) as store:
        return store.forget_endpoint_mode(settings.endpoint, settings.model)
