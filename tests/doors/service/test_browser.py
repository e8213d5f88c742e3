"""The web page in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by
selenium against the service on a real socket and a real Solr. It types a text, submits, and checks the
ranked list and the marked differences; uploads a file and watches its progress page; runs a report and reads
its histogram, borderline pairs and a group; and reads the bands page's S-curves. Screenshots go to
the test's tmp dir, and also to ``$NEARDUP_TEST_ARTIFACTS`` when it is set (for CI to keep)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from netutil import free_port

pytest.importorskip("fastapi", reason="the service extra is not installed (pip install '.[service]')")
selenium = pytest.importorskip("selenium", reason="selenium is not installed (scripts/setup.sh installs it)")

from neardup_solr import Indexer  # noqa: E402
from neardup_solr.service import ServiceConfig, create_app  # noqa: E402

pytestmark = [pytest.mark.solr, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    pytest.skip("headless Chromium is not installed (apt-get install chromium chromium-driver; scripts/setup.sh "
                "does it where apt is available)", allow_module_level=True)

RECORDS = [
    ("1", "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles"),
    ("2", "Arnie Morton's Steakhouse of Chicago 435 S. La Cienega Blvd. Los Angeles"),
    ("3", "Arnie Morton's of Chicago 435 La Cienega Boulevard Los Angeles"),
    ("4", "Cafe Bizou 14016 Ventura Blvd. Sherman Oaks"),
]
QUERY = "Arnie Morton's of Chicago 435 S. La Cienega Blvd. Los Angeles CA"


def artifacts_dir() -> Path | None:
    """``$NEARDUP_TEST_ARTIFACTS`` (CI collects it), or None: the screenshots then stay in the test's tmp dir."""
    raw = os.environ.get("NEARDUP_TEST_ARTIFACTS")
    if not raw:
        return None
    path = Path(raw)
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture()
def server(solr, tmp_path):
    import uvicorn

    Indexer(solr).index_records(RECORDS)
    port = free_port()
    app = create_app(ServiceConfig(solr_url=solr.url, jobs_dir=tmp_path / "jobs"))
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture()
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def submit(driver, button_id: str) -> None:
    """Click a submit button and wait until the browser has left the page (a click returns before the new page
    is there: reading right after it reads the old one)."""
    from selenium.webdriver.common.by import By
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    # A mark on the old page's window: a new page has a fresh window without it. (Waiting for an old element to
    # go stale raced in CI: chromedriver answered "Node with given id does not belong to the document" as an
    # unknown error instead of a stale element.)
    driver.execute_script("window.__neardupOldPage = true;")
    driver.find_element(By.ID, button_id).click()
    # A script run while the page is being replaced can fail: that only means "not yet".
    WebDriverWait(driver, 60, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return window.__neardupOldPage === undefined"))
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.readyState") == "complete")


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    assert driver.save_screenshot(str(path))
    artifacts = artifacts_dir()
    if artifacts is not None:
        shutil.copy(path, artifacts / name)
    assert path.stat().st_size > 1000
    return path


def test_lookup_page_ranks_and_marks_differences(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server + "/")
    browser.find_element(By.ID, "text").send_keys(QUERY)
    Select(browser.find_element(By.ID, "mode")).select_by_value("threshold")
    threshold = browser.find_element(By.ID, "threshold")
    threshold.clear()
    threshold.send_keys("0.2")
    submit(browser, "search")

    rows = browser.find_elements(By.CSS_SELECTOR, "#results tr.result")
    ids = [r.get_attribute("data-id") for r in rows]
    sims = [float(r.find_element(By.CSS_SELECTOR, ".similarity").text.split()[0]) for r in rows]
    distances = [int(r.find_element(By.CSS_SELECTOR, ".distance").text) for r in rows]
    screenshot(browser, tmp_path, "service-lookup.png")
    # 1 differs by the trailing "CA" only, 2 also has an inserted word, 3 is farther; 4 is unrelated.
    assert ids == ["1", "2", "3"], ids
    assert sims == sorted(sims, reverse=True) and sims[0] < 1.0 and min(sims) >= 0.2
    assert distances[0] == 1 and distances[1] == 2

    first, second, third = rows
    assert [e.text for e in first.find_elements(By.TAG_NAME, "del")] == ["CA"]
    assert first.find_elements(By.TAG_NAME, "ins") == []
    assert [e.text for e in second.find_elements(By.TAG_NAME, "ins")] == ["Steakhouse"]
    assert "line-through" in second.find_element(By.TAG_NAME, "del").value_of_css_property("text-decoration")
    assert [e.text for e in third.find_elements(By.TAG_NAME, "del")] == ["S.", "Blvd.", "CA"]
    assert [e.text for e in third.find_elements(By.TAG_NAME, "ins")] == ["Boulevard"]

    # An id instead of a text, another mode, and a bad threshold shown as an error on the page.
    browser.get(server + "/")
    browser.find_element(By.ID, "doc_id").send_keys("1")
    Select(browser.find_element(By.ID, "mode")).select_by_value("shingles")
    browser.find_element(By.ID, "max_edit_distance").send_keys("5")
    submit(browser, "search")
    assert "of 1" in browser.find_element(By.TAG_NAME, "h2").text
    assert "2" in [r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, "#results tr.result")]
    browser.get(server + "/")
    browser.find_element(By.ID, "text").send_keys("anything")
    threshold = browser.find_element(By.ID, "threshold")
    threshold.clear()
    threshold.send_keys("7")
    submit(browser, "search")
    assert "threshold must be" in browser.find_element(By.ID, "error").text


