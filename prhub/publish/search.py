"""The site's search index, split so that one query downloads only what it needs: the keys of
every text (pairs of Chinese characters, pieces of three letters or digits of a word) in shards
by the key's hash, and the documents (a page's title, its line and the opening of each part of
its text, as plain text) in small chunks. The search page's script loads the shards of the
words typed, then the chunks of the results it shows, each as a script file, so it works from
the disk too. The index is written from a spill file: memory stays flat however many documents
there are."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from prhub.model import PRDigest, WeeklyReport
from prhub.publish.footers import local_time
from prhub.publish.parts import CODE_SPAN, one_line
from prhub.publish.view import weekly_title

__all__ = [
    "CHUNK",
    "FIRST",
    "PART",
    "FOLDER",
    "PAGE",
    "Index",
    "digest_entry",
    "excerpt",
    "found",
    "keys",
    "needed",
    "plain",
    "week_entry",
]

FOLDER = "search.index"  # a dot: no GitHub owner has one, so no repository's folder is it
CHUNK = 8  # documents a chunk file holds
PAGE = 20  # results a page of results shows: the chunks it loads stay few
DOCS_PER_SHARD = 24  # about 60 KB of keys a shard
BUFFER = 2048  # bytes each shard's spill file buffers
# Characters a result shows of a text's first part and of each other one: the keys cover the
# whole text, the chunks (else a copy of every text) only the opening of each of its parts.
FIRST, PART = 120, 40
_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+|[a-z0-9]+")
_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)")
_MARKS = re.compile(r"\*\*|__")
_IDENT = re.compile(r"[A-Za-z0-9_]+(?:[./:\-][A-Za-z0-9_]+)*")


def plain(text: str | None) -> str:
    """Markdown as the text a reader sees: code spans, bold and links without their marks."""
    text = CODE_SPAN.sub(lambda m: m.group(2), one_line(text))
    return _MARKS.sub("", _LINK.sub(r"\1", text))


def excerpt(text: str, most: int) -> str:
    """The opening of a text with an ellipsis where it was cut, never inside an identifier
    (a path or a dotted name is one): one the cut falls in is shown whole when it ends within
    `PART` more characters, else left out; one that alone fills the opening is cut."""
    if len(text) <= most:
        return text
    word = next((w for w in _IDENT.finditer(text) if w.end() > most), None)
    if word is None or word.start() >= most:
        return text[:most].rstrip() + "…"
    if word.end() <= most + PART:
        return text[: word.end()] + ("…" if word.end() < len(text) else "")
    if word.start() > 0 and text[: word.start()].strip():
        return text[: word.start()].rstrip() + "…"
    return text[:most] + "…"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def keys(text: str) -> set[str]:
    """The keys of a text: each pair of Chinese characters in a row, each piece of three of a
    word of letters and digits; a shorter run is its own key."""
    found: set[str] = set()
    for run in _RUN.findall(_fold(text)):
        n = 2 if run[0] >= "\u3400" else 3
        if len(run) <= n:
            found.add(run)
        else:
            found.update(run[i : i + n] for i in range(len(run) - n + 1))
    return found


def shard(key: str, shards: int) -> int:
    """FNV-1a over the key's UTF-16 units, as the page's script computes it."""
    h = 0x811C9DC5
    for c in key:
        h = ((h ^ ord(c)) * 0x01000193) & 0xFFFFFFFF
    return h % shards


def digest_entry(d: PRDigest, url: str, tz: str) -> dict[str, Any]:
    """A digest as the index holds it: its whole text (`x`, for the keys) and the opening of
    each of its parts (`e`, what a result shows); `url` is its page from the site's root."""
    c = d.content
    merged = local_time(d.merged_at, tz)[:10] if d.merged_at else "未合并"
    # The advice first: a hit's excerpt shows the reader's text.
    said = [c.advice, *c.design_decisions, *c.risks, *c.follow_ups, *c.discussion]
    more = [c.importance_reason, d.original_title, *d.tags, f"@{d.author}", f"#{d.number}"]
    return {
        "u": url,
        "r": d.repo,
        "t": plain(c.title),
        "s": f"#{d.number} · {c.verdict} · 重要性 {c.importance:.1f} · {merged}",
        "x": _words(*said, *more),
        "e": _openings(said),
    }


def week_entry(r: WeeklyReport, url: str) -> dict[str, Any]:
    """A weekly report as the index holds it: its narrative's whole text, and the opening of
    each of its parts."""
    n = r.narrative
    said = (
        [
            n.lead,
            n.summary,
            *n.highlights,
            *n.key_changes,
            *(risk.text for risk in n.risks),
            *n.follow_ups,
            *(f"{t.theme} {t.judgement}" for t in n.trends),
            *(f"{k.topic} {k.note}" for k in n.key_prs),
        ]
        if n
        else []
    )
    return {
        "u": url,
        "r": r.facts.repo,
        "t": weekly_title(r),
        "s": f"周报 · {r.facts.pr_count} 个 PR",
        "x": _words(*said),
        "e": _openings(said),
    }


def _words(*texts: str) -> str:
    return " ".join(t for t in map(plain, texts) if t)


def _openings(texts: list[str]) -> str:
    """What a result shows of a text: the opening of its first part and of each other one."""
    return " ".join(
        excerpt(t, FIRST if i == 0 else PART) for i, t in enumerate(map(plain, texts)) if t
    )


