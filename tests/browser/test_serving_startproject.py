"""A plain ``startproject``, set up by docs/serving.md alone, serves the live admin under daphne
(issue 15, item 9).

The test makes a new project with ``django-admin startproject mysite``, appends the page's
``# settings.py`` block to its settings (and a ``BULLQ`` naming the tests' private Redis, as
docs/installation.md says), replaces its ``asgi.py`` with the page's block, migrates, makes a
superuser and runs ``daphne mysite.asgi:application`` as the page says (startproject's
``DEBUG = True``). In headless Chromium the admin's stylesheet and scripts load (no 404, the
mistake the page exists to prevent), the events socket opens, and a job added to the queue
moves the waiting count without a reload.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import urlopen

import pytest
import redis

from django_bullq import Queue
from tests.browser.test_admin_live import (
    PASSWORD,
    ROOT,
    USER,
    _free_port,
    _wait,
    admin_answers,
    chromium_driver,
    js,
    log_in,
    no_console_errors,
    shot,
    wait_live,
)

pytestmark = pytest.mark.timeout(240)

DOC = ROOT / "docs" / "serving.md"


def doc_block(first_line: str) -> str:
    """The fenced ``python`` block of docs/serving.md whose first line is ``first_line``."""
    for body in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
        if body.splitlines()[0] == first_line:
            return str(body)
    raise AssertionError(f"no python block opening with {first_line!r} in serving.md")


def run(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def plain_site(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``startproject mysite`` set up by docs/serving.md, under daphne; yields its URL."""
    tmp = tmp_path_factory.mktemp("startproject")
    redis_url = urlsplit(redis_server.url)._replace(path="/13").geturl()
    redis.Redis.from_url(redis_url).flushdb()
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),  # django_bullq from this checkout
        DJANGO_SETTINGS_MODULE="mysite.settings",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
    )
    run([sys.executable, "-m", "django", "startproject", "mysite", str(tmp)], tmp, env)
    settings = tmp / "mysite" / "settings.py"
    settings.write_text(
        settings.read_text()
        + "\n\n# --- docs/serving.md ---\n"
        + doc_block("# settings.py")
        + "\n# --- docs/installation.md: where the queues live ---\n"
        + f'BULLQ = {{"CONNECTIONS": {{"default": {{"URL": "{redis_url}"}}}}, '
        + '"DEFAULT_QUEUE": "default"}\n'
    )
    (tmp / "mysite" / "asgi.py").write_text(doc_block("# asgi.py"))
    run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], tmp, env)
    run(
        [sys.executable, "manage.py", "createsuperuser", "--noinput", "--username", USER]
        + ["--email", "op@example.com"],
        tmp,
        env,
    )
    port = _free_port()
    log_path = tmp / "daphne.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
            + ["mysite.asgi:application"],
            cwd=tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"

        answers = admin_answers(url, server, log_path)

        try:
            _wait(answers, "daphne to serve the new project")
            yield url
        finally:
            server.terminate()
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
    if os.environ.get("BULLQ_BROWSER_LOGS"):
        print(log_path.read_text())


def test_a_startproject_set_up_by_the_docs_serves_the_live_admin(
    plain_site: str, redis_server: Any
) -> None:
    from selenium.webdriver.common.by import By

    for path in (
        "/static/django_bullq/css/bullq-admin.css",
        "/static/django_bullq/js/bullq-events.js",
        "/static/admin/css/base.css",
    ):
        with urlopen(plain_site + path, timeout=5) as response:
            assert response.status == 200, path
    queue = Queue("default", urlsplit(redis_server.url)._replace(path="/13").geturl())
    driver = chromium_driver()
    try:
        log_in(driver, plain_site)
        driver.get(plain_site + "/admin/django_bullq/bullqqueue/q/default/")
        wait_live(driver)
        loaded = js(
            driver,
            "return Array.from(document.styleSheets).some(function (s) {"
            " return (s.href || '').indexOf('bullq-admin.css') >= 0 && s.cssRules.length > 0; });",
        )
        assert loaded, "the admin's stylesheet did not load"
        js(driver, "window.bullqNoReload = 'still the same page';")
        waiting = driver.find_element(By.CSS_SELECTOR, '[data-bullq-count="waiting"]')
        before = int(waiting.text)
        queue.add("hello", {"from": "the docs"})
        _wait(lambda: waiting.text == str(before + 1), "the waiting count to go up by one")
        assert js(driver, "return window.bullqNoReload;") == "still the same page"
        shot(driver, "18-startproject-live")
        no_console_errors(driver)
    finally:
        driver.quit()
        queue.close()
