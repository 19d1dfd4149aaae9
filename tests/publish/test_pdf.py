"""PDFs printed from the report's own page by headless Chromium: its Chinese text, tables and
folds, the same bytes for the same page, offline, and nothing left behind."""

from __future__ import annotations

import http.server
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pypdf
import pytest

from prhub.errors import OutputError, PdfUnavailable
from prhub.model import FailedPR, WeeklyReport
from prhub.publish import html, output, pdf
from tests.factories import assert_fails, digest, prhub, process_env, report, summarize

try:
    CHROMIUM: str | None = pdf.chromium()
except PdfUnavailable:
    CHROMIUM = None
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (apt-get install -y chromium)"
)
INSTALL = "prhub: error: PDF needs Chromium: install chromium (apt-get install chromium "
INSTALL += "fonts-noto-cjk) or set PRHUB_CHROMIUM"
A4 = (595, 842)  # points
# Text a PDF reader would get instead of the characters written: radicals, ligatures.
LOOKALIKES = [chr(c) for c in (*range(0x2E80, 0x2FE0), *range(0xFB00, 0xFB07))]


def folded_report() -> WeeklyReport:
    """The fixture week with failed PRs, and more flagged ones than a page shows before its fold."""
    r = report()
    failed = [FailedPR(number=107 + i, error=f"超时 read_{i}") for i in range(8)]
    facts = r.facts.model_copy(update={"untested": [*r.facts.untested, *range(201, 209)]})
    return r.model_copy(update={"failed": failed, "facts": facts})


def text_of(data: bytes) -> str:
    return "\n".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages)


def flat(text: str) -> str:
    """Text without its spaces and line breaks, which the PDF puts where its lines end."""
    return "".join(text.split())


@pytest.fixture(scope="module")
def weekly_pdf() -> bytes:
    if CHROMIUM is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium)")
    return pdf.pdf(html.weekly_html(folded_report()))


@needs_chromium
def test_the_weekly_pdf_holds_its_chinese_text_tables_and_folds(weekly_pdf):
    assert weekly_pdf.startswith(b"%PDF-")
    reader = pypdf.PdfReader(io.BytesIO(weekly_pdf))
    assert [round(float(x)) for x in reader.pages[0].mediabox[2:]] == list(A4)
    text = text_of(weekly_pdf)
    r = folded_report()
    for heading in ("本周亮点", "风险观察", "完整周报", "5. 重点 PR 速览", "本周数据", "全部 PR"):
        assert heading in text
    assert r.narrative is not None and flat(r.narrative.lead) in flat(text)
    for d in r.digests:  # 全部 PR: every row, its last column included
        assert f"#{d.number}" in text and f"{d.content.importance:.1f}" in text
    assert all(flat(d.content.title) in flat(text) for d in r.digests)
    assert "GRPO 优势估计" in text and "KV cache 重置" in text  # cells of 重点 PR 速览
    assert "rocket/trainer/ppo_trainer.py" in text  # a cell of 本周数据
    assert all(f"#{n} 改了代码但没有改测试" in text for n in range(201, 209))  # folded after five
    failed = flat(text).split("未能生成导读的PR")[-1]
    assert all(f"#{107 + i}" in failed for i in range(8))
    assert "显示 6 / 6" not in text  # the tag filter is for the page only
    assert not [c for c in text if c in LOOKALIKES]


@needs_chromium
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils is not installed")
def test_pdftotext_reads_the_weekly_pdf_back_as_pypdf_does(weekly_pdf, tmp_path):
    (tmp_path / "w.pdf").write_bytes(weekly_pdf)
    read = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(tmp_path / "w.pdf"), "-"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for heading in ("本周亮点", "风险观察", "完整周报", "重点 PR 速览", "全部 PR"):
        assert flat(heading) in flat(read), heading
    assert "GRPO 优势估计" in read or flat("GRPO 优势估计") in flat(read)  # a table's cell


def test_a_print_whose_structure_ids_shifted_gives_the_same_bytes(weekly_pdf):
    """Chromium names the tagged structure's elements after DOM nodes, and a busy machine
    shifted that count by one between two prints of one page: prhub renumbers them."""
    import re

    from prhub.publish.pdf import _fixed

    ids = re.findall(rb"node(\d{8})", weekly_pdf)
    assert ids and b"/IDTree" in weekly_pdf  # a table's headers, cited by its cells
    shifted = re.sub(rb"node(\d{8})", lambda m: b"node%08d" % (int(m[1]) + 86), weekly_pdf)
    assert shifted != weekly_pdf and _fixed(shifted) == weekly_pdf


def test_the_same_page_prints_the_same_bytes(weekly_pdf):
    assert pdf.pdf(html.weekly_html(folded_report())) == weekly_pdf
    assert b"/CreationDate" not in weekly_pdf and b"/ModDate" not in weekly_pdf


@needs_chromium
def test_the_digest_pdf_holds_its_chinese_text():
    d = digest()
    text = text_of(pdf.pdf(html.digest_html(d)))
    assert flat(f"#101 {d.content.title}") in flat(text)
    assert "值得关注的设计决策" in text and "风险" in text and "后续跟进" in text
    assert flat(d.content.design_decisions[1].replace("`", "")) in flat(text)
    assert not [c for c in text if c in LOOKALIKES]


