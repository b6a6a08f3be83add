"""report.html in a real browser: no errors, no network, working sort and filter, no XSS.

Uses the system Chromium through Playwright (never `playwright install`). Set
PROMPTGEN_SCREENSHOTS=FOLDER to keep the screenshots (docs/images is made this way).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from promptgen.report.files import write_reports
from tests.report_data import MODEL_A, MODEL_B, XSS, empty_context, report_context

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
)

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1200, "height": 800}


def find_chromium() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@dataclass
class Opened:
    """A loaded page and everything it reported."""

    page: Any
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = find_chromium()
    if executable is None:
        pytest.skip(f"no Chromium found (looked for {', '.join(BROWSERS)} and /usr/bin/chromium)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reports")
    write_reports(report_context(), root / "full")
    write_reports(empty_context(), root / "empty")
    return {"full": root / "full" / "report.html", "empty": root / "empty" / "report.html"}


def open_report(browser: Any, path: Path) -> Opened:
    page = browser.new_page(viewport=VIEWPORT)
    opened = Opened(page)

    def on_dialog(dialog: Any) -> None:
        opened.dialogs.append(dialog.message)
        dialog.dismiss()

    def on_request(request: Any) -> None:
        if not request.url.startswith(("file:", "data:")):
            opened.outside_requests.append(request.url)

    page.on("console", lambda m: m.type == "error" and opened.console_errors.append(m.text))
    page.on("pageerror", lambda e: opened.page_errors.append(str(e)))
    page.on("request", on_request)
    page.on("dialog", on_dialog)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return opened


@pytest.fixture
def opened(browser: Any, reports: dict[str, Path]) -> Iterator[Opened]:
    result = open_report(browser, reports["full"])
    yield result
    result.page.close()


def assert_clean(opened: Opened) -> None:
    assert opened.console_errors == []
    assert opened.page_errors == []
    assert opened.outside_requests == []
    assert opened.dialogs == []


def column(page: Any, index: int) -> list[str]:
    """Cell texts of one results column, visible rows only, in page order."""
    return page.eval_on_selector_all(
        "#results-table tbody tr:not([hidden])",
        f"rows => rows.map(r => r.cells[{index}].textContent)",
    )


def visible_rows(page: Any) -> int:
    return page.locator("#results-table tbody tr:not([hidden])").count()


def test_loads_cleanly_without_network(opened: Opened) -> None:
    assert_clean(opened)
    assert opened.page.title() == "promptgen report: greeter"


def test_chart_has_one_bar_per_model(opened: Opened) -> None:
    bars = opened.page.locator("#compliance-chart rect.bar")
    assert bars.count() == 2
    assert [bars.nth(i).get_attribute("data-model") for i in range(2)] == [MODEL_A, MODEL_B]
    assert [bars.nth(i).get_attribute("data-rate") for i in range(2)] == ["50.0", "75.0"]
    widths = [float(bars.nth(i).get_attribute("width") or 0) for i in range(2)]
    assert widths[1] == pytest.approx(widths[0] * 1.5)


def test_heatmap_has_a_cell_per_rule_and_model(opened: Opened) -> None:
    rows = opened.page.locator("#heatmap tbody tr")
    assert rows.count() == 3
    cells = opened.page.eval_on_selector_all(
        "#heatmap tbody tr", "rows => rows.map(r => [...r.querySelectorAll('td.heat')].length)"
    )
    assert cells == [2, 2, 2]
    first = opened.page.locator("#heatmap tbody tr").first.locator("td.heat")
    assert first.nth(0).inner_text() == "50.0% (2)"
    assert first.nth(1).inner_text() == "100.0% (2)"


def test_clicking_a_header_sorts_the_results(opened: Opened) -> None:
    page = opened.page
    latency = page.locator("#results-table thead th", has_text="Latency ms")
    index = latency.evaluate("th => th.cellIndex")
    before = column(page, index)
    latency.click()
    ascending = column(page, index)
    numbers = [float(v) for v in ascending if v]
    assert numbers == sorted(numbers) and ascending[-1] == ""  # no latency sorts last
    assert ascending != before
    latency.click()
    descending = [float(v) for v in column(page, index) if v]
    assert descending == sorted(numbers, reverse=True)
    assert latency.get_attribute("aria-sort") == "descending"
    test_header = page.locator("#results-table thead th", has_text="Test")
    test_header.click()
    assert column(page, 0) == sorted(column(page, 0))
    assert_clean(opened)


def test_the_filter_box_and_failing_checkbox_reduce_rows(opened: Opened) -> None:
    page = opened.page
    assert visible_rows(page) == 11
    page.fill("#filter", MODEL_B)
    assert visible_rows(page) == 6
    assert page.inner_text("#shown") == "6 of 11 runs shown"
    page.fill("#filter", "model-b hello")
    assert visible_rows(page) == 4  # every word must match
    page.fill("#filter", "")
    page.check("#failing-only")
    assert visible_rows(page) == 4
    assert sorted(column(page, 0)) == ["t1", "t2", "t3", "t4"]
    page.fill("#filter", "casual")
    assert visible_rows(page) == 1
    assert_clean(opened)


def test_the_xss_payload_is_shown_not_run(opened: Opened) -> None:
    page = opened.page
    assert opened.dialogs == []
    assert page.locator("script").count() == 1
    assert page.locator("#results-table td.output b, #failing pre b").count() == 0
    assert page.locator("#failing pre.output", has_text=XSS).count() == 1
    assert_clean(opened)


def test_failing_examples_are_folded_by_rule(opened: Opened) -> None:
    page = opened.page
    groups = page.locator("#failing article.failure-group")
    assert [groups.nth(i).get_attribute("data-rule") for i in range(3)] == [
        "rule-short",
        "inv-start",
        "rule-start",
    ]
    example = page.locator("#failing pre.output", has_text=XSS)
    assert not example.is_visible()  # folded until the reader opens its group
    groups.nth(2).locator("summary").click()
    assert example.is_visible() and example.inner_text() == XSS
    assert page.locator("#failing pre b").count() == 0
    assert_clean(opened)


def test_empty_report_says_no_evaluation_yet(browser: Any, reports: dict[str, Path]) -> None:
    opened = open_report(browser, reports["empty"])
    assert "No evaluation yet" in opened.page.inner_text("#summary")
    assert opened.page.locator("#results-table").count() == 0
    assert_clean(opened)
    opened.page.close()


def test_screenshots(opened: Opened, tmp_path: Path) -> None:
    folder = Path(os.environ.get("PROMPTGEN_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    opened.page.screenshot(path=folder / "report.png", full_page=True)
    opened.page.locator("#failing details").first.evaluate("d => { d.open = true; }")
    opened.page.locator("#failing").screenshot(path=folder / "report-failing.png")
    for name in ("report.png", "report-failing.png"):
        assert (folder / name).read_bytes().startswith(b"\x89PNG")
    assert_clean(opened)
