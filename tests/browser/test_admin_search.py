"""Browser test of the queue page's filters (issue 15 item 2).

The example project under daphne in headless Chromium, as ``test_admin_live.py`` runs it (its
fixtures and helpers are reused): the operator fills the filter form, gets a bookmarkable URL
with only the matching jobs (a hostile payload among them drawn as text), switches tabs with
the filter kept, and removes every matching job through a confirmation that counts them, all
under the example project's strict Content-Security-Policy. Screenshots:
``test-artifacts/browser/48-queue-filtered.png`` and ``49-remove-matching-confirm.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from django_bullq import Queue
from tests.browser import test_admin_live as live
from tests.browser.test_admin_live import Site, _wait, no_console_errors, no_csp_violations, shot

#: The example project under daphne and a logged-in Chromium: test_admin_live.py's fixtures.
site = live.site
browser = live.browser

pytestmark = pytest.mark.timeout(240)

#: A queue no worker of the site serves, so its jobs stay waiting.
SEARCH_QUEUE = "browser-search"
EVIL = '<img src=x id="bullq-evil" onerror="document.title=1">'


@pytest.fixture
def search_queue(site: Site) -> Iterator[Queue]:
    yield from live.scratch_queue(site, SEARCH_QUEUE)


def test_browser_filters_a_queue_by_json_path_and_removes_every_match(
    site: Site, browser: Any, search_queue: Queue
) -> None:
    from selenium.webdriver.common.by import By

    q = search_queue
    cities = ["Linz", "Graz", "Wien"]
    jobs = q.add_bulk([("forecast", {"tenant": n % 3, "city": cities[n % 3]}) for n in range(90)])
    evil = q.add(EVIL, {"tenant": 1, "city": EVIL})
    matching = {j.id for j in jobs if j.data["tenant"] == 1} | {evil.id}
    driver = browser
    driver.get(f"{site.url}/admin/django_bullq/bullqqueue/q/{quote(SEARCH_QUEUE)}/?state=waiting")
    form = driver.find_element(By.ID, "bullq-filter")
    form.find_element(By.NAME, "path").send_keys("tenant")
    form.find_element(By.NAME, "value").send_keys("1")
    form.find_element(By.CSS_SELECTOR, 'input[type="submit"]').click()
    _wait(lambda: "path=tenant" in driver.current_url, "the filtered page")
    query = parse_qs(urlsplit(driver.current_url).query)
    assert query["path"] == ["tenant"] and query["value"] == ["1"]  # a bookmark
    rows = driver.find_elements(By.CSS_SELECTOR, "#bullq-jobs-body tr[data-job-id]")
    assert {r.get_attribute("data-job-id") for r in rows} == matching
    status = driver.find_element(By.ID, "bullq-filter-status").text
    assert "31 matches shown; scanned 91 of 91 waiting jobs" in status
    assert driver.find_elements(By.ID, "bullq-evil") == [] and driver.title != "1"
    assert EVIL in driver.find_element(By.ID, "bullq-jobs-body").text  # shown as text
    shot(driver, "48-queue-filtered")
    no_csp_violations(driver, "filtered queue page")

    driver.find_element(By.CSS_SELECTOR, "ul.bullq-states a[href*='state=failed']").click()
    _wait(lambda: "state=failed" in driver.current_url, "the failed tab")
    assert "path=tenant" in driver.current_url and "value=1" in driver.current_url
    driver.back()
    _wait(lambda: "state=waiting" in driver.current_url, "the waiting tab again")

    driver.find_element(By.NAME, "select_all").click()
    driver.find_element(By.CSS_SELECTOR, 'button[formaction$="/action/remove/"]').click()
    _wait(lambda: "are you sure" in driver.title, "the remove confirmation")
    count = driver.find_element(By.ID, "bullq-matching-count").text
    assert count == "all 31"
    shot(driver, "49-remove-matching-confirm")
    driver.find_element(By.CSS_SELECTOR, 'input[value="Yes, I\'m sure"]').click()
    _wait(lambda: q.count() == 60, "the matching jobs to go")
    assert all(q.get_job(i) is None for i in matching)
    assert "path=tenant" in driver.current_url  # back to the filtered page
    no_console_errors(driver)
