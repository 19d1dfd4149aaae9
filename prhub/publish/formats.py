"""The formats a report is written in, and the file suffix of each."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    markdown = "markdown"
    json = "json"
    html = "html"
    pdf = "pdf"


# Of each format's files.
SUFFIX = {Format.markdown: "md", Format.json: "json", Format.html: "html", Format.pdf: "pdf"}
# The format a file's suffix implies.
SUFFIXES = {f".{suffix}": fmt for fmt, suffix in SUFFIX.items()} | {".markdown": Format.markdown}
