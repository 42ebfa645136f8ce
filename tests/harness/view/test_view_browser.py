"""`harness view` in a real browser (Debian's chromium, driven by selenium through chromedriver; nothing downloaded):
a small demo-like run (MMNeedle, the random baseline and a constant answer holding HTML), filtered to its wrong
answers, one sample opened: every thumbnail decodes, the hostile answer shows as characters and runs nothing, the
gold cell is outlined; the group of both tasks draws its grids, a cell opens its samples, a row of report.md opens
its config's. Every page it opens reads at a phone's width, 375 px, at 800 and at 1280 (`_reads_at_every_width`): none
scrolls sideways, no word is broken inside but a path's or a hash's. Screenshots of each page go to the test's tmp
folder (at each width under `widths/`). Paths out of the results folder and images the viewer did not rebuild are
answered 404, and nothing is written into the results folder."""

from __future__ import annotations

import http.client
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.run.cli import main
from tests.support.results_runs import harness_run
from tests.support.view_app import served_view

CHROMIUM, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
HOSTILE = "<script>window.pwned=1</script><img src=x onerror=window.pwned=2>"
TASKS = "mmneedle_m1_n2_k1_pos,mmneedle_m10_n1_k2_pos"

pytestmark = [
    pytest.mark.slow,  # a run, a server and a browser
    pytest.mark.skipif(
        not (CHROMIUM.exists() and DRIVER.exists()),
        reason=f"needs Debian's chromium and chromium-driver ({CHROMIUM}, {DRIVER}): "
        "apt-get install -y --no-install-recommends chromium chromium-driver",
    ),
]


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("view_results")
    harness_run(out, data_dir, TASKS, "random", "--log_samples")
    harness_run(out, data_dir, TASKS, "constant", "--model_args", f"answer={HOSTILE}")
    assert main(["report", str(out), "--jobs", "1"]) == 0
    secret = tmp_path_factory.mktemp("outside") / "secret.png"
    secret.write_bytes(b"\x89PNG\r\n\x1a\n not for the viewer")
    (out / "link_out.png").symlink_to(secret)  # a link leading out of the results folder
    return out


@pytest.fixture(scope="module")
def server(results: Path) -> Iterator[str]:
    with served_view(results) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tmp_path_factory.mktemp("chromium_profile")
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1400,2200",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _status(host: str, path: str) -> int:
    """The status of a GET for `path` sent as written (no client normalising `..` away)."""
    connection = http.client.HTTPConnection(host, timeout=30)
    connection.putrequest("GET", path, skip_accept_encoding=True)
    connection.endheaders()
    status = connection.getresponse().status
    connection.close()
    return status


def _all_thumbnails_decoded(driver) -> bool:
    return bool(
        driver.execute_script(
            "const images = [...document.querySelectorAll('img.thumb')];"
            "images.forEach((image) => image.scrollIntoView());"
            "return images.length > 0 && images.every((image) => image.complete && image.naturalWidth > 0);"
        )
    )


WIDTHS = (375, 800, 1280)  # a phone's, half a laptop's screen, a laptop's

# The page's own width and its window's: wider, it scrolls sideways.
PAGE_WIDTH = "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"

# Each run of letters and digits of the page's text that its lines break inside (`answera` over `ble`), but in a path
# or a hash (a word with `/x` or 32 hex digits in it), which may break anywhere. A line may end between runs: at a space,
# after `-`, or after the `_` or `:` of a name or key where the page marks it (`<wbr>`); text not shown is not read.
BROKEN_WORDS = """
const breakable = (word) => /\\/\\w|[0-9a-f]{32}/.test(word);
const broken = [];
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  if (!node.parentElement || node.parentElement.closest('script, style, select, textarea')) continue;
  for (const word of node.textContent.matchAll(/\\S+/g)) {
    if (breakable(word[0])) continue;
    for (const run of word[0].matchAll(/[\\p{L}\\p{N}]{2,}/gu)) {
      const range = document.createRange();
      range.setStart(node, word.index + run.index);
      range.setEnd(node, word.index + run.index + run[0].length);
      const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
      if (tops.size > 1) broken.push(word[0]);
    }
  }
}
return broken;
"""


