"""The HTML report in a real headless browser (Debian's chromium driven by Playwright): it loads offline
without console errors, its table lists the bugs, sorts and filters, and a bug's section opens."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memo.triage.dedup import update_bugs
from tests.unit.triage_store import make_campaign

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120),
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="chromium is not installed (scripts/setup.sh "
                                 "installs Debian's chromium)")]
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


@pytest.fixture()
def page(tmp_path: Path):
    from memo.report import write_report

    with make_campaign(tmp_path / "campaigns" / "unit") as store:  # as triage leaves it: deduplicated, localized
        update_bugs(store)
        store.triage.save_localization(store.verdicts(("nan",))[0].id, "softmax_1", "Softmax", {"reason": "test"})
        update_bugs(store)
    report = write_report(tmp_path / "campaigns" / "unit", tmp_path / "unit.html")
    problems: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = browser.new_context(offline=True)  # self-contained: nothing may be fetched
        tab = context.new_page()
        tab.on("console", lambda message: problems.append(message.text) if message.type in ("error", "warning") else None)
        tab.on("pageerror", lambda error: problems.append(str(error)))
        tab.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
        tab.goto(report.as_uri())
        tab.wait_for_load_state("load")
        yield tab, problems
        browser.close()


def _ids(tab) -> list[str]:
    return tab.locator("#bug-table tbody tr.bug-row:not(.hidden) td:first-child").all_inner_texts()


def test_the_page_loads_offline_without_console_errors_and_lists_the_bugs(page) -> None:
    tab, problems = page
    assert tab.title() == "memo report: unit"
    assert len(_ids(tab)) == 3 and tab.locator("#bug-count").inner_text() == "3 shown"
    assert tab.locator("svg.chart").count() == 3
    assert tab.evaluate("document.querySelectorAll('script').length") == 1  # the escaped alert() never ran
    assert problems == []


def test_the_table_sorts_and_filters(page) -> None:
    tab, problems = page
    occurrences = tab.locator("#bug-table th", has_text="occurrences")
    occurrences.click()
    ascending = tab.locator("#bug-table tbody tr.bug-row td:nth-child(8)").all_inner_texts()
    assert ascending == ["1", "1", "3"]
    occurrences.click()
    assert tab.locator("#bug-table tbody tr.bug-row td:nth-child(8)").all_inner_texts() == ["3", "1", "1"]
    tab.select_option("#kind-filter", "nan")
    assert [i.split("-")[0] for i in _ids(tab)] == ["nan"]
    tab.select_option("#kind-filter", "")
    tab.fill("#bug-filter", "MemoryError")
    assert len(_ids(tab)) == 1 and tab.locator("#bug-count").inner_text() == "1 shown"
    assert problems == []


def test_a_bugs_section_opens_from_the_table(page) -> None:
    tab, problems = page
    link = tab.locator("a.open-bug").first
    target = link.get_attribute("href")[1:]
    section = tab.locator(f"details#{target}")
    assert not section.evaluate("element => element.open")
    link.click()
    assert section.evaluate("element => element.open")
    assert section.locator("table.model").is_visible() and section.locator("textarea.issue").is_visible()
    assert "<script>alert" in section.locator("pre.traceback").inner_text()  # shown as text, not run
    assert problems == []
