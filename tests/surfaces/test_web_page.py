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
    assert first.find_element(By.CSS_SELECTOR, ".where").text.endswith("auth.md:1-7")
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


# --------------------------------------------------------------------------- a page people keep open
SHOTS = Path(os.environ.get("KENNING_SCREENSHOTS") or "/tmp/kenning-screenshots")


def _shot(browser, name: str) -> Path:
    """A screenshot for a person to look at (the test's assertions are on the DOM and styles)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    assert browser.save_screenshot(str(path)) and path.stat().st_size > 5_000
    print(f"screenshot: {path}")
    return path


def _search(browser, base, query, **params):
    from urllib.parse import urlencode

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{base}/?{urlencode({'q': query, **params})}")
    WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".hit, .note"))


def _luminance(css_colour: str) -> float:
    """Relative luminance (0 black .. 1 white) of a computed `rgb(...)` / `rgba(...)` colour."""
    r, g, b = (float(x) for x in css_colour[css_colour.index("(") + 1 :].rstrip(")").split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def test_the_answer_panel_cites_lines_and_says_not_found_plainly(index_dir, http_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    base = http_server(index_dir)
    wait = WebDriverWait(browser, 30)
    browser.get(base + "/")
    browser.find_element(By.ID, "q").send_keys("How often are the signing keys rotated?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#answer .cite"))
    panel = browser.find_element(By.ID, "answer")
    assert panel.find_element(By.TAG_NAME, "h2").text == "Answer"
    assert "quarter" in panel.text.lower()
    assert "quarter" in panel.find_element(By.CSS_SELECTOR, ".answer-lead").text.lower()  # the lead first
    assert "answer=true" in browser.current_url  # a shared link asks again
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".hit"))  # the results still come below it
    assert panel.location["y"] < browser.find_element(By.CSS_SELECTOR, ".hit").location["y"]
    panel.find_element(By.CSS_SELECTOR, ".cite").click()  # a citation opens its lines
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#document .hot"))
    hot = browser.find_element(By.CSS_SELECTOR, "#document .hot").text
    assert "Rotate the signing keys every quarter." in hot
    _shot(browser, "answer-panel")

    browser.refresh()  # the answer comes back from the URL
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#answer .cite"))

    box = browser.find_element(By.ID, "q")
    box.clear()
    box.send_keys("Who won the 1998 chess olympiad in Elista?")
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: "Not found" in d.find_element(By.ID, "answer").text)
    panel = browser.find_element(By.ID, "answer")
    assert "not-found" in panel.get_attribute("class")
    assert not panel.find_elements(By.CSS_SELECTOR, "h2 + .answer-text + ol")  # no citations as if answered
    box = browser.find_element(By.ID, "q")
    box.clear()
    box.send_keys("backup", Keys.ENTER)  # a plain search closes the panel
    wait.until(lambda d: not d.find_element(By.ID, "answer").is_displayed())
    assert "answer=true" not in browser.current_url


def test_dark_mode_follows_the_system(index_dir, http_server, browser):
    from selenium.webdriver.common.by import By

    base = http_server(index_dir)
    _search(browser, base, "rotate signing keys")
    style = lambda selector, prop: browser.execute_script(  # noqa: E731
        "return getComputedStyle(document.querySelector(arguments[0]))[arguments[1]]", selector, prop
    )
    assert _luminance(style("body", "backgroundColor")) > 0.9  # light unless the system asks
    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    try:
        assert _luminance(style("body", "backgroundColor")) < 0.1
        assert _luminance(style("body", "color")) > 0.8  # light text on it
        assert _luminance(style("header", "backgroundColor")) < 0.15
        assert _luminance(style("mark", "backgroundColor")) < 0.5  # a highlight that does not glare
        assert _luminance(style("#q", "backgroundColor")) < 0.15  # and fields that are dark too
        browser.find_element(By.TAG_NAME, "body").click()
        _shot(browser, "dark-mode")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_at_400_px_the_document_goes_under_the_results(index_dir, http_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.set_window_size(400, 860)
    base = http_server(index_dir)
    _search(browser, base, "rotate signing keys")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ENTER)
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "document").is_displayed())
    box = lambda selector: browser.execute_script(  # noqa: E731
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {top: r.top + scrollY, bottom: r.bottom + scrollY, left: r.left, width: r.width};",
        selector,
    )
    results, document = box("#results"), box("#document")
    assert document["top"] >= results["bottom"] - 1  # stacked, not side by side
    assert abs(document["width"] - results["width"]) < 30 and results["width"] > 300  # both full width
    overflow = browser.execute_script("return document.documentElement.scrollWidth - innerWidth")
    assert overflow <= 0  # nothing wider than the screen
    _shot(browser, "narrow-400px")


def test_results_are_reachable_with_tab(index_dir, http_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    base = http_server(index_dir)
    _search(browser, base, "rotate signing keys")
    browser.find_element(By.ID, "q").click()
    active = lambda: browser.switch_to.active_element  # noqa: E731
    for _ in range(12):  # past the mode, the buttons and the filters
        active().send_keys(Keys.TAB)
        if "hit" in (active().get_attribute("class") or ""):
            break
    card = active()
    assert "hit" in card.get_attribute("class") and card.get_attribute("data-i") == "0"
    assert browser.execute_script("return getComputedStyle(arguments[0]).outlineStyle", card) != "none"
    card.send_keys(Keys.TAB)  # the next result
    assert active().get_attribute("data-i") == "1" and "selected" in active().get_attribute("class")
    active().send_keys(Keys.ENTER)  # opens the result that has the focus
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "document").is_displayed())
    second = browser.find_elements(By.CSS_SELECTOR, ".hit")[1].find_element(By.CSS_SELECTOR, ".where").text
    assert second.split(":")[0] in browser.find_element(By.CSS_SELECTOR, "#document h2").text


@pytest.fixture
def long_note(tmp_path):
    notes = tmp_path / "long"
    notes.mkdir()
    lines = ["# Logbook", ""]
    for i in range(3, 4001):
        said = "The lighthouse keeper writes the tide." if i == 2000 else f"Entry {i}: calm sea and fog."
        lines.append(said)
    (notes / "logbook.md").write_text("\n".join(lines) + "\n")
    with Index(tmp_path / "ix") as ix:
        ix.add([notes])
    return tmp_path / "ix"


def test_the_document_view_reads_a_window_and_more_on_scroll(long_note, http_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    base = http_server(long_note)
    wait = WebDriverWait(browser, 20)
    _search(browser, base, "lighthouse keeper", mode="lexical")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#document .hot"))

    def numbers():
        return browser.execute_script(
            "return [...document.querySelectorAll('#document .row')].map(r => +r.dataset.n)"
        )

    first = numbers()
    assert 2000 in first and len(first) < 1500  # a window around the hit, not 4,000 lines
    assert first == sorted(first) and len(set(first)) == len(first)
    assert "below" in browser.find_element(By.ID, "doc-below").text
    browser.execute_script("document.getElementById('doc-below').scrollIntoView()")
    wait.until(lambda d: max(numbers()) > max(first))  # more, read as the end comes into view
    browser.execute_script("document.getElementById('doc-above').scrollIntoView()")
    wait.until(lambda d: min(numbers()) < min(first))  # and the lines before it
    # put above, they leave the line that was read where it was: the top edge is out of sight again
    edge = "return document.getElementById('doc-above').getBoundingClientRect().bottom"
    assert browser.execute_script(edge) < browser.execute_script(
        "return document.getElementById('document').getBoundingClientRect().top"
    )
    shown = numbers()
    assert shown == sorted(shown) and len(set(shown)) == len(shown)  # each line once, in order
    for _ in range(20):  # to the very end: the last line comes, and nothing is promised after it
        seen = max(numbers())
        if seen == 4000:
            break
        browser.execute_script("document.getElementById('doc-below').scrollIntoView()")
        wait.until(lambda d, seen=seen: max(numbers()) > seen)
    assert max(numbers()) == 4000
    assert not browser.find_element(By.ID, "doc-below").is_displayed()


def test_explain_shows_feedback_and_why_a_hit_without_the_words_is_there(index_dir, http_server, browser):
    from selenium.webdriver.common.by import By

    base = http_server(index_dir)
    _search(browser, base, "rotate signing keys", explain="true", mode="hybrid")
    explained = browser.find_element(By.CSS_SELECTOR, ".hit .explain").text
    lexical = next(line for line in explained.splitlines() if line.startswith("lexical:"))
    assert "lexical: score" in lexical
    assert "(the query as asked)" in explained  # the BM25 line says which score it explains
    # feedback raised the lexical score past the BM25 sum shown below it: the view says by how much
    assert "for the query as asked +" in explained and "from feedback" in explained
    assert "terms of the first pass's best hits: " in explained
    _search(browser, base, "idle logout", mode="hybrid")  # no note holds either word; meaning finds one
    cards = browser.find_elements(By.CSS_SELECTOR, ".hit")
    assert cards, browser.find_element(By.ID, "results").text
    note = cards[0].find_element(By.CSS_SELECTOR, ".evidence").text
    assert note.startswith("no query word: found by meaning (cosine ")


def test_a_hit_found_through_the_glossary_names_its_group(index_dir, http_server, browser):
    from selenium.webdriver.common.by import By

    with Index(index_dir) as ix:
        ix.glossary.add("key rotation", ["signing keys"])
    base = http_server(index_dir)
    _search(browser, base, "Key Rotation", mode="lexical")  # a term of two words, typed without quotes
    card = browser.find_elements(By.CSS_SELECTOR, ".hit")[0]
    assert card.find_element(By.TAG_NAME, "h3").text.startswith("Auth > Tokens")
    note = card.find_element(By.CSS_SELECTOR, ".glossary").text
    assert note == "matched \"signing keys\" via glossary group 'key rotation' in body"


def test_a_chat_hit_lists_the_message_that_matched_by_sender(tmp_path, http_server, browser):
    import json

    from selenium.webdriver.common.by import By

    (tmp_path / "chat").mkdir()
    rows = [
        ("Alice", "Are you coming on Friday?", 1_700_000_000),
        ("Bob", "I'll pick you up at the airport", 1_700_000_060),
        ("Alice", "Great, thanks", 1_700_000_120),
    ]
    (tmp_path / "chat" / "log.jsonl").write_text(
        "".join(
            json.dumps({"conversation": "family", "sender": s, "text": t, "timestamp": ts}) + "\n"
            for s, t, ts in rows
        )
        + json.dumps(
            {"conversation": "work", "sender": "Carol", "text": "airport shuttle", "timestamp": 1_700_100_000}
        )
        + "\n"
    )
    with Index(tmp_path / "ix") as ix:
        ix.add([tmp_path / "chat"])
    base = http_server(tmp_path / "ix")
    _search(browser, base, "airport", meta="sender=Bob", mode="lexical")
    cards = browser.find_elements(By.CSS_SELECTOR, ".hit")
    assert len(cards) == 1 and cards[0].find_element(By.TAG_NAME, "h3").text.startswith("family")
    matched = cards[0].find_element(By.CSS_SELECTOR, ".messages li.matched")
    assert "Bob: I'll pick you up at the airport" in matched.text
    assert matched.find_element(By.TAG_NAME, "time").get_attribute("datetime") == "2023-11-14T22:14:20+00:00"
    assert len(cards[0].find_elements(By.CSS_SELECTOR, ".messages li")) == 3  # with its neighbours
