"""Where results go: the format, the report path, and writes that never leave half a file."""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from prhub.config import Settings
from prhub.defaults import DEFAULTS
from prhub.errors import OutputError, PartialFailure
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import html, labels, pdf, render
from prhub.publish.formats import SUFFIX, Format
from prhub.publish.overview import Entry, index_markdown
from prhub.publish.parts import DigestLink, one_line
from prhub.text import plural
from prhub.weekly.analyse import Window

REPORTS = Path("reports")
INDEX = REPORTS / "index.md"  # the week of many repositories, beside their folders
DIGESTS = "pr"  # the folder beside a report file that holds its PRs' digests, pr/N.md


def digest_text(d: PRDigest, fmt: Format, tz: str) -> str:
    """One digest in the asked format."""
    if fmt == "json":
        return render.digest_json(d)
    if fmt == "html":
        return html.digest_html(d, tz)
    return render.digest_markdown(d, tz)


def digest_file(d: PRDigest, fmt: Format, tz: str) -> str | bytes:
    """One digest's file: its text, or for a PDF its page printed."""
    return pdf.pdf(digest_text(d, Format.html, tz)) if fmt == "pdf" else digest_text(d, fmt, tz)


def weekly_text(report: WeeklyReport, fmt: Format, digest_link: DigestLink | None = None) -> str:
    """A weekly report in the asked format; its rows link to digests where `digest_link` says."""
    if fmt == "json":
        return render.weekly_json(report)
    if fmt == "html":
        return html.weekly_html(report, digest_link=digest_link)
    return render.weekly_markdown(report, digest_link=digest_link)


def weekly_file(report: WeeklyReport, fmt: Format) -> str | bytes:
    """A weekly report's file: its text, or for a PDF its page printed."""
    return pdf.pdf(weekly_text(report, Format.html)) if fmt == "pdf" else weekly_text(report, fmt)


def labels_text(
    report: WeeklyReport,
    tag: str | None,
    aliases: dict[str, str],
    fmt: Format = Format.markdown,
    digest_link: DigestLink | None = None,
) -> str:
    """The week's digests grouped by tag; `tag` in any spelling its aliases fold."""
    view = labels.view(report, tag, aliases)
    if fmt == "json":
        return labels.labels_json(view)
    if fmt == "html":
        return html.labels_html(view, digest_link=digest_link)
    return labels.labels_markdown(view, digest_link=digest_link)


def labels_file(
    report: WeeklyReport, tag: str | None, aliases: dict[str, str], fmt: Format
) -> str | bytes:
    """The labels view's file: its text, or for a PDF its page printed."""
    if fmt == "pdf":
        return pdf.pdf(labels_text(report, tag, aliases, Format.html))
    return labels_text(report, tag, aliases, fmt)


def report_path(report: WeeklyReport, fmt: Format, root: Path = REPORTS) -> Path:
    """reports/OWNER/REPO/YEAR-WNN.md, or START_LAST.md for a window of dates; a timezone
    other than the default is in the name (YEAR-WNN.UTC.md): its window holds other PRs."""
    facts = report.facts
    if facts.week is not None:
        name = f"{facts.year}-W{facts.week:02d}"
    else:
        last = facts.end - timedelta(seconds=1)  # the window's end is exclusive
        name = f"{facts.start:%Y-%m-%d}_{last:%Y-%m-%d}"
    if facts.tz != DEFAULTS["tz"]:
        name += "." + facts.tz.replace("/", "-")
    return root / facts.repo / f"{name}.{SUFFIX[fmt]}"


def target(out: str | None, default: Path) -> Path | None:
    """Where `--out` says to write: None for "-" (stdout), the default when not given."""
    if out == "-":
        return None
    return Path(out) if out else default


def write(content: str | bytes, out: Path | None) -> bool:
    """Writes `content` (text as UTF-8, or bytes such as a PDF's) to stdout (None), a device or
    FIFO as it is, or a regular file atomically.

    A symlink is written through to its target; a directory is refused. A regular file is
    replaced by rename, so no reader ever sees half of it, and left untouched (bytes and mtime)
    when it already holds `content`: a rerun that changes nothing changes no file. False then.
    A terminal is refused bytes.
    """
    if out is None:
        _stdout(content)
        return True
    data = content.encode("utf-8") if isinstance(content, str) else content
    path = Path(os.path.realpath(out))  # through symlinks: the link stays, its target changes
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {out}: it is a directory; name a file")
    if mode is not None and not stat.S_ISREG(mode):
        _direct(data, out)  # a device or FIFO: renaming over it would replace the node
    elif mode is not None and _holds(path, data):
        return False
    else:
        _atomic(data, path, out, mode)
    return True


def _holds(path: Path, data: bytes) -> bool:
    """True when the regular file at `path` holds exactly `data`."""
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False  # unreadable: write it, and let that say what is wrong