@needs_chromium
def test_printing_fetches_nothing(tmp_path):
    hits: list[str] = []

    class Counter(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        at = f"127.0.0.1:{server.server_address[1]}"
        # No CSP here: the browser itself must send nothing, to an address or a name.
        page = (
            f'<link rel="stylesheet" href="http://{at}/a.css"><img src="http://{at}/b.png">'
            f'<img src="http://localhost:{at.split(":")[1]}/c.png">'
            f'<script>fetch("http://{at}/d")</script><p>离线</p>'
        )
        assert "离线" in text_of(pdf.pdf(page))
    finally:
        server.shutdown()
        server.server_close()
    assert hits == []


@needs_chromium
def test_weekly_format_pdf_writes_the_report_and_a_rerun_leaves_it(env, tmp_path):
    week = ("weekly", "--week", "31", "--year", "2026")
    result = prhub(env, *week, "--format", "pdf")
    assert result.exit_code == 0, result.stderr
    path = Path("reports/acme/rocket/2026-W31.pdf")
    assert f"prhub: wrote {path}" in result.stderr.splitlines()
    first = (tmp_path / path).read_bytes()
    assert "本周亮点" in text_of(first)
    again = prhub(env, *week, "--out", str(path))  # the suffix names the format
    assert again.exit_code == 0, again.stderr
    assert f"prhub: unchanged {path}" in again.stderr.splitlines()
    assert (tmp_path / path).read_bytes() == first
    labels = prhub(env, "labels", *week[1:], "--tag", "rollout", "--out", "rollout.pdf")
    assert labels.exit_code == 0, labels.stderr
    assert "rollout" in text_of((tmp_path / "rollout.pdf").read_bytes())


def test_no_chromium_is_exit_15_with_what_to_install(env, tmp_path):
    named = summarize({**env, "PRHUB_CHROMIUM": str(tmp_path / "nowhere")}, "--out", "d.pdf")
    assert_fails(named, 15, "PRHUB_CHROMIUM", spent=True)
    assert f"PRHUB_CHROMIUM={tmp_path / 'nowhere'} is no program" in named.stderr
    (tmp_path / "empty").mkdir()
    on_path = summarize(
        {**env, "PATH": str(tmp_path / "empty"), "PRHUB_CHROMIUM": None}, "--format", "pdf"
    )
    assert_fails(on_path, 15, "PDF needs Chromium")
    assert on_path.stderr.splitlines() == [INSTALL]
    assert not (tmp_path / "d.pdf").exists()


def fake_chromium(tmp_path: Path, body: str) -> str:
    script = tmp_path / "chromium"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


def test_a_failing_chromium_is_named_with_its_last_line(tmp_path, monkeypatch):
    lines = 'echo "[0:ERROR:bus.cc] noise" >&2\necho "FATAL: no usable sandbox" >&2\nexit 3\n'
    monkeypatch.setenv("PRHUB_CHROMIUM", fake_chromium(tmp_path, lines))
    with pytest.raises(PdfUnavailable, match=r"^Chromium failed \(exit 3\): FATAL: no usable"):
        pdf.pdf("<p>x</p>")


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# A browser that hangs with a helper of its own, and says who they are.
HANGS = 'sleep 60 &\necho "$$ $!" > "$PIDS"\nwait\n'


def test_a_hanging_chromium_is_stopped_in_time_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PRHUB_CHROMIUM", fake_chromium(tmp_path, HANGS))
    monkeypatch.setenv("PIDS", str(tmp_path / "pids"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    started = time.monotonic()
    with pytest.raises(PdfUnavailable, match=r"^Chromium did not print the page within 1 s$"):
        pdf.pdf("<p>x</p>", timeout=1)
    assert time.monotonic() - started < 10
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 and not any(alive(p) for p in pids)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_sigterm_while_printing_leaves_no_process_or_file(env, tmp_path):
    (tmp_path / "tmp").mkdir()
    extra = {
        "PRHUB_CHROMIUM": fake_chromium(tmp_path, HANGS),
        "PIDS": str(tmp_path / "pids"),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    args = ["summarize", "--pr", "101", "--repo", "acme/rocket", "--out", "d.pdf", "-q"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "prhub", *args],
        env=process_env({**env, **extra}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "pids").exists() or not (tmp_path / "pids").read_text().strip():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "prhub: interrupted" in err
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert not any(alive(p) for p in pids)
    assert list((tmp_path / "tmp").iterdir()) == [] and not (tmp_path / "d.pdf").exists()


def test_a_pdf_is_not_written_to_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdout", Terminal())
    with pytest.raises(OutputError, match="cannot write a PDF to a terminal"):
        output.write(b"%PDF-1.4", None)


def test_text_reads_back_as_written_through_the_pdf_text_maps():
    cmap = (
        b"2 beginbfchar\n<03> <2F42>\n<04> <FB01>\nendbfchar\n"
        b"2 beginbfrange\n<05> <07> <2F00>\n<08> <09> <0041>\nendbfrange\n"
    )
    fixed = pdf._BFRANGE.sub(pdf._ranges, pdf._BFCHAR.sub(pdf._chars, cmap))
    assert fixed == (
        b"2 beginbfchar\n<03> <6587>\n<04> <00660069>\nendbfchar\n"
        b"2 beginbfrange\n<05> <07> [<4E00> <4E28> <4E36>]\n<08> <09> <0041>\nendbfrange\n"
    )
    assert pdf._read("⻛险⽂档，ﬁx") == "风险文档，fix"


def test_the_browser_is_found_by_its_variable_then_on_path(tmp_path):
    exe = fake_chromium(tmp_path, "exit 0\n")
    assert pdf.chromium({"PRHUB_CHROMIUM": exe, "PATH": ""}) == exe
    assert pdf.chromium({"PATH": str(tmp_path)}) == exe
    google = tmp_path / "bin"
    google.mkdir()
    (google / "google-chrome").symlink_to(exe)
    assert pdf.chromium({"PATH": str(google)}) == str(google / "google-chrome")
    with pytest.raises(PdfUnavailable, match="^PDF needs Chromium"):
        pdf.chromium({"PATH": str(tmp_path / "none")})
    assert os.access(exe, os.X_OK)
