"""A job page shows its whole flow (issue 15, item 4): the tree from the root down, across
queues, each node linked to its own page with its state, the page's own job marked; names from
any producer escaped."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from django_bullq.admin import flow_tree
from django_bullq.conf import get_queue
from django_bullq.core.flow import FlowProducer, JobNode

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues() -> Iterator[tuple[str, str]]:
    names = (f"ft-{uuid.uuid4().hex[:8]}", f"ft-{uuid.uuid4().hex[:8]}")
    yield names
    for name in names:
        get_queue(name).obliterate(force=True)


def jurl(name: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job", kwargs={"queue": name, "job_id": job_id})


def three_levels(first: str, second: str) -> JobNode:
    """report (first) <- [fetch (second) <- [parse <b>x</b> (second)], notify (first)]."""
    return FlowProducer(get_queue(first).connection).add(
        {
            "name": "report",
            "queue_name": first,
            "children": [
                {
                    "name": "fetch",
                    "queue_name": second,
                    "children": [{"name": "parse <b>x</b>", "queue_name": second}],
                },
                {"name": "notify", "queue_name": first},
            ],
        }
    )


def test_a_grandchild_page_shows_the_whole_tree_across_queues(
    admin_client: Client, queues: tuple[str, str]
) -> None:
    # the page listed only the direct parent and children, with no states
    first, second = queues
    root = three_levels(first, second)
    fetch, notify = root.children
    (parse,) = fetch.children
    body = admin_client.get(jurl(second, parse.job.id)).content.decode()
    assert 'class="bullq-flow"' in body
    for queue_name, node in ((first, root), (second, fetch), (second, parse), (first, notify)):
        assert jurl(queue_name, node.job.id) in body, node.job.name
    assert "parse &lt;b&gt;x&lt;/b&gt;" in body and "parse <b>x</b>" not in body
    view = flow_tree.flow_view(get_queue(second), parse.job)
    assert view is not None and not view.truncated
    rows = view.rows
    assert [(r.depth, r.name, r.state, r.current) for r in rows] == [
        (0, "report", "waiting-children", False),
        (1, "fetch", "waiting-children", False),
        (2, "parse <b>x</b>", "waiting", True),
        (1, "notify", "waiting", False),
    ]
    assert [r.queue for r in rows] == [first, second, second, first]


def test_a_job_outside_any_flow_shows_no_flow(
    admin_client: Client, queues: tuple[str, str]
) -> None:
    q = get_queue(queues[0])
    job = q.add("alone", {})
    assert flow_tree.flow_view(q, job) is None
    assert 'class="bullq-flow"' not in admin_client.get(jurl(q.name, job.id)).content.decode()


def test_a_parent_gone_from_redis_starts_the_tree_at_the_highest_job_left(
    queues: tuple[str, str],
) -> None:
    first, second = queues
    root = three_levels(first, second)
    fetch = root.children[0]
    get_queue(first).client.delete(get_queue(first).keys.job(root.job.id))
    view = flow_tree.flow_view(get_queue(second), fetch.job)
    assert view is not None
    assert [(r.depth, r.name) for r in view.rows] == [(0, "fetch"), (1, "parse <b>x</b>")]


def test_a_big_flow_is_cut_at_the_node_limit_and_says_so(queues: tuple[str, str]) -> None:
    first, _ = queues
    root = FlowProducer(get_queue(first).connection).add(
        {
            "name": "fan-out",
            "queue_name": first,
            "children": [{"name": f"part {i}", "queue_name": first} for i in range(30)],
        }
    )
    view = flow_tree.flow_view(get_queue(first), root.job, max_nodes=10)
    assert view is not None
    assert len(view.rows) == 10 and view.truncated


def flow_part(name: str, job_id: str) -> str:
    return reverse("admin:django_bullq_job_flow", kwargs={"queue": name, "job_id": job_id})


def test_the_page_redraws_its_tree_from_a_part_that_follows_the_other_nodes(
    admin_client: Client, queues: tuple[str, str]
) -> None:
    # the socket follows the page's own job only: the tree was drawn once, then stale
    first, second = queues
    root = three_levels(first, second)
    fetch, notify = root.children
    page = admin_client.get(jurl(first, notify.job.id)).content.decode()
    assert f'data-bullq-refresh="{flow_part(first, notify.job.id)}"' in page
    assert "django_bullq/js/bullq-refresh.js" in page
    before = admin_client.get(flow_part(first, notify.job.id)).content.decode()
    assert before.startswith('<ul class="bullq-flow"') and "parse &lt;b&gt;x&lt;/b&gt;" in before

    get_queue(second).remove(fetch.children[0].job.id)  # the grandchild goes

    after = admin_client.get(flow_part(first, notify.job.id)).content.decode()
    assert "parse &lt;b&gt;x&lt;/b&gt;" not in after and "fetch" in after
    assert after.count("<li") == before.count("<li") - 1


def test_the_flow_part_is_empty_for_a_job_gone_and_refused_without_view_permission(
    admin_client: Client, client: Client, queues: tuple[str, str]
) -> None:
    first, second = queues
    root = three_levels(first, second)
    assert admin_client.get(flow_part(first, "gone")).content == b""
    anonymous = client.get(flow_part(first, root.job.id))
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
