"""Browser test of the Metrics page (issue 15 item 5).

The example project under daphne in headless Chromium, as ``test_admin_live.py`` runs it (its
fixtures and helpers are reused). A real core worker runs jobs of a queue and flushes its
metrics as it stops; an hour of history is added with the recorder itself, so the charts have
a shape. The operator follows the overview's sparkline to the page, reads the table, filters
by a job name (a hostile one shows as text), switches to 72 h, all under the example project's
strict Content-Security-Policy. Screenshots: ``test-artifacts/browser/45-metrics.png``,
``46-metrics-one-name.png``, ``47-metrics-72h.png``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from django_bullq import Job, Queue, Worker
from django_bullq.core.metrics import MetricsRecorder, store
from django_bullq.core.options import now_ms
from django_bullq.core.worker import WorkerOptions
from tests.browser import test_admin_live as live
from tests.browser.test_admin_live import Site, _wait, no_csp_violations, shot

site = live.site
browser = live.browser

pytestmark = pytest.mark.timeout(240)

#: A queue no worker of the site serves.
METRICS_QUEUE = "browser-metrics"
HOSTILE = "<img src=x onerror=alert(1)>"
NAMES = ("reports.build", "mail.send", HOSTILE)


@pytest.fixture
def metrics_queue(site: Site) -> Iterator[Queue]:
    yield from live.scratch_queue(site, METRICS_QUEUE)


async def _history(q: Queue) -> None:
    """An hour of recorded attempts: a few hundred per name, run times of a few shapes."""
    rng = random.Random(15)
    rec = MetricsRecorder(q.keys)
    end = now_ms()
    for minute in range(1, 60):
        for name, run_ms, failing in (("reports.build", 900, 0.1), ("mail.send", 40, 0.02)):
            for _ in range(rng.randint(2, 12)):
                finished = end - minute * 60_000 + rng.randint(0, 59_000)
                ran = int(rng.lognormvariate(0, 0.5) * run_ms)
                job = Job(None, "1", name=name, timestamp=finished - ran - rng.randint(5, 3000))
                job.processed_on = finished - ran
                outcome = store.FAILED if rng.random() < failing else store.COMPLETED
                rec.record(job, outcome, finished)
    await rec.aflush(q)


def _run_real_worker(q: Queue) -> None:
    def proc(job: Job) -> Any:
        time.sleep(0.02)
        if job.name == HOSTILE:
            raise ValueError("no such task")
        return None

    q.add_bulk([(name, {}) for name in NAMES for _ in range(5)])
    options = WorkerOptions(concurrency=4, drain_delay=0.2, maintenance_interval_ms=0)
    Worker(q, proc, options).run(burst=True, handle_signals=False)


def test_browser_metrics_page_from_the_overview(
    site: Site, browser: Any, metrics_queue: Queue
) -> None:
    from selenium.webdriver.common.by import By

    q = metrics_queue
    asyncio.run(_history(q))
    _run_real_worker(q)
    driver = browser
    driver.get(site.url + "/admin/django_bullq/bullqqueue/")
    row = driver.find_element(By.CSS_SELECTOR, f'tr[data-queue="{METRICS_QUEUE}"]')
    spark = row.find_element(By.CSS_SELECTOR, "td.bullq-spark a")
    assert spark.find_elements(By.TAG_NAME, "polyline")  # data by default: no setting
    no_csp_violations(driver, "overview")
    spark.click()
    _wait(lambda: "/metrics/" in driver.current_url, "the metrics page")
    charts = driver.find_elements(By.CSS_SELECTOR, "svg.bullq-metrics-chart")
    assert len(charts) == 3
    table = driver.find_element(By.ID, "bullq-metrics-names")
    rows = {
        r.get_attribute("data-name"): r.text for r in table.find_elements(By.CSS_SELECTOR, "tr")
    }
    assert set(NAMES) <= set(rows)
    assert rows[HOSTILE].startswith(HOSTILE)  # the name as text, not an element
    assert not driver.find_elements(By.CSS_SELECTOR, "#content-main img")
    shot(driver, "45-metrics")
    no_csp_violations(driver, "metrics")

    table.find_element(By.LINK_TEXT, "reports.build").click()
    _wait(lambda: "name=reports.build" in driver.current_url, "the filtered page")
    assert driver.find_element(By.ID, "bullq-metrics-name").text == "reports.build"
    shot(driver, "46-metrics-one-name")
    driver.find_element(By.CSS_SELECTOR, "#bullq-windows a[href*='window=72h']").click()
    _wait(lambda: "window=72h" in driver.current_url, "the 72 h window")
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.bullq-metrics-chart")) == 3
    shot(driver, "47-metrics-72h")
    no_csp_violations(driver, "metrics 72h")
