"""Destructive actions look dangerous and say what goes; view-only staff see no buttons
(issue 15, item 8). The strict-CSP side is tests/django/test_admin_csp.py (every page and
confirmation) and the browser's tests/browser/test_admin_live.py."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.urls import reverse

from django_bullq.admin.actions import ACTIONS, DANGER
from django_bullq.conf import get_queue
from tests.django.test_admin import fail_job
from tests.support.admin_users import staff_client

pytestmark = pytest.mark.django_db

CSS = Path(__file__).resolve().parents[2] / "django_bullq/static/django_bullq/css/bullq-admin.css"


@pytest.fixture
def qname() -> Iterator[str]:
    name = f"dz-{uuid.uuid4().hex[:8]}"
    yield name
    get_queue(name).obliterate(force=True)


def qurl(name: str, state: str = "waiting") -> str:
    return reverse("admin:django_bullq_queue", kwargs={"queue": name}) + f"?state={state}"


def jurl(name: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job", kwargs={"queue": name, "job_id": job_id})


def aurl(name: str, action: str) -> str:
    return reverse("admin:django_bullq_action", kwargs={"queue": name, "action": action})


def buttons(body: str) -> dict[str, str]:
    """action slug -> the class attribute of the submit control that posts to it."""
    found: dict[str, str] = {}
    for form in re.finditer(
        r'<form method="post" action="[^"]*/action/([\w]+)/"(.*?)</form>', body, re.S
    ):
        control = re.search(r'<input type="submit"[^>]*>', form.group(2))
        if control:
            klass = re.search(r'class="([^"]*)"', control.group(0))
            found[form.group(1)] = klass.group(1) if klass else ""
    for button in re.finditer(r"<button[^>]*formaction=\"[^\"]*/action/(\w+)/\"[^>]*>", body):
        klass = re.search(r'class="([^"]*)"', button.group(0))
        found[button.group(1)] = klass.group(1) if klass else ""
    return found


def test_destructive_actions_are_the_danger_ones() -> None:
    assert {"remove", "remove_all", "clean", "drain", "obliterate"} == DANGER
    assert {name for name, a in ACTIONS.items() if a.danger} == DANGER


def test_destructive_buttons_are_styled_as_danger_and_pause_is_not(qname: str) -> None:
    q = get_queue(qname)
    job = q.add("a", {})
    shown = buttons(staff_client(every=True).get(qurl(qname)).content.decode())
    assert set(shown) == set(ACTIONS) - {"cancel"} or set(shown) == set(ACTIONS)
    for name, klass in shown.items():
        assert ("bullq-danger" in klass.split()) == (name in DANGER), (name, klass)
    assert "bullq-danger" not in shown["pause"] and "bullq-danger" not in shown["resume"]
    page = buttons(staff_client(every=True).get(jurl(qname, job.id)).content.decode())
    assert "bullq-danger" in page["remove"].split()
    css = CSS.read_text()
    assert re.search(r"\.bullq-danger[^{]*\{[^}]*background", css)


def test_view_only_staff_see_no_action_buttons(qname: str) -> None:
    q = get_queue(qname)
    job = q.add("a", {})
    failed = fail_job(q)
    viewer = staff_client("view_bullqqueue")
    for url in (qurl(qname), qurl(qname, "failed"), jurl(qname, job.id), jurl(qname, failed)):
        resp = viewer.get(url)
        assert resp.status_code == 200, url
        body = resp.content.decode().split('id="bullq-root"', 1)[1]  # not the admin's chrome
        assert "/action/" not in body, url
        assert 'name="ids"' not in body and 'name="select_all"' not in body, url
        submits = re.findall(r'<input type="submit"[^>]*>|<button', body)
        expected = ['<input type="submit" value="Search">'] if "/job/" not in url else []
        assert submits == expected, url
        assert "Queue actions" not in body and "Danger zone" not in body, url


def test_staff_see_the_buttons_of_their_permissions_only(qname: str) -> None:
    q = get_queue(qname)
    failed = fail_job(q)
    remover = staff_client("view_bullqqueue", "remove_job")
    shown = buttons(remover.get(qurl(qname, "failed")).content.decode())
    assert set(shown) == {"remove", "remove_all"}
    assert set(buttons(remover.get(jurl(qname, failed)).content.decode())) == {"remove"}


def test_confirmations_say_what_will_go(qname: str) -> None:
    q = get_queue(qname)
    for _ in range(2):
        q.add("w", {})
    q.add("d", {}, delay=60_000)
    q.add("p", {}, priority=3)
    failed = [fail_job(q) for _ in range(3)]
    assert len(failed) == 3
    admin = staff_client(every=True)

    def confirm(action: str, **fields: str) -> str:
        resp = admin.post(aurl(qname, action), {"state": "waiting", **fields})
        assert resp.status_code == 200 and b"are you sure" in resp.content
        body = resp.content.decode()
        assert re.search(
            r'<input type="submit" value="Yes, I.m sure" class="[^"]*bullq-danger', body
        )
        return " ".join(re.sub(r"<[^>]+>", " ", body).split())

    text = confirm("obliterate")
    assert "7 jobs" in text and "waiting 2" in text and "failed 3" in text
    assert "delayed 1" in text and "prioritized 1" in text
    text = confirm("drain")
    assert "3 jobs" in text and "waiting 2" in text and "prioritized 1" in text
    assert "delayed 1" in text  # named as what the "also delayed jobs" box adds
    text = confirm("remove_all")
    assert "3 failed jobs" in text
    text = confirm("clean")
    assert "completed 0" in text and "failed 3" in text and "at most" in text.lower()
    resp = admin.post(aurl(qname, "pause"), {"state": "waiting"})
    assert "bullq-danger" not in resp.content.decode()