def _reads_at_every_width(browser, shots: Path | None = None, name: str = "") -> None:
    """The page open in `browser` at each of `WIDTHS` (issue 99: at 800 px 17 of 23 pages scrolled sideways and ten
    words broke, `answera`/`ble`, `(builder`/`s.`): it does not scroll sideways (a table too wide scrolls in its own
    box), no word of it is broken but a path's or a hash's, and report.md's tables keep each of their words whole,
    `_`s and all, and each number on one line. A screenshot at each width goes to `shots`."""
    try:
        for width in WIDTHS:
            browser.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
            )
            where = (browser.current_url, width)
            page, window = browser.execute_script(PAGE_WIDTH)
            assert window <= width and page <= window, (*where, page, window)
            assert browser.execute_script(BROKEN_WORDS) == [], where
            assert [word for word, lines in browser.execute_script(WORD_BREAKS) if lines > 1] == [], where
            assert [text for text, lines in browser.execute_script(NUMBER_LINES) if lines > 1] == [], where
            if shots is not None:
                shots.mkdir(exist_ok=True)
                browser.save_screenshot(str(shots / f"{name}_{width}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_run_filtered_to_wrong_answers_and_a_sample_with_every_image(
    results: Path, server: str, browser, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    before = _files(results)
    widths = tmp_path / "widths"
    wait = WebDriverWait(browser, 60)
    browser.get(f"http://{server}/")
    assert "random" in browser.page_source and "constant" in browser.page_source
    browser.save_screenshot(str(tmp_path / "1_runs.png"))
    _reads_at_every_width(browser, widths, "1_runs")

    # The constant model's answer holds HTML; its samples, filtered to the wrong ones.
    links = browser.find_elements(By.CSS_SELECTOR, "a.samples-link")
    link = next(
        a
        for a in links
        if "model=constant" in a.get_attribute("href") and "mmneedle_m1_n2_k1_pos" in a.get_attribute("href")
    )
    link.click()
    wait.until(lambda d: d.find_elements(By.ID, "samples"))
    total = browser.find_element(By.ID, "count").text
    Select(browser.find_element(By.ID, "show")).select_by_value("wrong")  # submits the filter (view.js)
    wait.until(lambda d: "show=wrong" in d.current_url)
    count = browser.find_element(By.ID, "count").text
    assert count.startswith("12 of 12 samples"), (total, count)  # a constant HTML answer is never right
    answers = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "td.answer")]
    assert answers and all(answer == HOSTILE for answer in answers)  # shown as the characters it is
    assert browser.execute_script("return window.pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "td.answer img, td.answer script")
    browser.save_screenshot(str(tmp_path / "2_wrong_answers.png"))
    _reads_at_every_width(browser, widths, "2_wrong_answers")

    browser.find_elements(By.CSS_SELECTOR, "a.sample-link")[0].click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "img.thumb"))
    wait.until(_all_thumbnails_decoded)
    assert browser.find_element(By.CSS_SELECTOR, "pre.response").text == HOSTILE
    assert browser.execute_script("return window.pwned === undefined")
    assert browser.find_elements(By.ID, "inputs-match")  # the prompt rebuilt from the data is what was sent
    assert browser.find_elements(By.CSS_SELECTOR, "svg.overlay rect.mark-gold")  # the needle's cell outlined
    browser.save_screenshot(str(tmp_path / "3_sample.png"))
    _reads_at_every_width(browser, widths, "3_sample")

    # The same sample beside the random baseline's answer.
    Select(browser.find_element(By.ID, "vs")).select_by_value("random")
    wait.until(lambda d: "vs=random" in d.current_url)
    wait.until(_all_thumbnails_decoded)
    assert len(browser.find_elements(By.CSS_SELECTOR, ".answer-card")) == 2
    browser.save_screenshot(str(tmp_path / "4_side_by_side.png"))
    _reads_at_every_width(browser, widths, "4_side_by_side")

    # A heat-map cell of a ten-image config opens the samples of its depth.
    browser.get(f"http://{server}/samples?model=random&task=mmneedle_m10_n1_k2_pos")
    cell = browser.find_elements(By.CSS_SELECTOR, "table.heat td a")[0]
    cell.click()
    wait.until(lambda d: "ax.depth=" in d.current_url or "ax.cell=" in d.current_url)
    assert browser.find_elements(By.CSS_SELECTOR, "table.heat td.selected")
    browser.save_screenshot(str(tmp_path / "5_heat_map_cell.png"))
    _reads_at_every_width(browser, widths, "5_heat_map_cell")

    # The group across both tasks, the two models side by side (issue 54): their M x N grids (one per K), each cell
    # with both numbers, a cell's samples, one of them.
    browser.get(f"http://{server}/samples?task=mmneedle")
    wait.until(lambda d: "vs=random" in d.current_url and d.find_elements(By.CSS_SELECTOR, "table.heat td a.grid-link"))
    assert browser.find_elements(By.CSS_SELECTOR, "table.heat span.shown-b")  # random's numbers beside constant's
    assert browser.find_element(By.ID, "count").text.startswith("24 of 24 samples")
    browser.save_screenshot(str(tmp_path / "6_group.png"))
    _reads_at_every_width(browser, widths, "6_group")
    browser.find_elements(By.CSS_SELECTOR, "a.grid-link")[-1].click()  # K = 2: the ten-image config
    wait.until(lambda d: "ax.K=2" in d.current_url)
    assert browser.find_element(By.ID, "count").text.startswith("12 of 24 samples")
    assert browser.find_elements(By.CSS_SELECTOR, "table.heat td.selected")
    browser.find_elements(By.CSS_SELECTOR, "a.sample-link")[0].click()
    wait.until(_all_thumbnails_decoded)
    assert "mmneedle_m10_n1_k2_pos" in browser.current_url
    assert browser.find_elements(By.CSS_SELECTOR, "svg.overlay rect.mark-gold")
    assert browser.find_elements(By.CSS_SELECTOR, "table.metric-list")  # the per-cell accuracies, as a table
    _reads_at_every_width(browser, widths, "6_group_sample")

    # report.md in the viewer: a row of the paper's table opens its config's samples.
    browser.get(f"http://{server}/report/")
    row = browser.find_element(By.XPATH, "//a[@class='row-link' and text()='M=10 N=1 K=2']")
    row.click()
    wait.until(lambda d: "ax.M=10" in d.current_url and d.find_elements(By.ID, "samples"))
    assert browser.find_element(By.ID, "count").text.startswith("12 of ")
    browser.save_screenshot(str(tmp_path / "7_report_row.png"))
    _reads_at_every_width(browser, widths, "7_report_row")

    for path in (
        "/report/../../../../etc/passwd",
        "/report/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/report//etc/passwd",
        "/report/..%2f..%2f..%2fetc%2fpasswd",
        f"/report/{'../' * 3}{results.name}/report.md",
        "/report/link_out.png",
        "/report/random/" + next((results / "random").glob("results_*.json")).name,
        "/image/" + "ab" * 32,
        "/image/../../etc/passwd",
        "/static/../app.py",
        "/static/%2e%2e/app.py",
    ):
        assert _status(server, path) == 404, path
    assert _status(server, "/report/mmneedle_cells_random.png") == 200
    assert _files(results) == before  # nothing written into the results folder
    assert len(list(tmp_path.glob("*.png"))) == 7 and all(os.path.getsize(p) > 5_000 for p in tmp_path.glob("*.png"))


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> Iterator[str]:
    """A run whose build sits under a long path, as a user's often does: report.md's data table then holds a long
    absolute path beside each build's 71-character content hash."""
    deep = tmp_path_factory.mktemp("wide") / "a-folder-of-evaluation-data-with-a-long-name" / "builds-of-the-benchmarks"
    shutil.copytree(data_dir / "mmneedle", deep / "mmneedle")
    out = tmp_path_factory.mktemp("wide_results")
    harness_run(out, deep, "mmneedle_m1_n2_k1_pos", "random")
    assert main(["report", str(out), "--no_figures"]) == 0
    with served_view(out) as port:
        yield f"127.0.0.1:{port}"


