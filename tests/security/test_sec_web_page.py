"""Text from a tampered index never runs as script in the web page: every node is built as text, and
the server's Content-Security-Policy forbids inline script anyway. Checked in real Chromium."""

import json
import shutil
import sqlite3
import urllib.request

import pytest

from kenning import Index

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
needs_browser = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver (.ci/run installs them)"
)
PAYLOAD = "<img src=x onerror=\"document.title='pwned';window.pwned=1\">"


@pytest.fixture
def tampered(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "keys.md").write_text("# Keys\n\nRotate the signing keys every quarter.\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
    with sqlite3.connect(tmp_path / "ix" / "index.db") as db:  # what a handed-over index may hold
        # (a page that is not a number is refused as damage: test_sec_tampered_index.py)
        db.execute("UPDATE chunks SET title = ?", ("Keys " + PAYLOAD,))
        db.execute("UPDATE sources SET path = path || ?", ("<svg onload=alert(1)>",))
        db.execute("UPDATE chunks SET doc_key = doc_key || ?", ("<svg onload=alert(1)>",))
    return tmp_path / "ix"


def _chromium():
    """Headless Chromium driven by Debian's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,860"):
        options.add_argument(arg)
    return webdriver.Chrome(service=DriverService(executable_path=DRIVER), options=options)


def test_every_response_carries_the_security_headers(tampered, http_server):
    base = http_server(tampered)
    for path in ("/", "/api/status", "/docs", "/web/app.js", "/api/search?q=keys"):
        with urllib.request.urlopen(base + path) as response:
            headers = response.headers
        policy = headers["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, path
        assert "unsafe-inline" not in policy
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "no-referrer"


def test_the_page_builds_no_markup_from_data():
    from pathlib import Path

    script = (Path(__file__).parents[2] / "src" / "kenning" / "surfaces" / "web" / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink


@needs_browser
def test_a_tampered_index_runs_no_script_in_the_page(tampered, http_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    browser = _chromium()
    try:
        base = http_server(tampered)
        browser.get(base + "/?q=signing+keys&mode=lexical")
        wait = WebDriverWait(browser, 20)
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, ".hit")))
        hit = browser.find_element(By.CSS_SELECTOR, ".hit h3")
        assert PAYLOAD in hit.text  # shown literally, as text
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ENTER)  # open the document
        wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#document h3")))
        assert PAYLOAD in browser.find_element(By.CSS_SELECTOR, "#document h3").text
        assert browser.execute_script("return window.pwned === undefined")
        assert browser.title == "kenning"
        assert browser.find_elements(By.CSS_SELECTOR, "#results img, #document img, svg") == []
        console = [e for e in browser.get_log("browser")] if hasattr(browser, "get_log") else []
        assert not any("pwned" in json.dumps(e) for e in console)
    finally:
        browser.quit()


@needs_browser
def test_the_api_page_of_a_server_with_a_token_asks_for_it_and_sends_it(tampered, http_server):
    """/openapi.json needs the token when the server has one, which a link cannot send: /docs holds no
    data, asks for the token (or takes the one the search page kept for this tab) and sends it with
    every request it makes, the description's own included."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    browser = _chromium()
    try:
        base = http_server(tampered, token="s3cret")
        browser.get(base + "/")
        wait = WebDriverWait(browser, 20)
        wait.until(ready.element_to_be_clickable((By.LINK_TEXT, "API"))).click()
        wait.until(ready.alert_is_present())
        prompt = browser.switch_to.alert
        prompt.send_keys("s3cret")
        prompt.accept()
        wait.until(lambda d: "/api/search" in d.find_element(By.ID, "swagger-ui").text)
        shown = browser.find_element(By.ID, "swagger-ui").text
        assert "/api/index" in shown and "kenning" in shown
        assert browser.current_url.rstrip("/") == base + "/docs"
    finally:
        browser.quit()
