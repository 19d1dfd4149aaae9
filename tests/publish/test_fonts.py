"""A PDF never prints boxes: without a font that covers Chinese, prhub stops before printing
with its own exit code and the package to install."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import pytest

from prhub.errors import NoCJKFont, PdfUnavailable
from prhub.publish.fonts import require_cjk
from tests.factories import assert_ok, prhub, summarize

PAGE = "<!doctype html><p>采样温度为 0 时改走 argmax</p>"
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fontconfig is Linux's")
needs_fc = pytest.mark.skipif(shutil.which("fc-list") is None, reason="no fc-list (fontconfig)")


@pytest.fixture
def no_fonts(tmp_path: Path) -> dict[str, str]:
    """A fontconfig that knows no font at all, as a runner without fonts-noto-cjk has none
    for Chinese."""
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
        f"<fontconfig><dir>{tmp_path / 'none'}</dir>"
        f"<cachedir>{tmp_path / 'cache'}</cachedir></fontconfig>\n"
    )
    return {"FONTCONFIG_FILE": str(conf)}


@linux
@needs_fc
def test_a_page_in_chinese_without_a_font_for_it_is_refused(no_fonts: dict[str, str]) -> None:
    with pytest.raises(NoCJKFont) as refused:
        require_cjk(PAGE, {**no_fonts, "PATH": str(Path(shutil.which("fc-list") or "").parent)})
    message = str(refused.value)
    assert "\n" not in message and "apt-get install fonts-noto-cjk" in message
    assert refused.value.exit_code == 21 and isinstance(refused.value, PdfUnavailable)
    require_cjk("<p>only ASCII here</p>", no_fonts)  # nothing to cover, nothing asked


@linux
@needs_fc
def test_the_machines_own_chinese_font_passes() -> None:
    import subprocess

    families = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout
    if not families.strip():
        pytest.skip("this machine has no font for Chinese")
    require_cjk(PAGE)


@linux
def test_without_fc_list_it_says_it_cannot_tell(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="prhub"):
        require_cjk(PAGE, {"PATH": "/nonexistent"})
    assert "no fc-list on PATH" in caplog.text and "fonts-noto-cjk" in caplog.text


@linux
@needs_fc
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_a_pdf_is_not_printed_and_the_run_says_what_to_install(
    env: dict[str, str | None], no_fonts: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "101.pdf"
    done = summarize({**env, **no_fonts}, "--out", str(out))
    assert done.exit_code == 21, done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("prhub: error:")]
    assert "no installed font covers Chinese" in line and "fonts-noto-cjk" in line
    assert not out.exists()


@linux
@needs_fc
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium is not installed")
def test_a_site_leaves_the_pdfs_out_and_says_why_or_stops_when_asked_for_them(
    env: dict[str, str | None], no_fonts: dict[str, str], tmp_path: Path
) -> None:
    assert_ok(prhub(env, "weekly", "--week", "31", "--year", "2026"))
    site = prhub({**env, **no_fonts}, "site", str(tmp_path / "site"))
    assert_ok(site)
    assert "warning: no PDFs in the site: no installed font covers Chinese" in site.stderr
    assert not list((tmp_path / "site").rglob("*.pdf"))
    asked = prhub({**env, **no_fonts}, "site", str(tmp_path / "site"), "--pdf")
    assert asked.exit_code == 21, asked.stderr
