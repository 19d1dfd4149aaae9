"""A report's own HTML page printed to PDF by headless Chromium: its folds open, offline, in
bounded time, and the same bytes for the same page."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from prhub.errors import PdfUnavailable
from prhub.publish.fonts import require_cjk

if TYPE_CHECKING:
    from pypdf import PdfWriter
    from pypdf.generic import ArrayObject, DictionaryObject, StreamObject

__all__ = ["BROWSERS", "TIMEOUT", "chromium", "pdf"]

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT = 60.0  # seconds for one print, start-up included
PREFIX = "prhub-pdf-"  # of a print's temporary folder, then the printing process's id
STALE = 3600.0  # seconds after which a print folder that names no process is an old one
INSTALL = (
    "PDF needs Chromium: install chromium (apt-get install chromium fonts-noto-cjk) "
    "or set PRHUB_CHROMIUM"
)
# Nothing but the page: no name resolves, no request leaves (a dead proxy takes what a literal
# address would send), and none of the browser's own services start.
FLAGS = (
    "--headless",
    "--no-pdf-header-footer",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-extensions",
    "--disable-sync",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)
# Skia names each glyph by the first code point the font maps to it, and Noto CJK maps radicals
# (U+2E80-U+2FDF) to the glyphs of the ideographs they look like: without this, 风 reads back as
# ⻛ and 文 as ⽂. Kangxi radicals and ligatures (ﬁ) have Unicode compatibility forms; these
# CJK Radicals Supplement code points have none, and are mapped as Noto Sans CJK SC maps them.
_SUPPLEMENT = dict(
    zip(
        "⺂⺃⺅⺇⺉⺋⺍⺏⺐⺒⺓⺔⺕⺖⺘⺙⺛⺞⺟⺠⺡⺣⺤⺦⺨⺩⺭⺮⺯⺰⺱⺳⺹⺺⺽⺾⻂⻅⻆⻇⻈⻉⻊⻋⻌⻐⻑⻒⻓⻔⻕⻖⻘"
        "⻙⻚⻛⻜⻝⻞⻟⻠⻡⻢⻣⻤⻥⻦⻧⻨⻩⻪⻫⻬⻮⻯⻰⻱⻲⻳",
        "乛乚亻𠘨刂㔾𭕄尣尢巳幺彑彐忄扌攵旡歺母民氵灬爫丬犭𤣩礻𥫗糹纟罓㓁耂肀𦥑艹衤见角𧢲讠贝𧾷车辶钅長镸长门𨸏阝青"
        "韦页风飞食𩙿飠饣𩠐马骨鬼鱼鸟卤麦黄黾斉齐齿竜龙龜亀龟",
        strict=True,
    )
)
_DATES = ("/CreationDate", "/ModDate")  # when Chromium printed: the same page, other bytes


def chromium(env: Mapping[str, str] | None = None) -> str:
    """The browser to print with: PRHUB_CHROMIUM, else the first of BROWSERS on PATH."""
    env = os.environ if env is None else env
    named = env.get("PRHUB_CHROMIUM")
    if named:
        found = shutil.which(named, path=env.get("PATH"))
        if found is None:
            raise PdfUnavailable(
                f"PRHUB_CHROMIUM={named} is no program: point it to Chromium, or unset it to "
                "use chromium from PATH (apt-get install chromium fonts-noto-cjk)"
            )
        return found
    for name in BROWSERS:
        if found := shutil.which(name, path=env.get("PATH")):
            return found
    raise PdfUnavailable(INSTALL)


def pdf(html: str, timeout: float = TIMEOUT) -> bytes:
    """`html` (a report's page) as a PDF: what a browser shows, with every fold open; never
    one whose Chinese would print as boxes (NoCJKFont)."""
    program = chromium()
    require_cjk(html)
    sweep()
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as tmp:
        page, out = Path(tmp, "page.html"), Path(tmp, "page.pdf")
        page.write_text(html.replace("<details>", "<details open>"), encoding="utf-8")
        args = [program, *FLAGS, *_sandbox(), f"--user-data-dir={Path(tmp, 'profile')}"]
        _print([*args, f"--print-to-pdf={out}", page.as_uri()], tmp, timeout)
        if not out.is_file() or out.stat().st_size == 0:
            raise PdfUnavailable(f"Chromium ({program}) printed no PDF")
        return _fixed(out.read_bytes())


def sweep(root: Path | None = None) -> list[Path]:
    """Removes the print folders of earlier runs that were killed before they could (its own
    process gone, or of a version that did not name it); the folders removed."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX).partition("-")[0]
        with contextlib.suppress(OSError):
            if folder.is_symlink() or folder.lstat().st_uid != os.geteuid():
                continue  # another user's, or no folder of prhub's
            if pid.isdigit() and _running(int(pid)):
                continue
            if not pid.isdigit() and folder.lstat().st_mtime > time.time() - STALE:
                continue  # perhaps an older prhub's, printing now
            shutil.rmtree(folder)
            removed.append(folder)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sandbox() -> tuple[str, ...]:
    # Chromium refuses to start as root with its sandbox on (CI runners and containers are root).
    return ("--no-sandbox",) if os.geteuid() == 0 else ()


def _print(args: list[str], tmp: str, timeout: float) -> None:
    """Runs Chromium in its own process group, which is killed whatever happens, so no helper
    outlives the print; its temporary files go into `tmp`."""
    env = {**os.environ, "TMPDIR": tmp}
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise PdfUnavailable(f"cannot start {args[0]}: {exc.strerror or exc}") from None
    with proc:
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise PdfUnavailable(f"Chromium did not print the page within {timeout:g} s") from None
        finally:
            _end(proc)
    if proc.returncode != 0:
        lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        last = lines[-1].strip() if lines else "no message"
        raise PdfUnavailable(f"Chromium failed (exit {proc.returncode}): {last}")


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kills what is left of Chromium's process group and reads its stderr to the end: the
    pipe closes once no process that held it is left to write into the folder being removed."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired, OSError, ValueError):
        proc.communicate(timeout=5)


def _fixed(data: bytes) -> bytes:
    """The PDF without its print dates and with its structure's IDs in order (the same page
    gives the same bytes), and with text that reads back as written (search, copy,
    pdftotext): each font's text map (ToUnicode) names the ideographs, not the radicals they
    look like. Read and written again by pypdf."""
    from pypdf import PdfReader, PdfWriter  # here: only a print needs it

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    for cmap in _text_maps(writer):
        text = cmap.get_data()
        fixed = _BFRANGE.sub(_ranges, _BFCHAR.sub(_chars, text))
        if fixed != text:
            cmap.set_data(fixed)
    _stable_ids(writer)
    if (info := writer.metadata) is not None:
        writer.metadata = {k: v for k, v in info.items() if k not in _DATES}
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _text_maps(writer: PdfWriter) -> list[StreamObject]:
    """Every font's text map (ToUnicode) the document holds, once each, wherever its fonts
    are: on pages, in forms, in Type 3 fonts' resources."""
    from pypdf.generic import DictionaryObject, StreamObject

    maps: dict[int, StreamObject] = {}
    for item in _reachable(writer):
        if isinstance(item, DictionaryObject) and "/ToUnicode" in item:
            if isinstance(cmap := item["/ToUnicode"].get_object(), StreamObject):
                maps[id(cmap)] = cmap
    return list(maps.values())


def _stable_ids(writer: PdfWriter) -> None:
    """Chromium names the elements of a page's tagged structure after its DOM nodes
    (`node00000087`, in their IDs, the table headers that cite them and the ID tree), and
    that count can shift from one print of a page to the next: renumbered in their order,
    the same page gives the same bytes."""
    from pypdf.generic import DictionaryObject, TextStringObject

    places = []
    for item in _reachable(writer):
        slots = dict.items(item) if isinstance(item, DictionaryObject) else enumerate(item)
        for key, value in list(slots):
            if isinstance(value, TextStringObject) and _NODE.fullmatch(value):
                places.append((item, key, int(value[4:])))
    rank = {n: i for i, n in enumerate(sorted({n for _, _, n in places}), 1)}
    for item, key, n in places:
        item[key] = TextStringObject(f"node{rank[n]:08d}")


def _reachable(writer: PdfWriter) -> Iterator[DictionaryObject | ArrayObject]:
    """Every dictionary and array of the document, once each, from its catalog down."""
    from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject

    seen: set[tuple[int, int]] = set()
    todo: list[object] = [writer.root_object]
    while todo:
        item = todo.pop()
        if isinstance(item, IndirectObject):
            if (item.idnum, item.generation) in seen:
                continue
            seen.add((item.idnum, item.generation))
            item = item.get_object()
        if isinstance(item, DictionaryObject):
            yield item
            todo.extend(dict.values(item))  # as stored: references unresolved
        elif isinstance(item, ArrayObject):
            yield item
            todo.extend(list.__iter__(item))


_NODE = re.compile(r"node\d{1,12}")
# A ToUnicode map's text (ISO 32000-1, 9.10.3): its sections of single codes and of ranges.
_BFCHAR = re.compile(rb"beginbfchar(.*?)endbfchar", re.S)
_BFRANGE = re.compile(rb"beginbfrange(.*?)endbfrange", re.S)
_PAIR = re.compile(rb"(<[0-9A-Fa-f]+>\s*)<([0-9A-Fa-f]*)>")
_RANGE = re.compile(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(?:<([0-9A-Fa-f]*)>|\[([^\]]*)\])")


def _chars(section: re.Match[bytes]) -> bytes:
    """A bfchar section with each code's text read as written."""
    body = _PAIR.sub(lambda m: m.group(1) + _text(m.group(2)), section.group(1))
    return b"beginbfchar" + body + b"endbfchar"


def _ranges(section: re.Match[bytes]) -> bytes:
    """A bfrange section with each code's text read as written: a range that holds one to
    change becomes the list of its texts."""
    return b"beginbfrange" + _RANGE.sub(_range, section.group(1)) + b"endbfrange"


def _range(m: re.Match[bytes]) -> bytes:
    low, high, first, listed = m.groups()
    if listed is not None:
        items = b" ".join(_text(t) for t in re.findall(rb"<([0-9A-Fa-f]*)>", listed))
    else:
        start = _decode(first)
        count = int(high, 16) - int(low, 16) + 1
        texts = [start[:-1] + chr(ord(start[-1]) + i) for i in range(count)] if start else []
        if all(_read(t) == t for t in texts):
            return m.group()
        items = b" ".join(_hex(_read(t)) for t in texts)
    return b"<" + low + b"> <" + high + b"> [" + items + b"]"


def _decode(code: bytes) -> str:
    try:
        return bytes.fromhex(code.decode()).decode("utf-16-be")
    except ValueError:  # not UTF-16 text: a lone surrogate, an odd length
        return ""


def _text(code: bytes) -> bytes:
    """A code's text, as its hex string, read as written; what is no UTF-16 stays as it is."""
    text = _decode(code)
    read = _read(text)
    return b"<" + code + b">" if read == text else _hex(read)


def _hex(text: str) -> bytes:
    return b"<" + text.encode("utf-16-be").hex().upper().encode() + b">"


def _read(text: str) -> str:
    """A glyph's text as its reader means it: the ideograph, not the radical it resembles."""
    return "".join(
        unicodedata.normalize("NFKC", c)
        if "\u2f00" <= c <= "\u2fdf" or "\ufb00" <= c <= "\ufb06"
        else _SUPPLEMENT.get(c, c)
        for c in text
    )
