"""The site's address: `prhub site --url`, PRHUB_SITE_URL or a report URL that names the site's
week pages make every link of the feeds absolute; without one the build says the feeds link
relative to themselves; a mistaken address is one line."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.factories import assert_fails, assert_ok, cli_env, prhub, site_store

ATOM = "{http://www.w3.org/2005/Atom}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    store = site_store(tmp_path / "store.db")
    return cli_env("http://127.0.0.1:9", "http://127.0.0.1:9/v1", store)


def feed_links(out: Path) -> list[str]:
    feed = ElementTree.parse(out / "acme" / "rocket" / "feed.xml").getroot()
    return [link.get("href") or "" for link in feed.iter(f"{ATOM}link")]


@pytest.mark.parametrize(
    ("args", "extra", "base"),
    [
        (["--url", "https://docs.example.org/prhub"], {}, "https://docs.example.org/prhub/"),
        ([], {"PRHUB_SITE_URL": "https://acme.github.io/news/"}, "https://acme.github.io/news/"),
        (
            [],
            {"PRHUB_REPORT_URL": "https://acme.github.io/site/{repo}/{week}.html"},
            "https://acme.github.io/site/",
        ),
        # --url wins over a report URL that names other pages.
        (
            ["--url", "https://b.example.org/"],
            {"PRHUB_REPORT_URL": "https://a.example.org/{repo}/{week}.html"},
            "https://b.example.org/",
        ),
    ],
)
def test_the_sites_address_makes_every_feed_link_absolute(env, tmp_path, args, extra, base, caplog):
    out = tmp_path / "site"
    result = prhub({**env, **extra}, "site", str(out), "--no-pdf", *args)
    assert_ok(result)
    links = feed_links(out)
    repo = f"{base}acme/rocket/"
    assert links and all(h.startswith(repo) or "/pull/" in h for h in links), links
    assert f"{repo}2026-W31.html" in links and f"{repo}pr/101.html" in links
    assert f"{repo}feed.xml" in links and f"{repo}index.html" in links
    assert "relative" not in caplog.text


def test_without_an_address_the_feeds_link_relative_and_the_build_says_so(env, tmp_path, caplog):
    out = tmp_path / "site"
    # A report URL of another place (the reports committed to a repository) names no site.
    blob = "https://github.com/acme/news/blob/main/{repo}/{week}.md"
    result = prhub({**env, "PRHUB_REPORT_URL": blob}, "site", str(out), "--no-pdf")
    assert_ok(result)
    assert "the feeds link relative to themselves: pass --url" in caplog.text
    own = [h for h in feed_links(out) if "/pull/" not in h]
    assert "2026-W31.html" in own and not any("://" in h for h in own)


@pytest.mark.parametrize("url", ["ftp://docs.example.org/", "docs.example.org", "https://x/?a=1"])
def test_an_address_that_is_no_web_address_is_one_line(env, tmp_path, url):
    out = tmp_path / "site"
    assert_fails(prhub(env, "site", str(out), "--url", url), 3, "--url: must be the site")
    assert not out.exists()
