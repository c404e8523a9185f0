"""The admin with a Redis it cannot reach (issue 15, found by a new user's trial): every page
answered 500 with redis-py's ConnectionError when one configured connection was down, although
admin.md says the overview still renders. Now the overview lists that queue as unreachable
beside the others, and the pages of its queue say what is wrong with a 503."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from django.test import override_settings
from django.urls import reverse

from django_bullq.conf import get_config
from django_bullq.core.queue import discovery
from tests.support.admin_users import staff_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def down_queue() -> Iterator[str]:
    """BULLQ with a queue "deadq" on a connection where nothing listens (password in it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    bullq = get_config()
    connections = {
        **bullq["CONNECTIONS"],
        "dead": {"URL": f"redis://:secret@127.0.0.1:{closed}/0"},
    }
    queues = {**(bullq.get("QUEUES") or {}), "deadq": {"CONNECTION": "dead"}}
    with override_settings(BULLQ={**bullq, "CONNECTIONS": connections, "QUEUES": queues}):
        discovery.forget()
        yield f"127.0.0.1:{closed}"
    discovery.forget()


def test_the_overview_lists_a_queue_it_cannot_reach_beside_the_others(down_queue: str) -> None:
    client = staff_client(every=True)
    response = client.get(reverse("admin:django_bullq_bullqqueue_changelist"))
    page = response.content.decode()
    assert response.status_code == 200
    row = page[page.index('<tr data-queue="deadq"') :]
    row = row[: row.index("</tr>")]
    assert "unreachable" in row and down_queue in row and "secret" not in row
    assert '<tr data-queue="default"' in page  # the queues it can reach are listed as ever
    body = client.get(reverse("admin:django_bullq_live")).json()
    dead = next(q for q in body["queues"] if q["name"] == "deadq")
    assert "unreachable" in dead["error"] and "counts" not in dead


@pytest.mark.parametrize(
    "url",
    [
        ("admin:django_bullq_queue", {"queue": "deadq"}),
        ("admin:django_bullq_job", {"queue": "deadq", "job_id": "7"}),
        ("admin:django_bullq_metrics", {"queue": "deadq"}),
        ("admin:django_bullq_queue_live", {"queue": "deadq"}),
    ],
)
def test_a_page_of_a_queue_it_cannot_reach_says_so_with_a_503(
    down_queue: str, url: tuple[str, dict[str, str]]
) -> None:
    response = staff_client(every=True).get(reverse(url[0], kwargs=url[1]))
    assert response.status_code == 503
    text = response.content.decode()
    assert "unreachable" in text and down_queue in text and "secret" not in text
    assert "Traceback" not in text


def test_the_schedules_page_lists_an_unreachable_queue_and_the_others(down_queue: str) -> None:
    response = staff_client(every=True).get(reverse("admin:django_bullq_schedules"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "deadq" in page and "unreachable" in page
