"""The search page in a real browser: headless Chromium (Debian's chromium and chromium-driver, which
``make install`` installs) driven by Selenium types a German query, submits it, and reads what the page shows:
the translation with its untranslated words marked, the ranked documents with their highlighted words and links,
BOW-FD's derivations and term contributions, and, with two systems, the switcher and the side-by-side view."""

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

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


def settled(driver) -> bool:
    """Every column has its answer: documents or an error."""
    statuses = driver.find_elements(By.CSS_SELECTOR, ".column .status")
    return bool(statuses) and all(s.text and not s.text.startswith("searching") for s in statuses)


def search_on_the_page(driver, url: str, query: str, k: int):
    """Open the page, type ``query`` and ``k``, submit, and wait for the result list."""
    driver.get(url + "/")
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".column"))
    box = driver.find_element(By.ID, "q")
    box.send_keys(query)
    count = driver.find_element(By.ID, "k")
    count.clear()
    count.send_keys(str(k))
    driver.find_element(By.ID, "go").click()
    WebDriverWait(driver, 60).until(settled)
    return driver.find_elements(By.CSS_SELECTOR, ".column li.hit")


def marks(element) -> list[str]:
    return [mark.text for mark in element.find_elements(By.TAG_NAME, "mark")]


def test_the_page_shows_the_translation_and_the_ranked_documents(demo, browser):
    config = demo[0]
    psq = PsqSettings.parse("lambda=1:0:0")  # the token table: several weighted alternatives per word
    service = SearchService("psq", config.index_dir, {"psq": {"settings": psq, "bm25": Bm25Run(**config.bm25)}},
                            model=config.model_dir, kind="flat")
    query = "wandelt Bilder in ein anderes Bildformat um"
    expected = service.search([("q", query)], 5)[0]
    with running(create_app(service)) as url:
        hits = search_on_the_page(browser, url, query, 5)
        assert not browser.find_element(By.ID, "systems").is_displayed()  # one system: no switcher
        assert browser.find_element(By.CSS_SELECTOR, ".best").text == expected["translation"]["best"]
        copied = [span.text for span in browser.find_elements(By.CSS_SELECTOR, ".best .untranslated")]
        assert copied == expected["translation"]["untranslated"] == ["anderes", "um"]
        rows = browser.find_elements(By.CSS_SELECTOR, ".psq tr")
        assert [row.find_element(By.CSS_SELECTOR, "b").text for row in rows] == \
            [term["source"] for term in expected["translation"]["psq"]]
        shown = [span.text.split() for span in rows[2].find_elements(By.CSS_SELECTOR, ".alt")]
        assert shown == [[t["term"], f"{t['p']:.3f}"] for t in expected["translation"]["psq"][2]["targets"]]
        assert len(shown) > 1
        for row, term in zip(rows, expected["translation"]["psq"]):  # a word searched as itself: no p = 1.000
            marked = row.find_elements(By.CSS_SELECTOR, ".untranslated")
            assert bool(marked) == term["untranslated"] and (not marked or not row.find_elements(By.CSS_SELECTOR, ".p"))
        assert any(term["untranslated"] for term in expected["translation"]["psq"])
        assert [hit.find_element(By.CLASS_NAME, "title").text for hit in hits] == [h["title"] for h in expected["hits"]]
        first, answer = hits[0], expected["hits"][0]
        assert first.find_element(By.CLASS_NAME, "title").text == "convert images into a different image format"
        assert first.find_element(By.CLASS_NAME, "snippet").text == answer["snippet"]
        assert marks(first.find_element(By.CLASS_NAME, "snippet")) == [answer["snippet"][a:b] for a, b in
                                                                       answer["highlights"]] != []
        assert marks(first.find_element(By.CLASS_NAME, "title")) == [answer["title"][a:b] for a, b in
                                                                     answer["title_highlights"]] != []
        assert answer["docid"] in first.find_element(By.CLASS_NAME, "meta").text
        assert browser.find_element(By.CSS_SELECTOR, ".status").text == "5 documents"
        assert "q=wandelt" in browser.current_url  # the address repeats the search
        first.find_element(By.CSS_SELECTOR, ".title a").click()  # the link to the document
        WebDriverWait(browser, 30).until(lambda d: "/doc/" in d.current_url)
        assert '"docid":"imgconv.1"' in browser.find_element(By.TAG_NAME, "body").text


