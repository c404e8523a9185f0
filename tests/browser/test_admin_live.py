"""Browser tests: the example project under daphne, driven in headless Chromium (Selenium).

Debian's ``chromium`` and ``chromium-driver`` (``make test`` installs them) drive the real admin
pages of ``example_project`` served by daphne (ASGI: HTTP and the events WebSockets) on a free
port, with a temporary SQLite database and a private Redis database. A core worker runs in a
subprocess (``gated_worker.py``): it reports progress and then waits for the test to
acknowledge each value it saw in the browser, so nothing depends on timing.

The tests log in, watch a running job's progress bar move and its state turn to completed
without a reload, watch a new failure appear in the failed list, and retry it through the
confirmation page. The example project sends a strict Content-Security-Policy (Django 6's
middleware): the last test goes through every page recording the browser's CSP violations.
Screenshots go to ``test-artifacts/browser/`` (kept after the run).
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from urllib.request import urlopen

import pytest
import redis

from django_bullq import Queue

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_DIR = ROOT / "example_project"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
QUEUE = "weather"  # the example project's queue (settings.BULLQ["QUEUES"])
USER, PASSWORD = "operator", "live-updates-pw-1"
WAIT_S = 30  # upper bound of every wait; a wait returns as soon as its condition holds

pytestmark = pytest.mark.timeout(240)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def admin_answers(url: str, server: subprocess.Popen[Any], log: Path) -> Callable[[], bool]:
    """A condition for :func:`_wait`: ``server`` (still running, else its ``log`` is the
    failure) serves the admin's login page at ``url``."""

    def answers() -> bool:
        assert server.poll() is None, log.read_text()
        try:
            with urlopen(url + "/admin/login/", timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    return answers


@dataclass
class Site:
    url: str
    redis_url: str
    db_path: Path
    ack_key: str
    #: the environment ``manage.py`` of the site runs in
    env: dict[str, str]


@pytest.fixture(scope="module")
def site(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The example project under daphne, migrated, with a superuser; a gated worker beside it."""
    tmp = tmp_path_factory.mktemp("browser")
    redis_url = urlsplit(redis_server.url)._replace(path="/14").geturl()
    redis.Redis.from_url(redis_url).flushdb()
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="example_project.settings",
        REDIS_URL=redis_url,
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        EMAIL_FILE_PATH=str(tmp / "mail"),
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
    )
    for args in (
        ["migrate", "--noinput", "-v", "0"],
        ["createsuperuser", "--noinput", "--username", USER, "--email", "op@example.com"],
    ):
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=EXAMPLE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    port = _free_port()
    server_log = open(tmp / "daphne.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "example_project.asgi:application",
        ],
        cwd=EXAMPLE_DIR,
        env=env,
        stdout=server_log,
        stderr=subprocess.STDOUT,
    )
    ack_key = f"browser-test:ack:{uuid.uuid4().hex}"
    worker_log = open(tmp / "worker.log", "w")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.browser.gated_worker", redis_url, QUEUE, ack_key],
        cwd=ROOT,
        env=env,
        stdout=worker_log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    answers = admin_answers(url, server, tmp / "daphne.log")

    try:
        _wait(answers, "daphne to serve the admin")
        yield Site(
            url=url, redis_url=redis_url, db_path=tmp / "db.sqlite3", ack_key=ack_key, env=env
        )
    finally:
        for proc in (worker, server):
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        server_log.close()
        worker_log.close()
        if os.environ.get("BULLQ_BROWSER_LOGS"):
            print((tmp / "daphne.log").read_text(), (tmp / "worker.log").read_text())


def chromium_driver() -> Any:
    """Headless Debian chromium through Debian's chromedriver (Selenium), console logged."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, "Debian's chromium and chromium-driver are needed: make test"
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager download anything
    options = Options()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1100",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


def log_in(driver: Any, url: str, user: str = USER, password: str = PASSWORD) -> None:
    """Log in at ``url``/admin/login/ as ``user``."""
    from selenium.webdriver.common.by import By

    driver.get(url + "/admin/login/")
    driver.find_element(By.NAME, "username").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    _wait(lambda: "/admin/login/" not in driver.current_url, "the login to finish")


@pytest.fixture(scope="module")
def browser(site: Site) -> Iterator[Any]:
    """Headless Debian chromium through Debian's chromedriver, logged in as a superuser."""
    driver = chromium_driver()
    try:
        log_in(driver, site.url)
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def queue(site: Site) -> Iterator[Queue]:
    q = Queue(QUEUE, site.redis_url)
    yield q
    q.close()


def scratch_queue(site: Site, name: str) -> Iterator[Queue]:
    """The body of a fixture of queue ``name`` on the site's Redis, obliterated after the test
    (``yield from scratch_queue(site, NAME)``; a queue no worker of the site serves)."""
    q = Queue(name, site.redis_url)
    yield q
    q.obliterate(force=True)
    q.close()


def shot(driver: Any, name: str) -> None:
    """Save a screenshot as a test artifact: test-artifacts/browser/<name>.png."""
    assert driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def js(driver: Any, script: str, *args: Any) -> Any:
    return driver.execute_script(script, *args)


def wait_live(driver: Any) -> None:
    _wait(
        lambda: js(
            driver,
            "var e = document.getElementById('bullq-live');"
            "return e && e.dataset.status === 'open';",
        ),
        "the events socket to open",
    )


def no_console_errors(driver: Any) -> None:
    errors = [
        e
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE" and "favicon" not in e["message"]
    ]
    assert errors == []


def admin_url(site: Site, *, job_id: str | None = None, state: str | None = None) -> str:
    # the admin's name converter: quote(safe=""), then reverse() escapes "%" once more
    def seg(name: str) -> str:
        return quote(quote(name, safe=""), safe="")

    url = f"{site.url}/admin/django_bullq/bullqqueue/q/{seg(QUEUE)}/"
    if job_id is not None:
        url += f"job/{seg(job_id)}/"
    if state is not None:
        url += f"?state={state}"
    return url


def test_browser_watches_a_running_jobs_progress_bar_and_state_without_reload(
    site: Site, browser: Any, queue: Queue
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site.url + "/admin/django_bullq/bullqqueue/")
    assert browser.find_element(By.CSS_SELECTOR, f'tr[data-queue="{QUEUE}"]')
    wait_live(browser)
    shot(browser, "01-overview")

    browser.get(admin_url(site, state="active"))
    wait_live(browser)
    js(browser, "window.bullqNoReload = 'still the same page';")
    job = queue.add("slow_progress", {"steps": 4})
    # the counts follow the events: the job is active (and held at 25 %) without a reload
    _wait(
        lambda: browser.find_element(By.CSS_SELECTOR, '[data-bullq-count="active"]').text == "1",
        "the active count to show 1",
    )
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    shot(browser, "02-queue-counts-live")

    browser.get(admin_url(site, job_id=job.id))
    wait_live(browser)
    js(browser, "window.bullqNoReload = 'still the same page';")
    bar = "return document.querySelector('#bullq-progress progress').value;"
    seen = []
    for step in range(1, 5):
        _wait(lambda step=step: js(browser, bar) == step * 25, f"the progress bar at {step * 25}")
        seen.append(js(browser, bar))
        assert browser.find_element(By.CSS_SELECTOR, '[data-bullq-field="state"]').text == "active"
        if step == 2:
            shot(browser, "03-job-progress-50")
        queue.client.rpush(site.ack_key, step)  # the worker reports the next value
    assert seen == [25, 50, 75, 100]
    _wait(
        lambda: (
            browser.find_element(By.CSS_SELECTOR, '[data-bullq-field="state"]').text == "completed"
        ),
        "the state to turn completed",
    )
    _wait(
        lambda: (
            '"steps": 4'
            in browser.find_element(By.CSS_SELECTOR, '[data-bullq-field="returnvalue"]').text
        ),
        "the return value",
    )
    _wait(
        lambda: (
            browser.find_element(By.CSS_SELECTOR, '[data-bullq-field="attemptsMade"]').text == "1"
        ),
        "attempts made to show 1",
    )
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    shot(browser, "04-job-completed")
    assert queue.get_job_state(job.id) == "completed"
    no_console_errors(browser)


def test_browser_sees_a_new_failure_live_and_retries_it(
    site: Site, browser: Any, queue: Queue
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(admin_url(site, state="failed"))
    wait_live(browser)
    js(browser, "window.bullqNoReload = 'still the same page';")
    job = queue.add("fails_once", {"city": "<img src=x onerror=alert(1)>"}, attempts=1)
    row = _wait(
        lambda: browser.find_elements(By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"]'),
        "the failed job's row to appear",
    )[0]
    reason = row.find_element(By.CSS_SELECTOR, '[data-bullq-field="failedReason"]')
    assert "<b>weather feed</b>" in reason.text  # shown as text: escaped, not markup
    assert row.find_elements(By.TAG_NAME, "b") == []
    assert row.find_elements(By.TAG_NAME, "script") == []
    _wait(
        lambda: browser.find_element(By.CSS_SELECTOR, '[data-bullq-count="failed"]').text == "1",
        "the failed count to show 1",
    )
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    shot(browser, "05-failure-appears-live")

    row.find_element(By.CSS_SELECTOR, 'input[name="ids"]').click()
    browser.find_element(By.XPATH, "//form[@id='bullq-jobs']//button[text()='Retry']").click()
    _wait(lambda: "are you sure" in browser.title.lower(), "the confirmation page")
    assert job.id in browser.find_element(By.ID, "content-main").text
    shot(browser, "06-retry-confirmation")
    browser.find_element(By.CSS_SELECTOR, 'input[value="Yes, I\'m sure"]').click()
    _wait(lambda: "Retry: 1 of 1 jobs" in browser.page_source, "the success message")
    _wait(lambda: queue.get_job_state(job.id) == "completed", "the retried job to complete")
    refreshed = queue.get_job(job.id)
    assert refreshed is not None and refreshed.returnvalue == "published"

    browser.get(admin_url(site, job_id=job.id))
    assert browser.find_element(By.CSS_SELECTOR, '[data-bullq-field="state"]').text == "completed"
    data = browser.find_element(By.ID, "bullq-data")
    assert "<img src=x onerror=alert(1)>" in data.text
    assert data.find_elements(By.TAG_NAME, "img") == []
    shot(browser, "07-retried-job")
    with sqlite3.connect(site.db_path) as db:
        logged = db.execute("SELECT change_message FROM django_admin_log").fetchall()
    assert ("Retry: 1 of 1 jobs",) in logged
    no_console_errors(browser)


# --- a strict Content-Security-Policy ---------------------------------------------------------

#: Runs in every new document before the page's own scripts (CDP), outside the page's policy:
#: it records each CSP violation the browser reports on that page.
CSP_PROBE = """
window.bullqCspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.bullqCspViolations.push({directive: e.effectiveDirective, blocked: e.blockedURI,
    source: e.sourceFile, line: e.lineNumber, sample: e.sample});
});
"""


def csp_directives(header: str) -> dict[str, list[str]]:
    """``"a x y; b z"`` -> ``{"a": ["x", "y"], "b": ["z"]}`` (a Content-Security-Policy value)."""
    directives = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


def no_csp_violations(driver: Any, page: str) -> None:
    """Assert the page (loaded) recorded no CSP violation and the console has no CSP message
    or error (the log is drained)."""
    _wait(lambda: js(driver, "return document.readyState === 'complete';"), f"{page} to load")
    seen = list(js(driver, "return window.bullqCspViolations || null;") or [])
    seen += [
        e["message"]
        for e in driver.get_log("browser")
        if "Content Security Policy" in e["message"]
        or (e["level"] == "SEVERE" and "favicon" not in e["message"])
    ]
    assert seen == [], f"on {page}: " + "\n".join(map(str, seen))


def test_admin_live_under_strict_csp(site: Site, browser: Any, queue: Queue) -> None:
    """Overview, queue list, job page and confirmation page under ``default-src 'self';
    script-src 'self' 'nonce-…'`` (Django 6's ContentSecurityPolicyMiddleware in the example
    project): the browser reports no violation on any of them, and counts, progress, state and
    a new failure still change without a reload."""
    from selenium.webdriver.common.by import By

    with urlopen(site.url + "/admin/login/", timeout=5) as response:
        policy = csp_directives(response.headers["Content-Security-Policy"])
    nonce = policy["script-src"][1]
    assert policy == {"default-src": ["'self'"], "script-src": ["'self'", nonce]}
    assert nonce.startswith("'nonce-")  # no 'unsafe-inline'; style-src falls back to 'self'
    probe = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_PROBE})[
        "identifier"
    ]
    browser.get_log("browser")  # drop what earlier tests left
    try:
        browser.get(site.url + "/admin/django_bullq/bullqqueue/")
        no_csp_violations(browser, "the overview")
        wait_live(browser)
        shot(browser, "08-csp-overview")

        browser.get(admin_url(site, state="active"))
        no_csp_violations(browser, "the active list")
        wait_live(browser)
        js(browser, "window.bullqNoReload = 'still the same page';")
        active = browser.find_element(By.CSS_SELECTOR, '[data-bullq-count="active"]')
        before = int(active.text)
        job = queue.add("slow_progress", {"steps": 2})
        _wait(lambda: active.text == str(before + 1), "the active count to go up by one")
        assert js(browser, "return window.bullqNoReload;") == "still the same page"
        no_csp_violations(browser, "the active list")
        shot(browser, "09-csp-queue-counts-live")

        browser.get(admin_url(site, job_id=job.id))
        no_csp_violations(browser, "the job page")
        wait_live(browser)
        js(browser, "window.bullqNoReload = 'still the same page';")
        bar = "return document.querySelector('#bullq-progress progress').value;"
        for step in (1, 2):
            _wait(
                lambda step=step: js(browser, bar) == step * 50, f"the progress bar at {step * 50}"
            )
            queue.client.rpush(site.ack_key, step)
        _wait(
            lambda: (
                browser.find_element(By.CSS_SELECTOR, '[data-bullq-field="state"]').text
                == "completed"
            ),
            "the state to turn completed",
        )
        assert js(browser, "return window.bullqNoReload;") == "still the same page"
        no_csp_violations(browser, "the job page")
        shot(browser, "10-csp-job-completed")

        browser.get(admin_url(site, state="failed"))
        no_csp_violations(browser, "the failed list")
        wait_live(browser)
        failed = queue.add("fails_once", {"city": "Graz"}, attempts=1)
        row = _wait(
            lambda: browser.find_elements(By.CSS_SELECTOR, f'tr[data-job-id="{failed.id}"]'),
            "the failure to appear",
        )[0]
        row.find_element(By.CSS_SELECTOR, 'input[name="ids"]').click()
        browser.find_element(By.XPATH, "//form[@id='bullq-jobs']//button[text()='Retry']").click()
        _wait(lambda: "are you sure" in browser.title.lower(), "the confirmation page")
        no_csp_violations(browser, "the confirmation page")
        wait_live(browser)
        shot(browser, "11-csp-confirmation")
        browser.find_element(By.CSS_SELECTOR, 'input[value="Yes, I\'m sure"]').click()
        _wait(lambda: "Retry: 1 of 1 jobs" in browser.page_source, "the success message")
        no_csp_violations(browser, "the list after the retry")
        _wait(lambda: queue.get_job_state(failed.id) == "completed", "the retry to complete")
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": probe})


# --- a readable job page (issue 15, item 6) ---------------------------------------------------

LOCAL_TIME = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC([+-]\d\d:\d\d)?$"
UTC_TIME = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$"
DURATION = r"^(\d+ ms|\d+([.,]\d+)? s|\d+ (min|h|d)( \d+ (s|min|h))?)$"


def test_browser_job_page_writes_live_times_and_durations_in_units(
    site: Site, browser: Any, queue: Queue
) -> None:
    """The times and durations a live snapshot brings read as the server wrote them: local
    time with UTC on hover, ms in units; never raw epoch milliseconds."""
    import re

    from selenium.webdriver.common.by import By

    job = queue.add("slow_progress", {"steps": 1})
    browser.get(admin_url(site, job_id=job.id))
    wait_live(browser)
    js(browser, "window.bullqNoReload = 'still the same page';")
    bar = "return document.querySelector('#bullq-progress progress').value;"
    _wait(lambda: js(browser, bar) == 100, "the progress bar at 100")
    queue.client.rpush(site.ack_key, 1)
    field = '[data-bullq-field="{}"]'.format
    _wait(
        lambda: browser.find_element(By.CSS_SELECTOR, field("state")).text == "completed",
        "the state to turn completed",
    )
    _wait(lambda: browser.find_element(By.CSS_SELECTOR, field("ran")).text != "–", "ran to be set")
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    for name in ("timestamp", "processedOn", "finishedOn"):
        el = browser.find_element(By.CSS_SELECTOR, field(name))
        assert re.match(LOCAL_TIME, el.text), (name, el.text)
        assert re.match(UTC_TIME, el.get_attribute("title")), (name, el.get_attribute("title"))
    for name in ("waited", "ran"):
        el = browser.find_element(By.CSS_SELECTOR, field(name))
        assert re.match(DURATION, el.text), (name, el.text)
        assert re.match(r"^\d+ ms$", el.get_attribute("title")), name
    page_text = browser.find_element(By.ID, "content-main").text
    assert not re.search(r"\b1\d{12}\b", page_text)  # no epoch ms anywhere on the page
    shot(browser, "12-job-times-and-durations")
    no_console_errors(browser)


def test_browser_retried_then_completed_job_shows_its_failure_as_history(
    site: Site, browser: Any, queue: Queue
) -> None:
    """A job that failed once and completed on its retry: no "Failed reason" as if current,
    the failure in the attempt history with its exception type, no progress bar (it never
    reported progress), and its short id on one line in the completed list."""
    from selenium.webdriver.common.by import By

    job = queue.add("fails_once", {"city": "Graz"}, attempts=2)
    _wait(lambda: queue.get_job_state(job.id) == "completed", "the retried job to complete")
    browser.get(admin_url(site, job_id=job.id))
    assert not browser.find_element(By.ID, "bullq-failed-reason").is_displayed()
    assert not browser.find_element(By.ID, "bullq-progress").is_displayed()
    history = browser.find_element(By.ID, "bullq-attempts")
    rows = [" ".join(r.text.split()) for r in history.find_elements(By.CSS_SELECTOR, "tbody tr")]
    assert rows[0].startswith("1 failed RuntimeError <b>weather feed</b> unavailable"), rows
    assert rows[1] == "2 completed", rows
    assert history.find_elements(By.TAG_NAME, "b") == []  # the message is text, not markup
    shot(browser, "13-job-attempt-history")
    wait_live(browser)  # the snapshot must not bring the old failure back
    assert not browser.find_element(By.ID, "bullq-failed-reason").is_displayed()

    browser.get(admin_url(site, state="completed"))
    link = browser.find_element(By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"] td.bullq-id a')
    assert js(browser, "return arguments[0].getClientRects().length;", link) == 1
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"]')
    assert "weather feed" not in row.text  # no old failure in the completed list
    shot(browser, "14-completed-list")
    no_console_errors(browser)


# --- danger and safety (issue 15, item 8) -----------------------------------------------------


def test_browser_destructive_actions_look_dangerous_and_say_what_goes(
    site: Site, browser: Any, queue: Queue
) -> None:
    """Obliterate, drain, clean and remove all are red, apart from Pause; the obliterate
    confirmation counts the jobs that would go; no page breaks the strict CSP."""
    from selenium.webdriver.common.by import By

    probe = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_PROBE})[
        "identifier"
    ]
    browser.get_log("browser")
    try:
        browser.get(admin_url(site, state="completed"))
        no_csp_violations(browser, "the completed list")

        def colour(label: str) -> str:
            el = browser.find_element(By.CSS_SELECTOR, f'input[type="submit"][value="{label}"]')
            return str(js(browser, "return getComputedStyle(arguments[0]).backgroundColor;", el))

        pause = colour("Pause")
        for label in ("Obliterate", "Drain", "Clean by age", "Remove all failed"):
            assert colour(label) == "rgb(186, 33, 33)" != pause, label
        assert browser.find_element(By.CSS_SELECTOR, ".bullq-danger-zone").is_displayed()
        shot(browser, "15-queue-danger-zone")

        counts = queue.get_job_counts()
        browser.find_element(By.CSS_SELECTOR, 'input[value="Obliterate"]').click()
        _wait(lambda: "are you sure" in browser.title.lower(), "the confirmation page")
        no_csp_violations(browser, "the obliterate confirmation")
        goes = browser.find_element(By.CSS_SELECTOR, ".bullq-goes").text
        total = sum(counts.values())
        assert f"{total} job" in goes and f"completed {counts['completed']}" in goes, goes
        sure = browser.find_element(By.CSS_SELECTOR, 'input[value="Yes, I\'m sure"]')
        assert js(browser, "return getComputedStyle(arguments[0]).backgroundColor;", sure) == (
            "rgb(186, 33, 33)"
        )
        shot(browser, "16-obliterate-confirmation")
        browser.find_element(By.LINK_TEXT, "No, take me back").click()  # nothing is deleted
        _wait(lambda: "are you sure" not in browser.title.lower(), "the queue page")
        assert queue.get_job_counts() == counts
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": probe})


def test_browser_progress_row_appears_with_the_first_report(
    site: Site, browser: Any, queue: Queue
) -> None:
    """A job that has not reported progress shows no bar; its first report brings the row in,
    without a reload."""
    from selenium.webdriver.common.by import By

    queue.pause()  # the job waits, not yet reporting, while the page loads
    try:
        job = queue.add("slow_progress", {"steps": 2})
        browser.get(admin_url(site, job_id=job.id))
        wait_live(browser)
        js(browser, "window.bullqNoReload = 'still the same page';")
        row = browser.find_element(By.CSS_SELECTOR, 'tr[data-bullq-section="progress"]')
        assert not row.is_displayed()
        shot(browser, "17-job-before-progress")
    finally:
        queue.resume()
    _wait(row.is_displayed, "the progress row to appear")
    bar = "return document.querySelector('#bullq-progress progress').value;"
    _wait(lambda: js(browser, bar) == 50, "the progress bar at 50")
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    for step in (1, 2):
        if step == 2:
            _wait(lambda: js(browser, bar) == 100, "the progress bar at 100")
        queue.client.rpush(site.ack_key, step)
    _wait(lambda: queue.get_job_state(job.id) == "completed", "the job to complete")
    no_console_errors(browser)


#: Makes the staff user "viewer" with only django_bullq.view_bullqqueue (manage.py shell -c).
MAKE_VIEWER = """
from django.contrib.auth.models import Permission, User
user = User.objects.create_user("viewer", password="view-only-pw-1", is_staff=True)
user.user_permissions.set(Permission.objects.filter(codename="view_bullqqueue"))
"""


def test_browser_view_only_staff_see_no_action_buttons_even_on_live_rows(
    site: Site, queue: Queue
) -> None:
    """A read-only operator (view permission only): no action buttons, checkboxes or "every
    job" box on the failed list and the job page, and a failure the live update adds brings no
    checkbox either."""
    from selenium.webdriver.common.by import By

    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", MAKE_VIEWER],
        cwd=EXAMPLE_DIR,
        env=site.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    driver = chromium_driver()
    try:
        log_in(driver, site.url, "viewer", "view-only-pw-1")
        driver.get(admin_url(site, state="failed"))
        wait_live(driver)
        root = driver.find_element(By.ID, "bullq-root")
        job = queue.add("fails_once", {"city": "Linz"}, attempts=1)
        row = _wait(
            lambda: driver.find_elements(By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"]'),
            "the failed job's row to appear",
        )[0]
        assert row.find_elements(By.TAG_NAME, "input") == []
        inputs = {
            (e.get_attribute("type"), e.get_attribute("name") or e.get_attribute("value"))
            for e in root.find_elements(By.TAG_NAME, "input")
        }
        filters = {("text", f) for f in ("id", "name", "q", "path", "value")}
        filters |= {("datetime-local", "since"), ("datetime-local", "until")}
        assert inputs == {("hidden", "state"), ("submit", "Search"), *filters}  # the filter only
        assert root.find_elements(By.TAG_NAME, "button") == []
        assert root.find_elements(By.CSS_SELECTOR, "form[method=post]") == []
        shot(driver, "19-view-only-failed-list")
        driver.get(admin_url(site, job_id=job.id))
        root = driver.find_element(By.ID, "bullq-root")
        assert root.find_elements(By.CSS_SELECTOR, "form, button, input") == []
        shot(driver, "20-view-only-job")
        no_console_errors(driver)
    finally:
        driver.quit()


# --- live, all of it (issue 15, item 1) -------------------------------------------------------


def listed_ids(driver: Any) -> list[str]:
    """The ids of the job list's rows, top to bottom."""
    return list(
        js(
            driver,
            "return Array.from(document.querySelectorAll('#bullq-jobs-body tr[data-job-id]'))"
            ".map(function (r) { return r.dataset.jobId; });",
        )
    )


def count_of(driver: Any, state: str) -> int:
    from selenium.webdriver.common.by import By

    return int(
        driver.find_element(By.CSS_SELECTOR, f'.bullq-states [data-bullq-count="{state}"]').text
    )


def table_agrees_with_count(driver: Any, state: str) -> bool:
    """The tab's count and the table agree: as many rows as the count (a first page of at
    most 50), and "No jobs." exactly when the count is 0."""
    from selenium.webdriver.common.by import By

    ids = listed_ids(driver)
    empty = driver.find_elements(By.CSS_SELECTOR, "#bullq-jobs-body tr.bullq-empty")
    return len(ids) == min(count_of(driver, state), 50) and bool(empty) == (not ids)


def test_browser_active_tab_lists_a_job_while_it_runs_and_drops_it_when_done(
    site: Site, browser: Any, queue: Queue
) -> None:
    """The trial's "ACTIVE (1)" over "No jobs.": now the row comes in as the job starts (with
    its checkbox, the list's columns, its created time formatted) and goes when it completes,
    the count and the table agreeing throughout; the completed tab gets the row at the top."""
    import re

    from selenium.webdriver.common.by import By

    browser.get(admin_url(site, state="active"))
    wait_live(browser)
    js(browser, "window.bullqNoReload = 'still the same page';")
    assert table_agrees_with_count(browser, "active")
    job = queue.add("slow_progress", {"steps": 1})
    _wait(lambda: job.id in listed_ids(browser), "the running job's row to appear")
    _wait(lambda: table_agrees_with_count(browser, "active"), "the count and the table to agree")
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-job-id="{job.id}"]')
    cells = row.find_elements(By.TAG_NAME, "td")
    assert cells[1].text == job.id and cells[2].text == "slow_progress"
    assert re.match(LOCAL_TIME, cells[3].text), cells[3].text
    assert re.match(UTC_TIME, cells[3].find_element(By.TAG_NAME, "time").get_attribute("title"))
    assert row.find_elements(By.CSS_SELECTOR, 'input[type="checkbox"][name="ids"]')
    _wait(lambda: cells[6].text == "100", "the progress cell at 100")
    shot(browser, "21-active-row-live")
    queue.client.rpush(site.ack_key, 1)
    _wait(lambda: job.id not in listed_ids(browser), "the finished job's row to leave")
    _wait(lambda: table_agrees_with_count(browser, "active"), "the count and the table to agree")
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    if count_of(browser, "active") == 0:
        assert browser.find_element(By.CSS_SELECTOR, "#bullq-jobs-body tr.bullq-empty")

    browser.get(admin_url(site, state="completed"))
    wait_live(browser)
    nxt = queue.add("slow_progress", {"steps": 1})
    _wait(lambda: queue.get_job_state(nxt.id) == "active", "the next job to start")
    queue.client.rpush(site.ack_key, 1)
    _wait(lambda: listed_ids(browser)[:1] == [nxt.id], "the completed job on top of its list")
    _wait(lambda: table_agrees_with_count(browser, "completed"), "count and table to agree")
    shot(browser, "22-completed-row-live")
    no_console_errors(browser)


def visible_actions(driver: Any) -> set[str]:
    """The labels of the job page's action buttons that are shown."""
    from selenium.webdriver.common.by import By

    return {
        e.get_attribute("value")
        for e in driver.find_elements(By.CSS_SELECTOR, "#bullq-root form input[type=submit]")
        if e.is_displayed()
    }


def test_browser_job_page_shows_logs_as_written_processed_by_and_its_states_buttons(
    site: Site, browser: Any, queue: Queue
) -> None:
    """A waiting job's page, then the job runs and completes without a reload: "processed by"
    names the worker, each log line shows while the job still runs (it waits for the test
    after each), and the buttons are those of each state (waiting: Remove, Change priority;
    active: Remove, Cancel; completed: Retry, Remove), and every field follows (attempts,
    finished, ran, return value) as the server formats it."""
    import re

    from selenium.webdriver.common.by import By

    field = '[data-bullq-field="{}"]'.format
    queue.pause()
    try:
        job = queue.add("logs_slowly", {"steps": 2})
        browser.get(admin_url(site, job_id=job.id))
        wait_live(browser)
        js(browser, "window.bullqNoReload = 'still the same page';")
        processed = browser.find_element(By.CSS_SELECTOR, 'tr[data-bullq-section="processedBy"]')
        assert not processed.is_displayed()
        assert visible_actions(browser) == {"Remove", "Change priority"}
    finally:
        queue.resume()
    logs = browser.find_element(By.CSS_SELECTOR, field("logs"))
    _wait(lambda: logs.text == "step 1 of 2", "the first log line while the job runs")
    state = browser.find_element(By.CSS_SELECTOR, field("state"))
    assert state.text == "active"
    _wait(processed.is_displayed, "the processed-by row")
    assert browser.find_element(By.CSS_SELECTOR, field("processedBy")).text == "gated"
    _wait(lambda: visible_actions(browser) == {"Remove", "Cancel (running)"}, "active's buttons")
    assert browser.find_element(By.CSS_SELECTOR, field("attemptsStarted")).text == "1"
    shot(browser, "23-job-logs-live")
    queue.client.rpush(site.ack_key, 1)
    _wait(lambda: logs.text == "step 1 of 2\nstep 2 of 2", "the second log line")
    assert state.text == "active"
    queue.client.rpush(site.ack_key, 2)
    _wait(lambda: state.text == "completed", "the state to turn completed")
    _wait(lambda: visible_actions(browser) == {"Retry", "Remove"}, "completed's buttons")
    text_of = lambda name: browser.find_element(By.CSS_SELECTOR, field(name)).text  # noqa: E731
    _wait(lambda: '"logged": 2' in text_of("returnvalue"), "the return value")
    _wait(lambda: text_of("attemptsMade") == "1", "attempts made to show 1")
    assert re.match(LOCAL_TIME, text_of("finishedOn")), text_of("finishedOn")
    assert re.match(DURATION, text_of("ran")), text_of("ran")
    retry = browser.find_element(By.CSS_SELECTOR, 'form[data-bullq-action="retry"]')
    assert retry.find_element(By.NAME, "state").get_attribute("value") == "completed"
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    shot(browser, "24-job-completed-buttons")
    no_console_errors(browser)


def test_browser_job_page_draws_the_attempt_history_as_the_job_fails_and_retries(
    site: Site, browser: Any, queue: Queue
) -> None:
    """A job's page open before it runs: it fails once and completes on its retry, and the
    attempt history appears without a reload (the failure with its exception type, then the
    completion), the failure said to be history; the message stays text."""
    from selenium.webdriver.common.by import By

    queue.pause()
    try:
        job = queue.add("fails_once", {"city": "Wels"}, attempts=2)
        browser.get(admin_url(site, job_id=job.id))
        wait_live(browser)
        js(browser, "window.bullqNoReload = 'still the same page';")
        history = browser.find_element(By.ID, "bullq-attempts")
        assert not history.is_displayed()
    finally:
        queue.resume()

    def rows() -> list[str]:
        return [
            " ".join(r.text.split())
            for r in history.find_elements(By.CSS_SELECTOR, "tbody tr")
            if r.is_displayed()
        ]

    _wait(lambda: len(rows()) == 2, "the attempt history of two rows")
    assert rows()[0].startswith("1 failed RuntimeError <b>weather feed</b> unavailable"), rows()
    assert rows()[1] == "2 completed"
    assert history.find_elements(By.TAG_NAME, "b") == []
    assert browser.find_element(By.ID, "bullq-history-note").is_displayed()
    assert not browser.find_element(By.ID, "bullq-failed-reason").is_displayed()
    assert js(browser, "return window.bullqNoReload;") == "still the same page"
    shot(browser, "25-job-attempt-history-live")
    no_console_errors(browser)


def test_browser_worker_list_and_counts_follow_a_worker_starting_and_stopping(
    site: Site, browser: Any, tmp_path: Path
) -> None:
    """A second real worker process starts: the queue page's worker count and list and the
    overview's worker count go up without a reload; it stops: they go down."""
    from selenium.webdriver.common.by import By

    def workers_text() -> str:
        return str(browser.find_element(By.CSS_SELECTOR, "[data-bullq-workers]").text)

    browser.get(admin_url(site, state="waiting"))
    wait_live(browser)
    js(browser, "window.bullqNoReload = 'still the same page';")
    before = int(workers_text().split()[0])
    log = open(tmp_path / "second-worker.log", "w")  # noqa: SIM115 - closed below
    second = subprocess.Popen(
        [sys.executable, "-m", "tests.browser.gated_worker"]
        + [site.redis_url, QUEUE, f"{site.ack_key}:unused", "second-worker"],
        cwd=ROOT,
        env=site.env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        want = f"{before + 1} worker connection{'s' if before + 1 != 1 else ''}"
        _wait(lambda: workers_text() == want, "the worker count to go up")
        names = browser.find_element(By.ID, "bullq-workers-body").text
        assert (
            "second-worker" in names and browser.find_element(By.ID, "bullq-workers").is_displayed()
        )
        assert js(browser, "return window.bullqNoReload;") == "still the same page"
        shot(browser, "26-queue-workers-live")

        browser.get(site.url + "/admin/django_bullq/bullqqueue/")
        wait_live(browser)
        cell = browser.find_element(
            By.CSS_SELECTOR, f'tr[data-queue="{QUEUE}"] [data-bullq-workers]'
        )
        _wait(lambda: cell.text == str(before + 1), "the overview's worker count")
        second.terminate()
        second.wait(15)
        _wait(lambda: cell.text == str(before), "the overview's worker count to go down")
        shot(browser, "27-overview-workers-live")
    finally:
        if second.poll() is None:
            second.kill()
        log.close()


@pytest.fixture
def wsgi_site(site: Site, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The example project served by a WSGI server only (no WebSockets), same database and
    Redis as ``site``: ``(url, server process)``."""
    port = _free_port()
    log = open(tmp_path / "wsgi.log", "w")  # noqa: SIM115 - closed below
    env = dict(site.env, PYTHONPATH=os.pathsep.join([str(EXAMPLE_DIR), str(ROOT)]))
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "browser" / "wsgi_server.py"), str(port)],
        cwd=EXAMPLE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"

    answers = admin_answers(url, server, tmp_path / "wsgi.log")

    try:
        _wait(answers, "the WSGI server to serve the admin")
        yield url, server
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(15)
        log.close()


def live_mode(driver: Any) -> tuple[str, str]:
    return tuple(  # type: ignore[return-value]
        js(
            driver,
            "var e = document.getElementById('bullq-live');"
            "return e ? [e.dataset.status, e.textContent] : ['', ''];",
        )
    )


def test_browser_without_websockets_the_pages_poll_and_say_so(
    site: Site, wsgi_site: tuple[str, subprocess.Popen[bytes]], queue: Queue
) -> None:
    """Under a WSGI-only server the socket cannot open: each page says "polling every 2 s"
    and still follows the queue (a row comes in, the count goes up, the job page's progress
    and state change) without a reload; the server gone, it says "offline"."""
    from selenium.webdriver.common.by import By

    url, server = wsgi_site
    wsgi = Site(
        url=url, redis_url=site.redis_url, db_path=site.db_path, ack_key=site.ack_key, env=site.env
    )
    driver = chromium_driver()
    try:
        log_in(driver, url)
        driver.get(url + "/admin/django_bullq/bullqqueue/")
        _wait(lambda: live_mode(driver) == ("polling", "polling every 2 s"), "the overview to poll")
        shot(driver, "28-wsgi-overview-polling")

        driver.get(admin_url(wsgi, state="active"))
        _wait(lambda: live_mode(driver) == ("polling", "polling every 2 s"), "the list to poll")
        js(driver, "window.bullqNoReload = 'still the same page';")
        job = queue.add("slow_progress", {"steps": 1})
        _wait(lambda: job.id in listed_ids(driver), "the running job's row, by polling")
        _wait(lambda: table_agrees_with_count(driver, "active"), "the count and the table to agree")
        assert js(driver, "return window.bullqNoReload;") == "still the same page"
        shot(driver, "29-wsgi-list-polling")

        driver.get(admin_url(wsgi, job_id=job.id))
        _wait(lambda: live_mode(driver)[0] == "polling", "the job page to poll")
        js(driver, "window.bullqNoReload = 'still the same page';")
        bar = "return document.querySelector('#bullq-progress progress').value;"
        _wait(lambda: js(driver, bar) == 100, "the progress bar at 100, by polling")
        queue.client.rpush(site.ack_key, 1)
        state = driver.find_element(By.CSS_SELECTOR, '[data-bullq-field="state"]')
        _wait(lambda: state.text == "completed", "the state to turn completed, by polling")
        assert js(driver, "return window.bullqNoReload;") == "still the same page"
        shot(driver, "30-wsgi-job-polling")

        server.terminate()
        server.wait(15)
        _wait(lambda: live_mode(driver) == ("offline", "offline"), "the page to say offline")
        shot(driver, "31-wsgi-offline")
    finally:
        driver.quit()