def _stdout(content: str | bytes) -> None:
    if isinstance(content, bytes) and sys.stdout.isatty():
        raise OutputError(
            "cannot write a PDF to a terminal: pass --out FILE.pdf, or redirect standard output"
        )
    try:
        if isinstance(content, str):
            sys.stdout.write(content)
            sys.stdout.flush()
        else:
            sys.stdout.flush()  # what was written as text goes first
            binary = getattr(sys.stdout, "buffer", None)
            if binary is None:  # a closed standard output, or one that takes only text
                raise OSError(errno.EBADF, "it takes no bytes")
            binary.write(content)
            binary.flush()
    except BrokenPipeError:
        raise  # the reader left (`| head`): the CLI ends quietly, as other tools do
    except OSError as exc:
        raise OutputError(f"cannot write to standard output: {exc.strerror or exc}") from None


def _direct(data: bytes, out: Path) -> None:
    try:
        with open(out, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise OutputError(f"cannot write {out}: {exc.strerror or exc}") from None


def _atomic(data: bytes, path: Path, shown: Path, mode: int | None) -> None:
    tmp = None
    try:
        # The folders as named: mkdir stops at a dangling link, so none is made through one.
        shown.parent.mkdir(parents=True, exist_ok=True)
        if not path.parent.is_dir():  # a dangling link: its target's folders are not ours
            raise OutputError(
                f"cannot write {shown}: it links to {path}, whose folder does not exist"
            )
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        # mkstemp's 0600 would hide the report from readers; a replaced file keeps its mode.
        os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # a power cut must not leave an empty report behind
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {shown}: {exc.strerror or exc}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publish_digest(d: PRDigest, settings: Settings, fmt: Format, out: Path | None) -> None:
    """Renders a digest in `fmt` and writes it to `out` (None: stdout)."""
    write(digest_file(d, fmt, settings.tz), out)


def publish_weekly(report: WeeklyReport, fmt: Format, out: str | None) -> tuple[Path | None, bool]:
    """Renders a weekly report and writes it: `out`, "-" for stdout, or its report path;
    where, and whether the file changed. A Markdown or HTML report written to a file has its
    digests beside it, which its rows link to."""
    default = report_path(report, fmt)
    if out is None:
        _no_links(default)
    path = target(out, default)
    link = with_digests(report, fmt, path, checked=out is None)
    text = weekly_text(report, fmt, link) if link else weekly_file(report, fmt)
    return path, write(text, path)


def with_digests(
    report: WeeklyReport, fmt: Format, path: Path | None, checked: bool = False
) -> DigestLink | None:
    """Writes the report's digests to pr/N.md (or .html; pr/N.UTC.md in another timezone)
    beside `path`, a Markdown or HTML file, before the report that links to them; where each
    is, relative to the report. None, and nothing written, for another format or for stdout, a
    device or a FIFO. `checked`: refuse symlinks on the way, as on a default report path."""
    if fmt not in (Format.markdown, Format.html) or path is None or not _regular(path):
        return None
    tz = report.facts.tz  # the digests' times are in it, as the report's name says
    suffix = SUFFIX[fmt] if tz == DEFAULTS["tz"] else f"{tz.replace('/', '-')}.{SUFFIX[fmt]}"
    for d in report.digests:
        file = path.parent / DIGESTS / f"{d.number}.{suffix}"
        if checked:
            _no_links(file)
        write(digest_text(d, fmt, tz), file)
    return lambda number: f"{DIGESTS}/{number}.{suffix}"


def _regular(path: Path) -> bool:
    """True for a regular file or none yet: not a device, a FIFO or a directory."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # its write says what is wrong


def publish_index(entries: list[Entry], w: Window, tz: str) -> tuple[Path, bool]:
    """Writes the week's index of many repositories to reports/index.md; where, and whether
    the file changed."""
    _no_links(INDEX)
    return INDEX, write(index_markdown(w, tz, entries), INDEX)


def _no_links(path: Path) -> None:
    """Refuses a default report path through a symlink: a committed link could send it anywhere."""
    for part in [*reversed(path.parents[:-1]), path]:
        if part.is_symlink():
            raise OutputError(
                f"cannot write {path}: {part} is a symbolic link, and the default report path "
                "follows none; pass --out to write through it"
            )


def publish_labels(
    report: WeeklyReport,
    tag: str | None,
    settings: Settings,
    out: Path | None,
    fmt: Format = Format.markdown,
) -> None:
    """Renders the week's digests grouped by tag and writes them to `out` (None: stdout); to a
    Markdown or HTML file, with the digests beside it."""
    link = with_digests(report, fmt, out)
    if link:
        write(labels_text(report, tag, settings.tags, fmt, link), out)
    else:
        write(labels_file(report, tag, settings.tags, fmt), out)


def partly(report: WeeklyReport) -> PartialFailure:
    """The error (exit 12) of a report that lists PRs whose digest failed: the report names
    them for readers; why each failed is said here, for the operator."""
    why = "; ".join(f"#{f.number}: {one_line(f.error)}" for f in report.failed)
    return PartialFailure(
        f"{plural(len(report.failed), 'PR')} failed ({why}); the report lists them, "
        "rerun to retry only those"
    )