def test_upload_page_shows_progress(server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    data = tmp_path / "guide.txt"
    data.write_text("".join(f"g{i} Restaurant number {i} on Main Street in Santa Monica\n" for i in range(300))
                    + "g-empty\n")
    browser.get(server + "/upload")
    browser.find_element(By.ID, "file").send_keys(str(data))
    browser.find_element(By.ID, "dataset").send_keys("guide")
    submit(browser, "send")
    deadline = time.monotonic() + 120
    while "done" not in browser.find_element(By.ID, "status").text and time.monotonic() < deadline:
        time.sleep(0.5)
        browser.refresh()
    screenshot(browser, tmp_path, "service-upload.png")
    assert "done" in browser.find_element(By.ID, "status").text
    assert "indexed 300, rejected 1" in browser.find_element(By.ID, "progress").text
    assert "g-empty" in browser.find_element(By.ID, "rejections").text


def test_tune_page_draws_the_s_curves_with_the_threshold(server, browser, tmp_path):
    """The bands page draws the collection's S-curve and the report's for a threshold typed in, with the threshold
    marked; checked by the drawing's structure (elements, their data and where the line is), not its pixels."""
    from selenium.webdriver.common.by import By

    from neardup_solr.engine.weighted_lsh import weighted_band_params
    from neardup_solr.solr.documents import IndexSettings

    browser.get(server + "/")
    browser.find_element(By.LINK_TEXT, "Bands").click()
    threshold = browser.find_element(By.ID, "threshold")
    threshold.clear()
    threshold.send_keys("0.6")
    submit(browser, "draw")
    svg = browser.find_element(By.ID, "s-curve")
    curves = {c.get_attribute("class"): c for c in svg.find_elements(By.TAG_NAME, "polyline")}
    assert set(curves) == {"collection", "report"}
    settings = IndexSettings()  # the fixture indexed with the defaults
    own, report = settings.lsh_params(), weighted_band_params(0.6, settings.num_hashes)
    assert (int(curves["collection"].get_attribute("data-bands")), int(curves["collection"].get_attribute("data-rows"))) \
        == (own.bands, own.rows)
    assert (int(curves["report"].get_attribute("data-bands")), int(curves["report"].get_attribute("data-rows"))) \
        == (report.bands, report.rows)
    # Drawn: each curve is 101 points rising from the bottom left (P = 0 at s = 0) to the top right (P = 1).
    for curve in curves.values():
        points = [tuple(map(float, p.split(","))) for p in curve.get_attribute("points").split()]
        assert len(points) == 101 and points[0][1] > points[-1][1]
        assert [x for x, _ in points] == sorted(x for x, _ in points)
        assert curve.size["width"] > 300 and curve.size["height"] > 150  # rendered, at a readable size
    line = svg.find_element(By.CSS_SELECTOR, "line.threshold")
    assert line.get_attribute("data-threshold") == "0.6"
    xs = [float(p.split(",")[0]) for p in curves["report"].get_attribute("points").split()]
    assert abs(float(line.get_attribute("x1")) - (xs[0] + 0.6 * (xs[-1] - xs[0]))) < 0.2
    rows = browser.find_elements(By.CSS_SELECTOR, "#probabilities tbody tr")
    table = {float(r.find_elements(By.TAG_NAME, "td")[0].text): float(r.find_elements(By.TAG_NAME, "td")[2].text)
             for r in rows}
    assert abs(table[0.6] - report.probability(0.6)) < 1e-4 and table[0.7] > table[0.6] > table[0.5]
    screenshot(browser, tmp_path, "service-tune.png")

    browser.get(server + "/tune?threshold=2")
    assert "threshold must be" in browser.find_element(By.ID, "error").text


def test_report_pages_draw_the_histogram_and_show_borderline_pairs_and_a_group(server, solr, browser, tmp_path):
    """A report started from the page: its progress, then the histogram of its similarities (checked bin by bin
    against the library's own pairs), the pairs nearest the threshold with their word diffs, and the largest
    group with each member against the kept text."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from neardup_solr.engine.find import find_pairs
    from neardup_solr.io import restaurants
    from neardup_solr.options import ThresholdOptions
    from neardup_solr.pairs.groups import group_pairs
    from neardup_solr.service.charts import similarity_histogram

    records = restaurants.read_records(restaurants.fodors_path(), restaurants.zagats_path())
    Indexer(solr).index_records([(f"r{number}", text) for number, text in records])
    expected = [(p.id, p.neighbor_id, p.similarity) for p in find_pairs(solr, ThresholdOptions(0.5, method="lsh"))]
    assert len(expected) > 50

    browser.get(server + "/")
    browser.find_element(By.LINK_TEXT, "Reports").click()
    threshold = browser.find_element(By.ID, "threshold")
    threshold.clear()
    threshold.send_keys("0.5")
    Select(browser.find_element(By.ID, "method")).select_by_value("lsh")
    submit(browser, "start")
    deadline = time.monotonic() + 120
    while "done" not in browser.find_element(By.ID, "status").text and time.monotonic() < deadline:
        time.sleep(0.5)
        browser.refresh()
    assert "done" in browser.find_element(By.ID, "status").text
    documents = len(records) + len(RECORDS)
    assert f"{documents} of {documents} documents (100%); {len(expected)} pairs" in \
        browser.find_element(By.ID, "progress").text

    bins = browser.find_elements(By.CSS_SELECTOR, "#histogram rect.bin")
    histogram = similarity_histogram([s for _, _, s in expected], 0.5, 0.025)
    assert [int(b.get_attribute("data-count")) for b in bins] == list(histogram.counts)
    assert float(bins[0].get_attribute("data-low")) == 0.5 and float(bins[-1].get_attribute("data-high")) == 1.0
    tallest = max(bins, key=lambda b: int(b.get_attribute("data-count")))
    assert tallest.size["height"] > 150  # drawn, and the largest count takes the chart's height
    assert browser.find_element(By.CSS_SELECTOR, "#histogram line.threshold").get_attribute("data-threshold") == "0.5"
    screenshot(browser, tmp_path, "service-report.png")

    rows = browser.find_elements(By.CSS_SELECTOR, "#near-threshold tbody tr")
    shown = [float(r.find_elements(By.TAG_NAME, "td")[1].text) for r in rows]
    assert len(rows) == 10 and shown == sorted(shown) and 0.5 <= shown[0]
    assert abs(shown[0] - min(s for _, _, s in expected)) < 5e-4
    assert browser.find_elements(By.CSS_SELECTOR, "#near-threshold td.diff del, #near-threshold td.diff ins")

    largest = max(group_pairs([(a, b, 1 - s) for a, b, s in expected]), key=lambda g: (len(g.members), -g.group_id))
    first = browser.find_elements(By.CSS_SELECTOR, "#groups tbody tr")[0].find_elements(By.TAG_NAME, "td")
    assert int(first[1].text) == len(largest.members) and first[2].text == str(largest.representative)
    first[0].find_element(By.TAG_NAME, "a").click()
    WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "members"))
    members = browser.find_elements(By.CSS_SELECTOR, "#members tbody tr")
    assert sorted(r.find_elements(By.TAG_NAME, "td")[0].text for r in members) == \
        sorted(str(m) for m in largest.members if m != largest.representative)
    assert dict(records)[int(str(largest.representative)[1:])] in browser.find_element(By.ID, "representative").text
    screenshot(browser, tmp_path, "service-report-group.png")

    browser.get(server + "/reports/" + "0" * 32)
    assert "no report job" in browser.find_element(By.ID, "error").text


def test_search_page_folds_copies_under_their_kept_document_with_word_diffs(server, solr, browser, tmp_path):
    """The search page against groups written into the collection: not folded, every matching document; folded,
    the group once, headed by its kept document with its copies and their word diffs under it; a document indexed
    after the write-back on its own; and text that would be query syntax searched as plain words."""
    from selenium.webdriver.common.by import By

    from neardup_solr.engine.group_writeback import write_groups

    write_groups(solr, [("1", "2"), ("1", "3")])  # one group, kept 1 (the earliest); 4 on its own
    Indexer(solr).index_records([("5", "Arnie Morton's of Chicago La Cienega Los Angeles California")])

    browser.get(server + "/")
    browser.find_element(By.LINK_TEXT, "Search").click()
    browser.find_element(By.ID, "q").send_keys("Arnie Morton's Chicago")
    submit(browser, "search")
    hits = browser.find_elements(By.CSS_SELECTOR, "#hits tr.hit")
    assert sorted(h.get_attribute("data-id") for h in hits) == ["1", "2", "3", "5"]
    assert browser.find_elements(By.CSS_SELECTOR, "#hits tr.copy") == []
    assert "4 documents found" in browser.find_element(By.ID, "found").text

    browser.find_element(By.ID, "fold").click()
    submit(browser, "search")
    assert "fold=1" in browser.current_url
    hits = browser.find_elements(By.CSS_SELECTOR, "#hits tr.hit")
    by_id = {h.get_attribute("data-id"): h for h in hits}
    assert sorted(by_id) == ["1", "5"]  # the group once, and the document indexed since on its own
    assert by_id["1"].get_attribute("data-kept") == "1" and by_id["5"].get_attribute("data-group") == ""
    assert "none yet" in by_id["5"].text
    copies = browser.find_elements(By.CSS_SELECTOR, "#hits tr.copy")
    assert sorted(c.get_attribute("data-id") for c in copies) == ["2", "3"]
    assert {c.get_attribute("data-of") for c in copies} == {"1"}
    # Each copy sits right under its kept document, and shows its words against the kept text.
    rows = browser.find_elements(By.CSS_SELECTOR, "#hits tbody tr")
    kept_at = [r.get_attribute("data-id") for r in rows].index("1")
    assert {r.get_attribute("data-id") for r in rows[kept_at + 1:kept_at + 3]} == {"2", "3"}
    copy = {c.get_attribute("data-id"): c for c in copies}
    assert [e.text for e in copy["2"].find_elements(By.TAG_NAME, "ins")] == ["Steakhouse"]
    assert copy["2"].find_elements(By.TAG_NAME, "del") == []
    assert [e.text for e in copy["3"].find_elements(By.TAG_NAME, "del")] == ["S.", "Blvd."]
    assert [e.text for e in copy["3"].find_elements(By.TAG_NAME, "ins")] == ["Boulevard"]
    assert "2 groups found" in browser.find_element(By.ID, "found").text
    screenshot(browser, tmp_path, "service-search-folded.png")
    # The way back to what was folded away: the same words, every match.
    browser.find_element(By.ID, "show-omitted").click()
    assert "fold=" not in browser.current_url
    shown = sorted(h.get_attribute("data-id") for h in browser.find_elements(By.CSS_SELECTOR, "#hits tr.hit"))
    assert shown == ["1", "2", "3", "5"] and browser.find_element(By.ID, "q").get_attribute("value") == \
        "Arnie Morton's Chicago"

    # Query syntax is searched as words: as syntax, id:4 would find document 4, *:* everything, and an AND of two
    # words that no document holds together nothing.
    for text in ("id:4", "*:*", "+cafe AND +arnie"):
        browser.get(server + "/search")
        browser.find_element(By.ID, "q").send_keys(text)
        submit(browser, "search")
        assert browser.find_element(By.ID, "q").get_attribute("value") == text
        ids = [h.get_attribute("data-id") for h in browser.find_elements(By.CSS_SELECTOR, "#hits tr.hit")]
        assert browser.find_elements(By.ID, "error") == []
        if text == "+cafe AND +arnie":  # the words cafe, and, arnie, any of them
            assert "4" in ids and "1" in ids, ids
        else:
            assert ids == [], (text, ids)
