"""The web page in a real browser: Debian's Chromium, headless, driven by Selenium. It types a query,
reads the results, opens one with the keyboard and reads the document; a screenshot is saved."""

import os
import shutil
from pathlib import Path

import pytest

from kenning import Index

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver (.ci/run installs them)"
)


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,860"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=DriverService(executable_path=DRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture
def index_dir(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "auth.md").write_text(
        "# Auth\n\n## Tokens\n\nRotate the signing keys every quarter.\nRevoke leaked tokens at once.\n"
        "\n## Sessions\n\nSessions expire after twelve hours of inactivity.\n"
    )
    (notes / "backup.md").write_text("# Backups\n\nRestore the nightly backup from cold storage.\n")
    for i in range(6):
        (notes / f"runbook-{i}.md").write_text(
            f"# Runbook {i}\n\nStep {i}: check the keys, then the backups.\n"
        )
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
        ix.embed()
    return tmp_path / "ix"


def test_search_read_and_open_a_document_in_a_browser(index_dir, http_server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    base = http_server(index_dir)
    browser.get(base + "/")
    wait = WebDriverWait(browser, 20)
    box = wait.until(ready.element_to_be_clickable((By.ID, "q")))
    box.send_keys("rotate signing keys", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".hit"))
    first = browser.find_elements(By.CSS_SELECTOR, ".hit")[0]
    assert first.find_element(By.TAG_NAME, "h3").text.startswith("Auth > Tokens")
    assert first.find_element(By.CSS_SELECTOR, ".where").text.endswith("auth.md:3-7")
    assert "keys" in [m.text.lower() for m in first.find_elements(By.TAG_NAME, "mark")]
    assert "**" not in browser.find_element(By.ID, "results").text
    status = browser.find_element(By.ID, "status").text
    assert "result(s)" in status and "corpus" in status
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ENTER)  # the keyboard opens the first hit
    wait.until(lambda d: d.find_element(By.ID, "document").is_displayed())
    document = browser.find_element(By.ID, "document")
    assert "Rotate the signing keys every quarter." in document.text
    assert "5" in [e.text for e in document.find_elements(By.CSS_SELECTOR, ".hot .ln")]  # the hit's lines
    browser.find_element(By.CSS_SELECTOR, "#filters summary").click()  # open the filters
    browser.find_element(By.ID, "explain").click()
    box = browser.find_element(By.ID, "q")
    box.clear()
    box.send_keys("backup", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".hit .explain"))
    assert "lexical" in browser.find_element(By.CSS_SELECTOR, ".hit .explain").text
    shot = Path(os.environ.get("KENNING_SCREENSHOT") or tmp_path / "web-page.png")
    browser.find_element(By.ID, "explain").click()
    browser.find_element(By.CSS_SELECTOR, "#filters summary").click()
    box.clear()
    box.send_keys("rotate signing keys", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".hit"))
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ENTER)
    wait.until(lambda d: d.find_element(By.ID, "document").is_displayed())
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


@pytest.fixture
def harbour(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(24):
        status = "draft" if i % 3 == 0 else "final"
        (docs / f"note-{i:02}.md").write_text(
            f"---\nstatus: {status}\n---\n# Note {i}\n\nThe harbour crane {i} lifts containers.\n"
        )
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "log.txt").write_text("The harbour master keeps the log.\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([docs, tmp_path / "other"])
    return tmp_path / "ix"


def test_a_shared_link_restores_the_search_and_pages_on(harbour, http_server, browser):
    """Every filter, explain and the page size come back from the URL; More adds a page, the URL
    follows, and a reload shows the same."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    base = http_server(harbour)
    wait = WebDriverWait(browser, 20)
    browser.get(f"{base}/?q=harbour&mode=lexical&path=docs/*.md&type=markdown&explain=true&limit=5")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".hit")) == 5)
    assert browser.find_element(By.ID, "q").get_attribute("value") == "harbour"
    assert browser.find_element(By.ID, "path").get_attribute("value") == "docs/*.md"
    assert browser.find_element(By.ID, "type").get_attribute("value") == "markdown"
    assert browser.find_element(By.ID, "explain").is_selected()
    assert browser.find_elements(By.CSS_SELECTOR, ".hit .explain")
    browser.find_element(By.ID, "more").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".hit")) == 15)
    assert "limit=15" in browser.current_url and "path=docs" in browser.current_url
    browser.refresh()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".hit")) == 15)
    assert all("log.txt" not in h.text for h in browser.find_elements(By.CSS_SELECTOR, ".hit .where"))
    browser.get(f"{base}/?q=harbour&mode=lexical&meta=status%3Ddraft&limit=30")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".hit")) == 8)  # notes 0, 3, ..., 21
    assert browser.find_element(By.ID, "meta").get_attribute("value") == "status=draft"
    assert not browser.find_elements(By.ID, "more")  # fewer than asked for: nothing more to show
