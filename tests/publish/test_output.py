"""Where results go: format dispatch, report paths, and writes that respect what is there."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from prhub.errors import OutputError
from prhub.model import PRDigest, WeeklyReport
from prhub.publish import html, output, render
from tests.factories import digest, report, settings

TEXT = "# 周报\n\n第一行\n"


def window_report(start: datetime, end: datetime) -> WeeklyReport:
    r = report()
    facts = r.facts.model_copy(update={"repo": "o/r", "week": None, "start": start, "end": end})
    return r.model_copy(update={"facts": facts})


def char_device(tmp_path: Path, name: str, minor: int) -> Path:
    """A private node for /dev/null (minor 3) or /dev/full (minor 7); the real one if refused.

    A private node keeps a regression from replacing the machine's own device.
    """
    node = tmp_path / name
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        return Path(f"/dev/{name}")
    return node


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# Formats


@pytest.mark.parametrize("tz", ["Asia/Shanghai", "UTC"])
def test_digest_text_dispatches_on_format_with_the_timezone(tz):
    d = digest()
    markdown = output.digest_text(d, "markdown", tz)
    assert markdown == render.digest_markdown(d, tz)
    assert markdown.startswith("### [#101](https://github.com/acme/rocket/pull/101) ")
    page = output.digest_text(d, "html", tz)
    assert page == html.digest_html(d, tz)
    assert page.startswith("<!doctype html>\n")
    merged = "2026-07-27 11:12" if tz == "Asia/Shanghai" else "2026-07-27 03:12"
    assert merged in markdown and merged in page
    assert PRDigest.model_validate_json(output.digest_text(d, "json", tz)) == d


def test_weekly_text_dispatches_on_format():
    r = report()
    markdown = output.weekly_text(r, "markdown")
    assert markdown.startswith("# rocket 仓库周报｜2026 年第 31 周（07-27 至 08-02）\n")
    assert markdown == render.weekly_markdown(r)
    assert output.weekly_text(r, "html").startswith("<!doctype html>\n")
    assert WeeklyReport.model_validate_json(output.weekly_text(r, "json")) == r


def test_labels_text_groups_by_tag():
    assert "## rollout\n\n2 个 PR\n" in output.labels_text(report(), None, {})
    assert "#102" not in output.labels_text(report(), "rollout", {})
    # The repository's own spelling of a tag finds it too.
    assert "## rollout\n\n2 个 PR\n" in output.labels_text(
        report(), "sampling", {"sampling": "rollout"}
    )


def test_labels_text_dispatches_on_format():
    r = report()
    assert output.labels_text(r, "doc", {}, "markdown").startswith("# acme/rocket · 标签视图")
    assert json.loads(output.labels_text(r, "doc", {}, "json"))["tag"] == "docs"
    page = output.labels_text(r, "doc", {}, "html")
    assert (
        page.startswith("<!doctype html>\n") and '<h2 id="docs">docs</h2>\n<p>1 个 PR</p>' in page
    )


# Paths


@pytest.mark.parametrize(
    ("fmt", "suffix"), [("markdown", "md"), ("json", "json"), ("html", "html")]
)
def test_report_path_for_a_week(fmt, suffix):
    r = report()
    r = r.model_copy(update={"facts": r.facts.model_copy(update={"repo": "o/r"})})
    assert output.report_path(r, fmt) == Path(f"reports/o/r/2026-W31.{suffix}")
    assert output.report_path(r, fmt, Path("/srv/out")) == Path(f"/srv/out/o/r/2026-W31.{suffix}")


def test_report_path_pads_the_week_number():
    r = report()
    r = r.model_copy(update={"facts": r.facts.model_copy(update={"week": 3, "year": 2027})})
    assert output.report_path(r, "markdown") == Path("reports/acme/rocket/2027-W03.md")


def test_report_path_for_a_window_names_its_last_day():
    tz = timezone(timedelta(hours=8))
    r = window_report(datetime(2026, 7, 1, tzinfo=tz), datetime(2026, 7, 15, tzinfo=tz))
    assert output.report_path(r, "markdown") == Path("reports/o/r/2026-07-01_2026-07-14.md")
    assert output.report_path(r, "json") == Path("reports/o/r/2026-07-01_2026-07-14.json")
    one_day = window_report(datetime(2026, 7, 1, tzinfo=tz), datetime(2026, 7, 2, tzinfo=tz))
    assert output.report_path(one_day, "html") == Path("reports/o/r/2026-07-01_2026-07-01.html")


def test_target():
    default = Path("reports/o/r/2026-W31.md")
    assert output.target("-", default) is None
    assert output.target(None, default) == default
    assert output.target("", default) == default
    assert output.target("x.md", default) == Path("x.md")


# Writes


def test_none_writes_to_stdout(capsys):
    output.write(TEXT, None)
    captured = capsys.readouterr()
    assert captured.out == TEXT and captured.err == ""


def test_a_full_stdout_is_an_output_error(monkeypatch):
    full = open("/dev/full", "w", encoding="utf-8")  # closed below
    monkeypatch.setattr(sys, "stdout", full)
    try:
        with pytest.raises(OutputError) as raised:
            output.write(TEXT, None)
    finally:
        try:
            full.close()
        except OSError:
            pass  # the buffer still holds the text /dev/full refused
    assert str(raised.value) == "cannot write to standard output: No space left on device"
    assert raised.value.exit_code == 14


def test_a_new_file_is_created_with_its_parent_folders(tmp_path):
    out = tmp_path / "reports" / "o" / "r" / "2026-W31.md"
    output.write(TEXT, out)
    assert out.read_text(encoding="utf-8") == TEXT
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask  # not mkstemp's 0600
    assert os.listdir(out.parent) == ["2026-W31.md"]


def test_an_existing_file_is_replaced_whole_and_keeps_its_mode(tmp_path):
    out = tmp_path / "report.md"
    out.write_text("old content that is longer than the new one\n" * 10)
    out.chmod(0o640)
    before = out.stat()
    output.write(TEXT, out)
    after = out.stat()
    assert out.read_text(encoding="utf-8") == TEXT
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert after.st_ino != before.st_ino  # renamed into place, not rewritten in place
    assert os.listdir(tmp_path) == ["report.md"]


def test_the_same_text_leaves_the_file_untouched(tmp_path):
    out = tmp_path / "report.md"
    output.write(TEXT, out)
    os.utime(out, ns=(1_000_000_000, 1_000_000_000))  # a time no write would give
    before = out.stat()
    output.write(TEXT, out)
    after = out.stat()
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert out.read_bytes() == TEXT.encode()
    output.write(TEXT + "变了\n", out)  # one more line: written
    assert out.stat().st_mtime_ns != before.st_mtime_ns
    assert out.read_text(encoding="utf-8") == TEXT + "变了\n"
    same_size = TEXT[:-2] + "X\n"  # same length, other bytes: written
    output.write(same_size, out)
    assert out.read_text(encoding="utf-8") == same_size


def test_writing_through_a_symlink_updates_its_target(tmp_path):
    real = tmp_path / "store" / "latest.md"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.md"
    link.symlink_to(Path("store") / "latest.md")  # relative, as users make them
    output.write(TEXT, link)
    assert link.is_symlink()
    assert os.readlink(link) == os.path.join("store", "latest.md")
    assert real.read_text(encoding="utf-8") == TEXT
    assert leftovers(tmp_path) == [] and leftovers(real.parent) == []


def test_a_dangling_symlink_gets_its_target_created(tmp_path):
    (tmp_path / "new").mkdir()
    link = tmp_path / "latest.md"
    link.symlink_to(tmp_path / "new" / "week.md")
    output.write(TEXT, link)
    assert link.is_symlink()
    assert (tmp_path / "new" / "week.md").read_text(encoding="utf-8") == TEXT


def test_a_dangling_symlink_creates_no_folder_for_its_target(tmp_path):
    link = tmp_path / "latest.md"
    link.symlink_to(tmp_path / "elsewhere" / "deep" / "week.md")
    with pytest.raises(OutputError, match=f"cannot write {link}: it links to .*elsewhere"):
        output.write(TEXT, link)
    assert not (tmp_path / "elsewhere").exists()


def test_a_dangling_symlinked_folder_creates_nothing_through_it(tmp_path):
    (tmp_path / "reports").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputError):
        output.write(TEXT, tmp_path / "reports" / "acme" / "week.md")
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("link", ["reports", "reports/acme", "reports/acme/rocket"])
def test_the_default_report_path_follows_no_symlink(tmp_path, monkeypatch, link):
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    Path(link).parent.mkdir(parents=True, exist_ok=True)
    Path(link).symlink_to(outside)
    with pytest.raises(OutputError, match=f"{link} is a symbolic link"):
        output.publish_weekly(report(), "markdown", None)
    assert list(outside.iterdir()) == []


def test_the_default_report_file_that_is_a_symlink_is_not_written_through(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "reports" / "acme" / "rocket"
    folder.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (folder / "2026-W31.md").symlink_to(victim)
    with pytest.raises(OutputError, match="is a symbolic link"):
        output.publish_weekly(report(), "markdown", None)
    assert victim.read_text() == "keep"


def test_a_fifo_gets_the_text_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []

    def read() -> None:
        with open(fifo, encoding="utf-8") as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    output.write(TEXT, fifo)
    reader.join(timeout=10)
    assert received == [TEXT]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert os.listdir(tmp_path) == ["pipe"]


def test_a_character_device_stays_a_character_device(tmp_path):
    null = char_device(tmp_path, "null", 3)
    assert stat.S_ISCHR(null.stat().st_mode)
    output.write(TEXT, null)
    assert stat.S_ISCHR(null.stat().st_mode)  # written to, not renamed over
    assert leftovers(null.parent) == []


def test_a_full_device_is_an_output_error_naming_it(tmp_path):
    full = char_device(tmp_path, "full", 7)
    with pytest.raises(OutputError) as raised:
        output.write(TEXT, full)
    assert str(raised.value) == f"cannot write {full}: No space left on device"
    assert stat.S_ISCHR(full.stat().st_mode)


def test_a_directory_is_refused_by_name(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    with pytest.raises(OutputError) as raised:
        output.write(TEXT, folder)
    assert str(raised.value) == f"cannot write {folder}: it is a directory; name a file"
    assert list(folder.iterdir()) == []


def test_a_symlink_to_a_directory_is_refused_by_the_name_given(tmp_path):
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    with pytest.raises(OutputError, match=f"cannot write {link}: it is a directory"):
        output.write(TEXT, link)


def test_a_path_under_a_regular_file_is_an_output_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a folder")
    out = blocker / "sub.md"
    with pytest.raises(OutputError) as raised:
        output.write(TEXT, out)
    assert str(raised.value) == f"cannot write {out}: Not a directory"
    assert blocker.read_text() == "a file, not a folder"
    assert os.listdir(tmp_path) == ["file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders anyway")
def test_a_read_only_folder_is_an_output_error_and_leaves_no_temp_file(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(OutputError, match=f"cannot write {folder / 'r.md'}: Permission denied"):
            output.write(TEXT, folder / "r.md")
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o700)


def test_a_failed_rename_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    out = tmp_path / "report.md"
    out.write_text("old")

    def refuse(src: object, dst: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OutputError) as raised:
        output.write(TEXT, out)
    assert str(raised.value) == f"cannot write {out}: Permission denied"
    assert out.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.md"]


def test_stdout_whose_reader_left_is_left_to_the_cli(monkeypatch):
    class Broken(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Broken())
    with pytest.raises(BrokenPipeError):  # cli.main ends quietly, as `| head` expects
        output.write(TEXT, None)


def test_stdout_that_fails_otherwise_is_an_output_error(monkeypatch):
    class Full(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    with pytest.raises(OutputError, match="^cannot write to standard output: No space left"):
        output.write(TEXT, None)


# A report's digests beside it


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_report_written_to_its_folder_has_its_digests_beside_it(tmp_path, monkeypatch, fmt):
    monkeypatch.chdir(tmp_path)
    r = report()
    path, changed = output.publish_weekly(r, fmt, None)
    assert path is not None and changed
    suffix = "md" if fmt == "markdown" else "html"
    folder = path.parent / "pr"
    assert sorted(p.name for p in folder.iterdir()) == [f"{n}.{suffix}" for n in r.facts.prs]
    assert (folder / f"101.{suffix}").read_text() == output.digest_text(
        r.digests[0], fmt, r.facts.tz
    )
    text = path.read_text()
    linked = set(re.findall(rf"\]\((pr/\d+\.{suffix})\)|href=\"(pr/\d+\.{suffix})\"", text))
    targets = {a or b for a, b in linked}
    assert targets == {f"pr/{n}.{suffix}" for n in r.facts.prs}  # every row's link resolves
    assert all((path.parent / t).is_file() for t in targets)
    stamps = {p: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert output.publish_weekly(r, fmt, None) == (path, False)  # a rerun changes no file
    assert {p: p.stat().st_mtime_ns for p in folder.iterdir()} == stamps


def test_a_report_to_stdout_or_as_json_has_no_digests_and_no_links_to_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    output.publish_weekly(report(), "json", None)
    out = tmp_path / "week.md"
    output.publish_weekly(report(), "markdown", str(out))
    assert not (tmp_path / "reports" / "acme" / "rocket" / "pr").exists()
    assert (tmp_path / "pr" / "101.md").is_file() and "](pr/101.md)" in out.read_text()
    assert "pr/" not in output.weekly_text(report(), "markdown")  # what stdout gets


def test_the_digests_folder_follows_no_symlink_on_the_default_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "reports" / "acme" / "rocket"
    folder.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (folder / "pr").symlink_to(outside)
    with pytest.raises(OutputError, match="is a symbolic link"):
        output.publish_weekly(report(), "markdown", None)
    assert list(outside.iterdir()) == [] and not (folder / "2026-W31.md").exists()


def test_labels_to_a_file_have_the_digests_beside_them(tmp_path):
    out = tmp_path / "labels.html"
    output.publish_labels(report(), None, settings(), out, "html")
    assert (tmp_path / "pr" / "101.html").is_file()
    assert 'href="pr/101.html"' in out.read_text()