def test_the_page_switches_systems_and_shows_two_side_by_side(demo, browser):
    config = demo[0]
    bm25 = SearchService("bm25", config.index_dir, {"bm25": {"bm25": Bm25Run(**config.bm25)}})
    dt = SearchService("dt", config.index_dir, {"dt": {"bm25": Bm25Run(**config.bm25)}}, model=config.model_dir,
                       kind="flat")
    query = "zeigt den Verzeichnisbaum an"
    expected = {name: service.search([("q", query)], 3)[0] for name, service in (("dt", dt), ("bm25", bm25))}
    with running(create_app(dt, bm25)) as url:
        search_on_the_page(browser, url, query, 3)
        assert browser.find_element(By.ID, "systems").is_displayed()
        columns = browser.find_elements(By.CSS_SELECTOR, ".column")
        assert [c.get_attribute("data-system") for c in columns] == ["dt"]
        titles = [t.text for t in columns[0].find_elements(By.CSS_SELECTOR, "li.hit .title")]
        assert titles == [hit["title"] for hit in expected["dt"]["hits"]]

        Select(browser.find_element(By.ID, "system")).select_by_value("bm25")  # switching searches again
        WebDriverWait(browser, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, ".column").get_attribute(
            "data-system") == "bm25" and settled(d))
        column = browser.find_element(By.CSS_SELECTOR, ".column")
        assert not column.find_element(By.CSS_SELECTOR, ".translation").is_displayed()  # bm25 translates nothing
        assert [t.text for t in column.find_elements(By.CSS_SELECTOR, "li.hit .title")] == \
            [hit["title"] for hit in expected["bm25"]["hits"]]
        assert "system=bm25" in browser.current_url

        Select(browser.find_element(By.ID, "compare")).select_by_value("dt")  # side by side
        WebDriverWait(browser, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".column")) == 2 and settled(d))
        left, right = browser.find_elements(By.CSS_SELECTOR, ".column")
        assert (left.find_element(By.TAG_NAME, "h2").text, right.find_element(By.TAG_NAME, "h2").text) == ("bm25", "dt")
        assert left.location["y"] == right.location["y"] and left.location["x"] < right.location["x"]
        for column, name in ((left, "bm25"), (right, "dt")):
            assert [t.text for t in column.find_elements(By.CSS_SELECTOR, "li.hit .title")] == \
                [hit["title"] for hit in expected[name]["hits"]]
        assert right.find_element(By.CSS_SELECTOR, ".best").text == expected["dt"]["translation"]["best"]
        settings = browser.find_element(By.ID, "settings-text").get_attribute("textContent")
        assert '"DtSearcher"' in settings and '"LuceneSearcher"' in settings


def test_the_page_shows_each_documents_bowfd_derivation(demo, browser):
    config = demo[0]
    options = {"bowfd": {"first_stage": "dt", "depth": 20}, "dt": {"bm25": Bm25Run(**config.bm25)}}
    service = SearchService("bowfd", config.index_dir, options, model=config.model_dir, kind="flat")
    query = "zeigt den Verzeichnisbaum an"
    expected = service.search([("q", query)], 3)[0]
    with running(create_app(service)) as url:
        hits = search_on_the_page(browser, url, query, 3)
        derivations = [hit.find_element(By.CLASS_NAME, "derivation").text for hit in hits]
        hits[0].find_element(By.CSS_SELECTOR, ".explanation summary").click()
        rows = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
                for row in hits[0].find_elements(By.CSS_SELECTOR, ".explanation tbody tr")]
        best = browser.find_element(By.CSS_SELECTOR, ".best").text
    assert derivations == [f"winning derivation: {hit['derivation']}" for hit in expected["hits"]]
    assert best == expected["translation"]["best"]
    terms = [term for sentence in expected["hits"][0]["explanation"]["sentences"] for term in sentence["terms"]]
    assert rows == [[t["term"], f"{t['bm25']:.3f}", f"{t['weight']:.3f}", f"{t['contribution']:.3f}"] for t in terms]
    assert rows


def test_the_page_shows_a_refused_query(demo, browser):
    config = demo[0]
    with running(create_app(SearchService("bm25", config.index_dir, {"bm25": config.bm25}))) as url:
        browser.get(url + "/")
        WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".column"))
        browser.execute_script("document.getElementById('q').value = '   ';"
                               "document.getElementById('search').requestSubmit();")
        WebDriverWait(browser, 60).until(lambda d: "error" in d.find_element(By.CSS_SELECTOR, ".status").get_attribute(
            "class"))
        status = browser.find_element(By.CSS_SELECTOR, ".status")
        assert status.get_attribute("textContent") == "the parameter q must be a non-empty string, got '   '"
        assert browser.find_elements(By.CSS_SELECTOR, ".column li.hit") == []

