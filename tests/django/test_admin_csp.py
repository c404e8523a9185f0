"""The admin pages under a Content-Security-Policy, without a browser (cheap guard).

Every django_bullq admin template (overview, queue, job, confirmation, through their base) is
rendered with staticfiles installed, so the live-update scripts are on the page, and on Django 6
with ``ContentSecurityPolicyMiddleware`` and the ``csp`` context processor. The HTML must need
no ``'unsafe-inline'``: no inline ``<script>`` or ``<style>``, no ``style=`` attribute, no
``on…=`` handler, no ``javascript:`` URL; django_bullq's own ``<script>`` and stylesheet tags
carry the response's nonce (none on Django 5.2, which has no CSP middleware). The scripts
themselves must need no ``'unsafe-eval'`` and set no inline styles. The browser counterpart is
``tests/browser/test_admin_live.py::test_admin_live_under_strict_csp``.

Marked ``django_layer``: ``make test`` runs it under Django 6 and again under Django 5.2 LTS.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import django
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from django_bullq import Queue
from django_bullq.conf import get_queue

pytestmark = pytest.mark.django_db

STATIC = Path(__file__).resolve().parents[2] / "django_bullq" / "static" / "django_bullq"
#: django_bullq's files on every page, in page order: the stylesheet in <head>, then the scripts
OWN_FILES = [
    "django_bullq/css/bullq-admin.css",
    "django_bullq/js/bullq-events.js",
    "django_bullq/js/bullq-admin.js",
    "django_bullq/js/bullq-refresh.js",
]
URL_ATTRS = ("href", "src", "action", "formaction", "data", "xlink:href")


class Tags(HTMLParser):
    """Every start tag of a page as ``(tag, attrs)``, and the text inside each ``<script>``
    and ``<style>`` element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: list[tuple[str, str]] = []  # (tag, text) of <script> / <style> bodies
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = tag

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open and data.strip():
            self.inline.append((self._open, data.strip()))


@pytest.fixture
def csp_settings(settings: Any) -> Iterator[None]:
    """staticfiles installed; on Django 6 also the CSP middleware, a strict policy and the
    ``csp`` context processor (as docs/admin.md tells a project to set them)."""
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "django.contrib.staticfiles"]
    settings.STATIC_URL = "/static/"
    if django.VERSION >= (6, 0):
        from django.utils.csp import CSP

        settings.MIDDLEWARE = [
            "django.middleware.csp.ContentSecurityPolicyMiddleware",
            *settings.MIDDLEWARE,
        ]
        settings.SECURE_CSP = {"default-src": [CSP.SELF], "script-src": [CSP.SELF, CSP.NONCE]}
        engine = dict(settings.TEMPLATES[0])
        engine["OPTIONS"] = dict(
            engine["OPTIONS"],
            context_processors=[
                *engine["OPTIONS"]["context_processors"],
                "django.template.context_processors.csp",
            ],
        )
        settings.TEMPLATES = [engine]
    yield


@pytest.fixture
def pages(csp_settings: None) -> Iterator[dict[str, Any]]:
    """name -> response of each admin page: overview, queue lists, job, every confirmation."""
    from django.contrib.auth.models import Permission

    from django_bullq.admin.actions import ACTIONS

    user = User.objects.create_user(f"u{uuid.uuid4().hex[:8]}", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="django_bullq"))
    client = Client()
    client.force_login(user)
    name = f"csp-{uuid.uuid4().hex[:8]}"
    queue: Queue = get_queue(name)
    job = queue.add("send", {"to": "<b>x</b>"})
    # a job with an attempt history (a failure with its trace) and reported progress
    retried = queue.add("send", {"to": "y"})
    trace = 'Traceback (most recent call last):\n  File "t.py", line 1\nValueError: no\n'
    queue.client.hset(
        queue.keys.job(retried.id),
        mapping={"failedReason": "no", "stacktrace": json.dumps([trace]), "atm": 1},
    )
    retried.update_progress(40)
    queue_url = reverse("admin:django_bullq_queue", kwargs={"queue": name})
    got = {
        "overview": client.get(reverse("admin:django_bullq_bullqqueue_changelist")),
        "queue": client.get(queue_url),
        "queue, failed": client.get(queue_url + "?state=failed"),
        "job": client.get(
            reverse("admin:django_bullq_job", kwargs={"queue": name, "job_id": job.id})
        ),
        "job with attempt history": client.get(
            reverse("admin:django_bullq_job", kwargs={"queue": name, "job_id": retried.id})
        ),
    }
    assert b'id="bullq-attempts"' in got["job with attempt history"].content
    assert b'class="bullq-danger"' in got["queue"].content
    for action in ACTIONS:
        got[f"confirm {action}"] = client.post(
            reverse("admin:django_bullq_action", kwargs={"queue": name, "action": action}),
            {"ids": [job.id], "state": "waiting"},
        )
    yield got
    queue.obliterate(force=True)


def test_admin_pages_need_no_inline_script_style_or_handler(pages: dict[str, Any]) -> None:
    for page, response in pages.items():
        assert response.status_code == 200, page
        header = response.headers.get("Content-Security-Policy")
        assert (header is not None) == (django.VERSION >= (6, 0)), page
        found = re.search(r"'nonce-([^']+)'", header or "")
        nonce = found.group(1) if found else None
        assert (nonce is not None) == (header is not None), page
        parsed = Tags()
        parsed.feed(response.content.decode())
        assert parsed.inline == [], f"{page}: inline script or style"
        own = []
        for tag, attrs in parsed.tags:
            where = f"{page}: <{tag} {attrs}>"
            assert tag != "script" or attrs.get("src"), where  # scripts are files
            assert "style" not in attrs, where
            assert not [a for a in attrs if a.startswith("on")], where
            for attr in URL_ATTRS:
                assert not (attrs.get(attr) or "").strip().lower().startswith("javascript:"), where
            url = attrs.get("src") or attrs.get("href") or ""
            if tag in ("script", "link") and "/static/django_bullq/" in url:
                own.append(url.split("/static/", 1)[1])
                assert attrs.get("nonce") == nonce, where
        assert own == OWN_FILES, page


def test_admin_scripts_need_no_unsafe_eval_or_inline_styles() -> None:
    """No eval-like calls (CSP's 'unsafe-eval') and no style attributes set from script:
    element.style (CSSOM) is allowed under style-src, setAttribute("style") and markup are not."""
    forbidden = [
        r"\beval\s*\(",
        r"\bnew\s+Function\b",
        r"\bFunction\s*\(",
        r"set(Timeout|Interval)\s*\(\s*['\"`]",
        r"setAttribute\(\s*['\"]style",
        r"setAttribute\(\s*['\"]on",
        r"\.(innerHTML|outerHTML)\b",
        r"insertAdjacentHTML",
        r"document\.write",
        r"cssText",
        r"javascript:",
    ]
    scripts = sorted((STATIC / "js").glob("*.js"))
    assert [p.name for p in scripts] == ["bullq-admin.js", "bullq-events.js", "bullq-refresh.js"]
    for script in scripts:
        source = script.read_text()
        for pattern in forbidden:
            assert not re.search(pattern, source), f"{script.name}: {pattern}"
