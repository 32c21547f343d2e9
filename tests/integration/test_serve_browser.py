"""The search page in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
``make install`` installs) driven by Selenium types a German query, submits it, and reads what the page shows."""

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from clirplug.methods import Bm25Run
from clirplug.qt.psq_tables import PsqSettings
from clirplug.serve.app import create_app, running
from clirplug.serve.service import SearchService

pytestmark = pytest.mark.jvm

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


@pytest.fixture(scope="module")
def browser():
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.is_file()]
    if missing:
        pytest.fail(f"{' and '.join(missing)} missing: the browser test needs Debian's chromium and chromium-driver "
                    "(as root: apt-get install chromium chromium-driver; `make install` does it)", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1100,1400"):
        options.add_argument(argument)
    # an explicit driver and browser: Selenium Manager has nothing to look up or download
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def search_on_the_page(driver, url: str, query: str, k: int):
    """Open the page, type ``query`` and ``k``, submit, and wait for the result list."""
    driver.get(url + "/")
    box = driver.find_element(By.ID, "q")
    box.send_keys(query)
    count = driver.find_element(By.ID, "k")
    count.clear()
    count.send_keys(str(k))
    driver.find_element(By.ID, "go").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#results li.hit")
                                    or "error" in d.find_element(By.ID, "status").get_attribute("class"))
    return driver.find_elements(By.CSS_SELECTOR, "#results li.hit")


def test_the_page_shows_the_translation_and_the_ranked_documents(demo, browser):
    config = demo[0]
    psq = PsqSettings.parse("lambda=1:0:0")  # the token table: several weighted alternatives per word
    service = SearchService("psq", config.index_dir, {"psq": {"settings": psq, "bm25": Bm25Run(**config.bm25)}},
                            model=config.model_dir, kind="flat")
    query = "wandelt Bilder in ein anderes Bildformat um"
    expected = service.search([("q", query)], 5)[0]
    with running(create_app(service)) as url:
        hits = search_on_the_page(browser, url, query, 5)
        assert browser.find_element(By.ID, "method").text == "(psq)"
        assert browser.find_element(By.ID, "best").text == expected["translation"]["best"]
        rows = browser.find_elements(By.CSS_SELECTOR, "#psq tr")
        assert [row.find_element(By.CSS_SELECTOR, "b").text for row in rows] == \
            [term["source"] for term in expected["translation"]["psq"]]
        shown = [span.text.split() for span in rows[2].find_elements(By.CSS_SELECTOR, ".alt")]
        assert shown == [[t["term"], f"{t['p']:.3f}"] for t in expected["translation"]["psq"][2]["targets"]]
        assert len(shown) > 1
        assert [hit.find_element(By.CLASS_NAME, "title").text for hit in hits] == [h["title"] for h in expected["hits"]]
        assert hits[0].find_element(By.CLASS_NAME, "title").text == "convert images into a different image format"
        assert hits[0].find_element(By.CLASS_NAME, "snippet").text == expected["hits"][0]["snippet"]
        assert expected["hits"][0]["docid"] in hits[0].find_element(By.CLASS_NAME, "meta").text
        assert browser.find_element(By.ID, "status").text == "5 documents"
        assert "q=wandelt" in browser.current_url  # the address repeats the search


def test_the_page_shows_each_documents_bowfd_derivation(demo, browser):
    config = demo[0]
    options = {"bowfd": {"first_stage": "dt", "depth": 20}, "dt": {"bm25": Bm25Run(**config.bm25)}}
    service = SearchService("bowfd", config.index_dir, options, model=config.model_dir, kind="flat")
    query = "zeigt den Verzeichnisbaum an"
    expected = service.search([("q", query)], 3)[0]
    with running(create_app(service)) as url:
        hits = search_on_the_page(browser, url, query, 3)
        derivations = [hit.find_element(By.CLASS_NAME, "derivation").text for hit in hits]
    assert derivations == [f"winning derivation: {hit['derivation']}" for hit in expected["hits"]]
    assert browser.find_element(By.ID, "best").text == expected["translation"]["best"]


def test_the_page_shows_a_refused_query(demo, browser):
    config = demo[0]
    with running(create_app(SearchService("bm25", config.index_dir, {"bm25": config.bm25}))) as url:
        browser.get(url + "/")
        browser.execute_script("document.getElementById('q').value = '   ';"
                               "document.getElementById('search').requestSubmit();")
        status = browser.find_element(By.ID, "status")
        WebDriverWait(browser, 60).until(lambda d: "error" in status.get_attribute("class"))
        assert status.get_attribute("textContent") == "the parameter q must be a non-empty string, got '   '"
        assert browser.find_elements(By.CSS_SELECTOR, "#results li.hit") == []

