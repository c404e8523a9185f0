"""Browser test of the admin's two forms that make jobs (issue 15, item 6), on the example
project under daphne in headless Chromium as ``test_admin_live`` runs it: "Create a job" from
a queue page through the form of a task's signature, and "Retry with edited data" of a failed
job, both under the example project's strict CSP. Screenshots: ``40-new-job-pick-task.png``,
``41-new-job-form.png``, ``42-new-job-created.png``, ``43-edit-retry-form.png``,
``44-edit-retry-done.png``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from django_bullq import Queue
from tests.browser import test_admin_live as live
from tests.browser.test_admin_live import Site, _wait, no_csp_violations, shot
from tests.support.workerkit import make_worker, run_until

#: The example project under daphne and a logged-in Chromium: test_admin_live.py's fixtures.
site = live.site
browser = live.browser

pytestmark = pytest.mark.timeout(240)

#: A queue no worker of the site serves, so the jobs made here stay put.
FORMS_QUEUE = "browser-forms"
TASK = "weather.tasks.email_report"


@pytest.fixture
def forms_queue(site: Site) -> Iterator[Queue]:
    yield from live.scratch_queue(site, FORMS_QUEUE)


def queue_page(site: Site) -> str:
    return f"{site.url}/admin/django_bullq/bullqqueue/q/{quote(FORMS_QUEUE)}/"


def test_browser_creates_a_job_of_a_task_from_the_form_of_its_signature(
    site: Site, browser: Any, forms_queue: Queue
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver = browser
    driver.get(queue_page(site))
    driver.find_element(By.LINK_TEXT, "Create a job").click()
    _wait(lambda: "/new/" in driver.current_url, "the task picker")
    Select(driver.find_element(By.NAME, "task")).select_by_value(TASK)
    shot(driver, "40-new-job-pick-task")
    driver.find_element(By.CSS_SELECTOR, 'input[value="Next"]').click()
    _wait(lambda: "report_id" in driver.page_source, "the form of the task's signature")
    field = driver.find_element(By.NAME, "report_id")
    field.clear()
    field.send_keys("{nope")  # not JSON
    driver.find_element(By.CSS_SELECTOR, 'input[value="Create the job"]').click()
    _wait(lambda: "errorlist" in driver.page_source, "the refusal of a bad call")
    assert forms_queue.get_job_counts("waiting")["waiting"] == 0  # nothing enqueued
    field = driver.find_element(By.NAME, "report_id")
    field.clear()
    field.send_keys("7")
    shot(driver, "41-new-job-form")
    driver.find_element(By.CSS_SELECTOR, 'input[value="Create the job"]').click()
    _wait(lambda: "/job/" in driver.current_url, "the new job's page")
    (job_id,) = forms_queue.get_job_ids("waiting")
    job = forms_queue.get_job(job_id)
    assert (
        job is not None
        and job.name == TASK
        and job.data == {"args": [], "kwargs": {"report_id": 7}}
    )
    assert f"Created job {job_id} of {TASK}" in driver.page_source
    shot(driver, "42-new-job-created")
    no_csp_violations(driver, "the new job's page")


def test_browser_retries_a_failed_job_with_edited_data(
    site: Site, browser: Any, forms_queue: Queue
) -> None:
    from selenium.webdriver.common.by import By

    added = forms_queue.add(TASK, {"args": ["<b>bad</b>"], "kwargs": {}}, attempts=1)

    def fail(job: Any) -> None:
        raise ValueError("report_id must be an int")

    worker = make_worker(forms_queue, fail)
    asyncio.run(run_until(worker, lambda: forms_queue.get_job_state(added.id) == "failed"))
    driver = browser
    driver.get(f"{queue_page(site)}job/{quote(added.id)}/")
    driver.find_element(By.LINK_TEXT, "Retry with edited data").click()
    _wait(lambda: "edit-retry" in driver.current_url, "the edit form")
    box = driver.find_element(By.NAME, "job_data")
    assert "<b>bad</b>" in box.get_attribute("value")  # as text in the box, not markup
    box.clear()
    box.send_keys('{"args": [1, 2, 3], "kwargs": {}}')
    driver.find_element(By.CSS_SELECTOR, 'input[value="Save the data and retry"]').click()
    _wait(lambda: "too many positional arguments" in driver.page_source, "the signature check")
    assert forms_queue.get_job_state(added.id) == "failed"
    box = driver.find_element(By.NAME, "job_data")
    box.clear()
    box.send_keys('{"args": [42], "kwargs": {}}')
    shot(driver, "43-edit-retry-form")
    driver.find_element(By.CSS_SELECTOR, 'input[value="Save the data and retry"]').click()
    _wait(lambda: "edit-retry" not in driver.current_url, "the job's page again")
    assert forms_queue.get_job_state(added.id) == "waiting"
    job = forms_queue.get_job(added.id)
    assert job is not None and job.data == {"args": [42], "kwargs": {}}
    shot(driver, "44-edit-retry-done")
    no_csp_violations(driver, "the retried job's page")
