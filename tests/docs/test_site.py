"""The documentation site builds from docs/ and the docstrings with MkDocs in strict mode: a broken
link, a page missing from the nav's files or a reference mkdocstrings cannot resolve fails the build,
and so this test. The stable-API page names exactly the public names."""

import importlib.util
import os
import re
import subprocess
import sys

import pytest
from locations import REPO

import kenning

NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    missing = [name for name in NEEDED if importlib.util.find_spec(name.split(".")[0]) is None]
    if missing:
        pytest.skip(f"the site needs {', '.join(missing)} (the test extras: pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out


def text_of(page) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text()))


def test_the_site_builds_strictly_with_every_page(site):
    for page in ("python", "cli", "http", "mcp", "stable-api", "scoring", "reference/search"):
        assert (site / page / "index.html").is_file(), page
    reference = text_of(site / "reference" / "search" / "index.html")
    for shown in ("Index", "search", "build_request", "SearchResponse", "Hit", "Rank chunks for a query"):
        assert shown in reference, shown  # rendered from the docstrings, not left as `::: name`
    assert ":::" not in reference


def test_the_stable_api_page_names_exactly_the_public_names():
    page = (REPO / "docs" / "stable-api.md").read_text()
    named = set(re.findall(r"^\| `kenning\.(\w+)` \|", page, flags=re.M))
    assert named == set(kenning.__all__)