def test_the_report_page_fits_every_width(wide_report: str, browser, tmp_path: Path) -> None:
    """Issue 54 item 11: report.md's data table (absolute paths, content hashes) made the page 1,528 px wide at 1280;
    the report's long words now break where they must, and every page fits the window. Issue 89: only a path or a
    hash breaks inside a word (the data table read `not recorde` over `d`). Issue 99: at 800 and 375 px as well (the
    data table read `(builder` over `s.mmneedle` at 800)."""
    browser.get(f"http://{wide_report}/report/")
    assert "(builders.mmneedle" in browser.page_source
    for number, path in enumerate(("/report/", "/", "/samples?model=random&task=mmneedle_m1_n2_k1_pos")):
        browser.get(f"http://{wide_report}{path}")
        _reads_at_every_width(browser, tmp_path, str(number))


@pytest.fixture(scope="module")
def paired_report(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The two models' report with their paired comparison (`--paired`): a table of fourteen columns."""
    out = tmp_path_factory.mktemp("paired_report")
    for model in ("random", "constant"):
        shutil.copytree(results / model, out / model)
    paired = ["report", str(out), "--paired", "--models", "random", "constant", "--no_figures"]
    assert main(paired) == 0
    with served_view(out) as port:
        yield f"127.0.0.1:{port}"


NUMBER_LINES = """
const cells = [...document.querySelectorAll('.markdown td.num')];
return cells.map((td) => {
  const range = document.createRange();
  range.selectNodeContents(td);
  return [td.textContent.trim(), new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size];
});
"""


# Each word of report.md's tables and the lines it takes; a path's or a content hash's may break anywhere.
WORD_BREAKS = """
const cells = [...document.querySelectorAll('.markdown th, .markdown td')];
const breakable = (word) => /\\/\\w|[0-9a-f]{32}/.test(word);
return cells.flatMap((cell) => cell.textContent.trim().split(/\\s+|(?<=-)/).filter((w) => w && !breakable(w)).map((word) => {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.textContent.indexOf(word);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + word.length);
    return [word, new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size];
  }
  return [word, 1];
}));
"""


def test_a_number_of_the_paired_table_is_never_broken(paired_report: str, browser) -> None:
    """Issue 76 item 5: the paired tasks table broke numbers mid-value at 1280 px (`1.00` over `00`); each number
    cell of report.md's tables now keeps its number on one line, the table scrolling in its own box. Issue 89: it
    wrapped headers and names inside a word (`ro` over `ws`, `McNema` over `r p`, `lenient_existence_` over `acc`);
    each word of a table but a path's or a hash's stays on one line (a line may end after a hyphen, `--limit`'s, as
    text breaks)."""
    browser.set_window_size(1280, 900)
    try:
        browser.get(f"http://{paired_report}/report/")
        lines = browser.execute_script(NUMBER_LINES)
        assert any(text == "1.0000" for text, _ in lines) and len(lines) > 100
        assert [text for text, count in lines if count > 1] == []
        words = browser.execute_script(WORD_BREAKS)
        assert any(word == "McNemar" for word, _ in words) and len(words) > 50
        assert [word for word, count in words if count > 1] == []
    finally:
        browser.set_window_size(1400, 2200)
    _reads_at_every_width(browser)  # and at a phone's width and at 800 px