class Index:
    """The documents, `note`d by address and fingerprint as a build meets them (enough to tell
    whether the index changed), then given to `files` when the index has to be written."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self.count = 0

    def note(self, url: str, fingerprint: str) -> None:
        self._hash.update(f"{url}\t{fingerprint}\n".encode())
        self.count += 1

    @property
    def key(self) -> str:
        """The fingerprint of every document, in order: the same means the same index."""
        return self._hash.hexdigest()

    @property
    def shards(self) -> int:
        return max(1, min(512, self.count // DOCS_PER_SHARD))

    def files(self, docs: Iterable[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        """The index's files by path: the chunks of `docs` (the documents, in order), then the
        keys' shards."""
        shards = self.shards
        with tempfile.TemporaryDirectory() as tmp:
            # Bytes, with small buffers: hundreds are open at once, and memory stays flat.
            buckets = [open(Path(tmp) / str(i), "wb+", buffering=BUFFER) for i in range(shards)]
            try:
                chunk: list[str] = []
                for i, doc in enumerate(docs):
                    for k in keys(doc["t"]):
                        buckets[shard("^" + k, shards)].write(f"^{k}\t{i}\n".encode())
                    for k in keys(f"{doc['t']} {doc['x']} {doc['r']}"):
                        buckets[shard(k, shards)].write(f"{k}\t{i}\n".encode())
                    doc["x"] = doc.pop("e", doc["x"])
                    chunk.append(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
                    if len(chunk) == CHUNK:
                        yield _chunk(i // CHUNK, chunk)
                        chunk = []
                if chunk:
                    yield _chunk(i // CHUNK, chunk)
                for n, bucket in enumerate(buckets):
                    bucket.seek(0)
                    yield _shard(n, bucket)
            finally:
                for bucket in buckets:
                    bucket.close()


def _chunk(n: int, lines: list[str]) -> tuple[str, str]:
    return f"{FOLDER}/d/{n}.js", f"prhubSearch.docs({n},[{','.join(lines)}]);\n"


def _shard(n: int, lines: IO[bytes]) -> tuple[str, str]:
    """A shard: each key's documents, as the gaps between their numbers in base 36."""
    postings: dict[str, list[int]] = {}
    for line in lines:
        key, at = line.decode().rstrip("\n").split("\t")
        postings.setdefault(key, []).append(int(at))
    encoded = {k: _gaps(v) for k, v in sorted(postings.items())}
    body = json.dumps(encoded, ensure_ascii=False, separators=(",", ":"))
    return f"{FOLDER}/k/{n}.js", f"prhubSearch.keys({n},{body});\n"


def _gaps(ids: list[int]) -> str:
    out, last = [], 0
    for i in ids:
        out.append(_base36(i - last))
        last = i
    return ",".join(out)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        n, r = divmod(n, 36)
        text = digits[r] + text
        if not n:
            return text


def _in_pieces(sets: list[set[int]], d: int) -> bool:
    """Whether a word is in document `d` in pieces of two characters or more."""
    start = 0
    for i, found in enumerate(sets):
        if d in found:
            continue
        if i + 1 - start < 2:
            return False
        start = i + 1
    return len(sets) + 1 - start >= 2


# What one query loads, as the page's script does it: for the benchmark and the tests.

_CALL = re.compile(r"^prhubSearch\.\w+\(\d+,(.*)\);\s*$", re.S)


def _loaded(path: Path) -> Any:
    found = _CALL.match(path.read_text(encoding="utf-8"))
    return json.loads(found.group(1)) if found else None


def needed(out: Path, query: str) -> list[str]:
    """The files the search page loads for `query` and its first page of results."""
    return _search(out, query)[0]


def found(out: Path, query: str) -> list[str]:
    """The pages the search page shows first for `query`, best first."""
    files, ranked = _search(out, query)
    docs: dict[int, Any] = {}
    for f in files[4:]:
        if f.startswith(f"{FOLDER}/d/"):
            n = int(Path(f).stem)
            docs.update({n * CHUNK + i: d for i, d in enumerate(_loaded(out / f) or [])})
    return [docs[d]["u"] for d in ranked]


def _search(out: Path, query: str) -> tuple[list[str], list[int]]:
    """What the search page does for `query`: the files it loads, the documents it shows."""
    page = (out / "search.html").read_text(encoding="utf-8")
    said = re.search(r'data-shards="(\d+)"', page)
    shards = int(said.group(1)) if said else 1
    files = ["search.html", "prhub.css", "prhub.js", "search.js"]
    typed = [w for w in _fold(query).split() if keys(w)]
    words = [keys(w) for w in typed]
    wanted = sorted(
        {shard(k, shards) for w in words for k in w}
        | {shard("^" + k, shards) for w in words for k in w}
    )
    files += [f"{FOLDER}/k/{n}.js" for n in wanted]
    postings: dict[str, set[int]] = {}
    for n in wanted:
        for k, gaps in (_loaded(out / f"{FOLDER}/k/{n}.js") or {}).items():
            at, ids = 0, set()
            for g in gaps.split(","):
                at += int(g, 36)
                ids.add(at)
            postings[k] = ids
    scores: dict[int, int] = {}
    for i, (word, w) in enumerate(zip(typed, words, strict=True)):
        exact = set.intersection(*(postings.get(k, set()) for k in w))
        titled = set.intersection(*(postings.get("^" + k, set()) for k in w))
        found = {d: 10 if d in titled else 3 for d in exact}
        run = _fold(word)
        if re.fullmatch(r"[\u3400-\u9fff\uf900-\ufaff]{4,}", run):
            sets = [postings.get(run[j : j + 2], set()) for j in range(len(run) - 1)]
            found.update({d: 1 for d in sets[0] - exact if _in_pieces(sets, d)})
        scores = {d: scores.get(d, 0) + s for d, s in found.items() if i == 0 or d in scores}
    ranked = sorted(scores, key=lambda d: (-scores[d], d))[:PAGE]
    files += [f"{FOLDER}/d/{n}.js" for n in sorted({d // CHUNK for d in ranked})]
    return files, ranked
