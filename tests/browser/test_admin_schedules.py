"""Browser test of the Schedules page (issue 15 item 3) and the overview's Redis facts (item 7).

The example project under daphne in headless Chromium, as ``test_admin_live.py`` runs it (its
fixtures and helpers are reused): the operator follows the overview's link, reads the
schedules in words, pauses and resumes one, removes one through its confirmation and creates
one through the form, all under the example project's strict Content-Security-Policy.
Screenshots: ``test-artifacts/browser/34-overview-redis.png`` ... ``38-scheduler-form.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from django_bullq import Queue
from tests.browser import test_admin_live as live
from tests.browser.test_admin_live import Site, _wait, no_csp_violations, shot

#: The example project under daphne and a logged-in Chromium: test_admin_live.py's fixtures.
site = live.site
browser = live.browser

pytestmark = pytest.mark.timeout(240)

#: A queue no worker of the site serves, so the schedules' runs stay put.
SCHEDULE_QUEUE = "browser-schedules"


@pytest.fixture
def sched_queue(site: Site) -> Iterator[Queue]:
    yield from live.scratch_queue(site, SCHEDULE_QUEUE)


def test_browser_schedules_page_reads_pauses_resumes_removes_and_creates(
    site: Site, browser: Any, sched_queue: Queue
) -> None:
    from selenium.webdriver.common.by import By

    q = sched_queue
    q.upsert_job_scheduler("tick", {"every": 300_000}, {"name": "ping", "data": {"n": 1}})
    q.upsert_job_scheduler("five", {"pattern": "*/5 * * * *", "tz": "Europe/Paris"}, {})
    driver = browser
    driver.get(site.url + "/admin/django_bullq/bullqqueue/")
    servers = driver.find_element(By.ID, "bullq-servers")
    row = servers.find_element(By.CSS_SELECTOR, 'tr[data-connection="default"]')
    assert "Redis" in row.text or "Valkey" in row.text
    assert "noeviction" in row.text and "unreachable" not in row.text
    shot(driver, "34-overview-redis")
    no_csp_violations(driver, "overview")

    driver.find_element(By.ID, "bullq-schedules-link").click()
    _wait(lambda: "/schedules/" in driver.current_url, "the schedules page")
    driver.get(site.url + "/admin/django_bullq/bullqqueue/schedules/?queue=" + SCHEDULE_QUEUE)
    table = driver.find_element(By.CSS_SELECTOR, f'table[data-queue="{SCHEDULE_QUEUE}"]')
    tick = table.find_element(By.CSS_SELECTOR, 'tr[data-scheduler="tick"]')
    five = table.find_element(By.CSS_SELECTOR, 'tr[data-scheduler="five"]')
    assert "every 5 min" in tick.text
    assert "Every 5 minutes" in five.text and "Europe/Paris" in five.text
    when = five.find_element(By.TAG_NAME, "time")
    assert when.get_attribute("title").endswith(" UTC") and when.text  # UTC on hover
    shot(driver, "35-schedules")
    no_csp_violations(driver, "schedules")

    tick.find_element(By.CSS_SELECTOR, 'input[value="Pause"]').click()
    _wait(lambda: q.client.zscore(q.keys["repeat"], "tick") is None, "tick to leave repeat")
    tick = driver.find_element(By.CSS_SELECTOR, 'tr[data-scheduler="tick"]')
    assert "paused" in tick.text and tick.find_elements(By.CSS_SELECTOR, 'input[value="Resume"]')
    shot(driver, "36-schedules-paused")
    tick.find_element(By.CSS_SELECTOR, 'input[value="Resume"]').click()
    _wait(lambda: q.client.zscore(q.keys["repeat"], "tick") is not None, "tick to resume")

    five = driver.find_element(By.CSS_SELECTOR, 'tr[data-scheduler="five"]')
    five.find_element(By.CSS_SELECTOR, 'input[value="Remove"]').click()
    _wait(lambda: "are you sure" in driver.title, "the remove confirmation")
    assert q.get_job_scheduler("five") is not None
    shot(driver, "37-scheduler-remove-confirm")
    no_csp_violations(driver, "remove confirmation")
    driver.find_element(By.CSS_SELECTOR, 'input[value="Yes, I\'m sure"]').click()
    _wait(lambda: q.get_job_scheduler("five") is None, "five to be removed")

    _wait(lambda: "are you sure" not in driver.title, "the list after the removal")
    assert not driver.find_elements(By.CSS_SELECTOR, 'tr[data-scheduler="five"]')
    driver.find_element(By.ID, "bullq-new-scheduler").click()
    form = driver.find_element(By.ID, "bullq-scheduler-form")
    assert form.find_element(By.NAME, "queue").get_attribute("value") == SCHEDULE_QUEUE
    form.find_element(By.NAME, "scheduler_id").send_keys("monday")
    form.find_element(By.NAME, "name").send_keys("weekly-report")
    form.find_element(By.NAME, "pattern").send_keys("0 9 * * MON")
    shot(driver, "38-scheduler-form")
    no_csp_violations(driver, "scheduler form")
    form.find_element(By.CSS_SELECTOR, 'input[value="Save"]').click()
    made = _wait(lambda: q.get_job_scheduler("monday"), "the new scheduler")
    assert (made.name, made.pattern, made.tz) == ("weekly-report", "0 9 * * MON", "UTC")
    monday = driver.find_element(By.CSS_SELECTOR, 'tr[data-scheduler="monday"]')
    assert "At 09:00, only on Monday" in monday.text
    assert quote(SCHEDULE_QUEUE) in driver.current_url


def test_browser_schedules_page_follows_a_pause_made_elsewhere_without_reload(
    site: Site, browser: Any, sched_queue: Queue
) -> None:
    q = sched_queue
    q.upsert_job_scheduler("tick", {"every": 300_000}, {"name": "ping"})
    driver = browser
    driver.get(site.url + "/admin/django_bullq/bullqqueue/schedules/?queue=" + SCHEDULE_QUEUE)

    def row_class() -> str:
        # read in one script: the table may be redrawn between two WebDriver calls
        return str(
            driver.execute_script(
                "var r = document.querySelector('tr[data-scheduler=\"tick\"]');"
                "return r ? r.className + '|' + r.textContent : '';"
            )
        )

    assert "bullq-paused" not in row_class()

    q.pause_job_scheduler("tick")  # by another operator, a script, a Node process...

    _wait(lambda: "bullq-paused|" in row_class(), "the row to say paused without a reload")
    assert "paused" in row_class().split("|", 1)[1]
    q.resume_job_scheduler("tick")
    _wait(lambda: "bullq-paused" not in row_class(), "the row to say running again")
    shot(driver, "39-schedules-live")
    no_csp_violations(driver, "the live schedules page")
