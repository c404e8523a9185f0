"""The outbox relay on a real PostgreSQL: relays racing for the same rows add each job once."""

from __future__ import annotations

from django_bullq.conf import get_queue
from tests.support.pg_server import PostgresServer, run_pg_script


def test_racing_relays_add_every_row_exactly_once(
    postgres: PostgresServer, queue_name: str
) -> None:
    report = run_pg_script(postgres, "tests.support.outbox_race", queue_name, "300", "4")
    assert report["left"] == 0
    assert sum(report["added"]) == 300  # no row added by two relays
    assert len([n for n in report["added"] if n]) > 1, "the relays did not compete"
    queue = get_queue(queue_name)
    assert queue.count() == 300
    data = sorted(job.data["args"][0] for job in queue.get_jobs("waiting"))
    assert data == list(range(300))


def test_flows_and_schedulers_go_through_the_outbox_in_the_same_transaction(
    postgres: PostgresServer, queue_name: str
) -> None:
    """Issue 12 item 2 on real PostgreSQL: the flow and scheduler rows commit or roll back with
    the caller's data, other connections see them only after the commit, a crash after the
    commit leaves them for another process's relay, which moves each once."""
    seen = run_pg_script(postgres, "tests.support.outbox_kinds_pg", queue_name)
    assert seen["inside_rows"] == ["flow", "scheduler"]
    assert seen["inside_other"] == {"rows": [], "relayed": 0}  # not committed: invisible
    assert seen["inside_redis_jobs"] == 0
    assert seen["after_rows"] == 0
    assert seen["flow_state"] == "done" and seen["flow_root_matches"] is True
    assert seen["flow_root_in_redis"] == "waiting-children"
    assert seen["schedule_state"] == "done" and seen["scheduler_after_commit"] is True
    assert seen["rollback_rows"] == 0 and seen["rollback_notes"] == 0
    assert seen["rollback_flow_in_redis"] is False and seen["rollback_scheduler"] is False
    assert seen["crash_rows"] == ["flow", "scheduler"]
    assert seen["crash_flow_before_relay"] is False
    assert seen["crash_relay"] == {"rows": ["flow", "scheduler"], "relayed": 2}
    assert seen["crash_flow_after_relay"] == "waiting-children"
    assert seen["crash_scheduler_after_relay"] is True
    assert seen["crash_relay_again"] == 0


def test_enqueue_many_on_commit_and_through_the_outbox(
    postgres: PostgresServer, queue_name: str
) -> None:
    """Issue 14 item 3 on real PostgreSQL: a batch waits for the commit and is written once
    after it (a rollback writes none); with the outbox its rows are in the caller's
    transaction, invisible to other connections until the commit, moved together after it,
    and left for another process's relay by a crash right after the commit."""
    seen = run_pg_script(postgres, "tests.support.enqueue_many_pg", queue_name)
    assert seen["plain_inside_redis"] == 0
    assert seen["plain_states"] == ["done"]
    assert seen["plain_args"] == list(range(50))
    assert seen["plain_rolled_back"] == [False] * 5
    assert seen["outbox_inside_rows"] == 30
    assert seen["outbox_inside_other"] == {"rows": 0, "relayed": 0}  # not committed: invisible
    assert seen["outbox_after_rows"] == 0
    assert seen["outbox_states"] == ["done"]
    assert seen["outbox_added"] == 30
    assert seen["outbox_rollback_rows"] == 0
    assert seen["crash_rows"] == 10 and seen["crash_before_relay"] == 0
    assert seen["crash_relay"] == {"rows": 10, "relayed": 10}
    assert seen["crash_after_relay"] == list(range(10))
    assert seen["crash_relay_again"] == 0
