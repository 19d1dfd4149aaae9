"""Before a page is printed: a font that covers its Chinese, among the fonts fontconfig gives
Chromium. Without one Chromium prints every Chinese character as a box, and says nothing."""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from functools import cache

from prhub.errors import NoCJKFont

__all__ = ["PACKAGE", "require_cjk"]

PACKAGE = "fonts-noto-cjk"  # Debian's and Ubuntu's; the runner's apt-get installs it
# Ideographs, their extension A, compatibility ideographs, and CJK punctuation and full widths.
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
# What decides which fonts fontconfig finds: its configuration and the user's font folders.
_FONTCONFIG = ("FONTCONFIG_FILE", "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT", "XDG_DATA_HOME", "HOME")
log = logging.getLogger("prhub")


def require_cjk(page: str, env: Mapping[str, str] | None = None) -> None:
    """Raises NoCJKFont when `page` holds Chinese and no installed font covers Chinese. On
    macOS and Windows, which ship such fonts and where Chromium does not ask fontconfig,
    nothing is checked."""
    if not sys.platform.startswith("linux") or not _CJK.search(page):
        return
    env = os.environ if env is None else env
    found = _chinese_fonts(tuple(env.get(name, "") for name in _FONTCONFIG), env.get("PATH"))
    if found is None:
        log.warning(
            "cannot tell whether a font covers Chinese (no fc-list on PATH): if the PDF shows "
            "boxes, install %s",
            PACKAGE,
        )
    elif not found:
        raise NoCJKFont(
            "no installed font covers Chinese (fc-list :lang=zh finds none), so the PDF would "
            f"print boxes: install one (apt-get install {PACKAGE}), or leave out the PDF"
        )


@cache
def _chinese_fonts(fontconfig: tuple[str, ...], path: str | None) -> list[str] | None:
    """The families fontconfig says cover Chinese, asked once a process for a configuration;
    None when fontconfig's fc-list is not there to ask."""
    program = shutil.which("fc-list", path=path)
    if program is None:
        return None
    env = {**os.environ, **dict(zip(_FONTCONFIG, fontconfig, strict=True))}
    env = {k: v for k, v in env.items() if v or k not in _FONTCONFIG}
    try:
        done = subprocess.run(
            [program, ":lang=zh", "family"], env=env, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("fc-list failed (%s): cannot tell whether a font covers Chinese", exc)
        return None
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]
