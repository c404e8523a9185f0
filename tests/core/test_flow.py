"""Flows against Redis: FlowProducer trees across queues, failure policies, chains, step jobs,
removal with children (docs/flows.md, protocol §5.15)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from django_bullq import FlowProducer, Job, Queue, chain
from django_bullq.core.errors import InvalidNameError, ParentMissing
from tests.support.workerkit import events, make_worker


@pytest.fixture
def names() -> list[str]:
    tag = uuid.uuid4().hex[:8]
    return [f"fa-{tag}", f"fb-{tag}", f"fc-{tag}"]


@pytest.fixture
def flows(redis_url: str) -> Iterator[FlowProducer]:
    producer = FlowProducer(redis_url)
    yield producer
    producer.close()


async def process(job: Job) -> Any:
    """Fail when data says so; otherwise return the name and the children's values."""
    data = job.data if isinstance(job.data, dict) else {}
    if data.get("fail"):
        raise RuntimeError(f"{job.name} failed")
    return {"name": job.name, "children": await job.aget_children_values()}


async def run_workers(
    queues: list[Queue],
    until: Callable[[], bool],
    processor: Callable[[Job], Any] = process,
    timeout: float = 8.0,
) -> None:
    workers = [make_worker(q, processor) for q in queues]
    tasks = [asyncio.create_task(w.arun()) for w in workers]
    try:
        for _ in range(int(timeout / 0.02)):
            if until():
                return
            for t in tasks:
                if t.done():
                    t.result()
            await asyncio.sleep(0.02)
        raise AssertionError("flow did not reach the expected state in time")
    finally:
        for w in workers:
            w.close()
        await asyncio.gather(*(asyncio.wait_for(t, 10) for t in tasks))


def node(
    name: str, queue: str, children: list[dict[str, Any]] | None = None, **opts: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "queue_name": queue,
        "data": {"fail": opts.pop("fail", False)},
        "opts": opts,
        "children": children or [],
    }


def test_add_writes_bullmq_layout(flows: FlowProducer, names: list[str], r: redis.Redis) -> None:
    pq, cq = names[0], names[1]
    tree = flows.add(
        node(
            "parent",
            pq,
            [node("c1", cq, job_id="c-one"), node("c2", pq, fail_parent_on_failure=True)],
        )
    )
    parent = tree.job
    assert str(uuid.UUID(parent.id, version=4)) == parent.id
    assert [c.job.id for c in tree.children][0] == "c-one"
    parent_key = f"bull:{pq}:{parent.id}"
    assert r.zscore(f"bull:{pq}:waiting-children", parent.id) is not None
    assert r.smembers(parent_key + ":dependencies") == {
        f"bull:{cq}:c-one",
        f"bull:{pq}:{tree.children[1].job.id}",
    }
    child = r.hgetall(f"bull:{cq}:c-one")
    assert child["parentKey"] == parent_key
    assert json.loads(child["parent"]) == {"id": parent.id, "queueKey": f"bull:{pq}"}
    assert json.loads(child["opts"])["parent"] == {"id": parent.id, "queue": f"bull:{pq}"}
    c2 = r.hgetall(f"bull:{pq}:{tree.children[1].job.id}")
    assert json.loads(c2["parent"])["fpof"] is True
    assert json.loads(c2["opts"])["fpof"] is True
    assert r.lrange(f"bull:{cq}:wait", 0, -1) == ["c-one"]
    pqueue = flows.queue(pq)
    assert [e["event"] for e in events(r, pqueue) if e["jobId"] == parent.id] == [
        "added",
        "waiting-children",
    ]
    assert pqueue.get_job_state(parent.id) == "waiting-children"


async def test_parent_runs_after_children_and_sees_their_values(
    flows: FlowProducer, names: list[str], r: redis.Redis
) -> None:
    pq, cq = names[0], names[1]
    tree = await flows.aadd(node("parent", pq, [node("c1", cq), node("c2", cq)]))
    queues = [flows.queue(pq), flows.queue(cq)]
    parent = tree.job
    await run_workers(queues, lambda: queues[0].get_job_state(parent.id) == "completed")
    got = parent.refresh().returnvalue
    keys = {f"bull:{cq}:{c.job.id}": {"name": c.job.name, "children": {}} for c in tree.children}
    assert got == {"name": "parent", "children": keys}
    assert parent.get_dependencies_count() == {
        "processed": 2,
        "unprocessed": 0,
        "ignored": 0,
        "failed": 0,
    }
    released = [e for e in events(r, queues[0]) if e.get("prev") == "waiting-children"]
    assert released == [{"event": "waiting", "jobId": parent.id, "prev": "waiting-children"}]


async def test_three_levels_across_three_queues(flows: FlowProducer, names: list[str]) -> None:
    a, b, c = names
    tree = flows.add(
        node("root", a, [node("mid", b, [node("leaf1", c), node("leaf2", a)]), node("leaf3", c)])
    )
    queues = [flows.queue(n) for n in names]
    await run_workers(queues, lambda: queues[0].get_job_state(tree.job.id) == "completed")
    root = tree.job.refresh().returnvalue
    mid_key = f"bull:{b}:{tree.children[0].job.id}"
    assert set(root["children"]) == {mid_key, f"bull:{c}:{tree.children[1].job.id}"}
    assert set(root["children"][mid_key]["children"]) == {
        f"bull:{c}:{tree.children[0].children[0].job.id}",
        f"bull:{a}:{tree.children[0].children[1].job.id}",
    }
    read = flows.get_flow(a, tree.job.id)
    assert read is not None and len(read.children) == 2
    assert sorted(len(n.children) for n in read.children) == [0, 2]
    aread = await flows.aget_flow(a, tree.job.id)
    assert aread is not None
    assert sorted(len(n.children) for n in aread.children) == [0, 2]
    assert flows.get_flow(a, tree.job.id, depth=1).children == []  # type: ignore[union-attr]
    assert flows.get_flow(a, "missing") is None


async def test_fail_parent_on_failure_goes_up_the_tree(
    flows: FlowProducer, names: list[str]
) -> None:
    a, b, c = names
    tree = flows.add(
        node(
            "root",
            a,
            [
                node(
                    "mid",
                    b,
                    [node("bad", c, fail=True, fail_parent_on_failure=True), node("slow-ok", c)],
                    fail_parent_on_failure=True,
                )
            ],
        )
    )
    queues = [flows.queue(n) for n in names]
    await run_workers(queues, lambda: queues[0].get_job_state(tree.job.id) == "failed")
    mid = tree.children[0].job.refresh()
    bad_key = f"bull:{c}:{tree.children[0].children[0].job.id}"
    assert mid.failed_reason == f"child {bad_key} failed"
    assert tree.job.refresh().failed_reason == f"child bull:{b}:{mid.id} failed"
    assert mid.get_dependencies()["failed"] == [bad_key]
    assert mid.deferred_failure is None  # defa is dropped when the job lands in failed


@pytest.mark.parametrize("policy", ["ignore_dependency_on_failure", "remove_dependency_on_failure"])
async def test_ignore_and_remove_dependency_let_the_parent_run(
    flows: FlowProducer, names: list[str], policy: str
) -> None:
    pq, cq = names[0], names[1]
    tree = flows.add(
        node("parent", pq, [node("bad", cq, fail=True, **{policy: True}), node("good", cq)])
    )
    queues = [flows.queue(pq), flows.queue(cq)]
    await run_workers(queues, lambda: queues[0].get_job_state(tree.job.id) == "completed")
    deps = tree.job.get_dependencies()
    bad_key = f"bull:{cq}:{tree.children[0].job.id}"
    assert list(deps["processed"]) == [f"bull:{cq}:{tree.children[1].job.id}"]
    if policy == "ignore_dependency_on_failure":
        assert deps["ignored"] == {bad_key: "bad failed"}
    else:
        assert deps["ignored"] == {}
    assert deps["unprocessed"] == [] and deps["failed"] == []


async def test_continue_parent_on_failure_releases_at_once(
    flows: FlowProducer, names: list[str]
) -> None:
    pq, cq = names[0], names[1]
    tree = flows.add(
        node("parent", pq, [node("bad", cq, fail=True, continue_parent_on_failure=True)])
    )
    pending = flows.queue(names[2]).add("never-run", {})  # a second child nobody processes
    r_client = flows.queue(pq).client
    r_client.sadd(f"bull:{pq}:{tree.job.id}:dependencies", f"bull:{names[2]}:{pending.id}")
    queues = [flows.queue(pq), flows.queue(cq)]
    seen: list[str] = []

    async def record(job: Job) -> Any:
        seen.append(job.name)
        if job.name == "bad":
            raise RuntimeError("bad failed")
        return "parent ran"

    await run_workers(queues, lambda: "parent" in seen, processor=record)
    assert tree.job.get_dependencies()["ignored"] == {
        f"bull:{cq}:{tree.children[0].job.id}": "bad failed"
    }


async def test_no_policy_keeps_parent_waiting(flows: FlowProducer, names: list[str]) -> None:
    pq, cq = names[0], names[1]
    tree = flows.add(node("parent", pq, [node("bad", cq, fail=True)]))
    queues = [flows.queue(pq), flows.queue(cq)]
    await run_workers(queues, lambda: queues[1].get_job_state(tree.children[0].job.id) == "failed")
    assert queues[0].get_job_state(tree.job.id) == "waiting-children"
    assert tree.job.get_dependencies_count() == {
        "processed": 0,
        "unprocessed": 1,
        "ignored": 0,
        "failed": 0,
    }


async def test_chain_runs_steps_in_order(flows: FlowProducer, names: list[str]) -> None:
    q = names[0]
    root = flows.add(chain([node(f"step{i}", q) for i in range(1, 4)]))
    queue = flows.queue(q)
    order: list[str] = []

    async def step(job: Job) -> Any:
        order.append(job.name)
        previous = list((await job.aget_children_values()).values())
        return (previous[0] if previous else 0) + 1

    await run_workers(
        [queue], lambda: queue.get_job_state(root.job.id) == "completed", processor=step
    )
    assert order == ["step1", "step2", "step3"]
    assert root.job.refresh().returnvalue == 3


def test_chain_rejects_empty_and_nested() -> None:
    with pytest.raises(ValueError):
        chain([])
    with pytest.raises(ValueError):
        chain([{"name": "a", "queue_name": "q", "children": [{"name": "b"}]}])


def test_remove_with_children_and_parent_release(
    flows: FlowProducer, names: list[str], r: redis.Redis
) -> None:
    pq, cq = names[0], names[1]
    tree = flows.add(node("parent", pq, [node("mid", cq, [node("leaf", pq)])]))
    mid = tree.children[0].job
    leaf = tree.children[0].children[0].job
    assert flows.queue(cq).remove(mid.id) is True  # takes its own child along
    assert r.exists(f"bull:{cq}:{mid.id}", f"bull:{pq}:{leaf.id}") == 0
    assert {"event": "removed", "jobId": leaf.id, "prev": "wait"} in events(r, flows.queue(pq))
    # the parent waited only for mid: released to wait
    assert flows.queue(pq).get_job_state(tree.job.id) == "waiting"

    tree2 = flows.add(node("p2", pq, [node("c", cq)]))
    assert flows.queue(pq).remove(tree2.job.id) is True
    assert r.exists(f"bull:{cq}:{tree2.children[0].job.id}") == 0


def test_remove_refuses_when_a_descendant_is_locked(
    flows: FlowProducer, names: list[str], r: redis.Redis
) -> None:
    tree = flows.add(node("parent", names[0], [node("c", names[1])]))
    r.set(f"bull:{names[1]}:{tree.children[0].job.id}:lock", "someone")
    assert flows.queue(names[0]).remove(tree.job.id) is False
    assert flows.queue(names[0]).remove(tree.job.id, remove_children=False) is True
    assert r.exists(f"bull:{names[1]}:{tree.children[0].job.id}") == 1


async def test_step_job_adds_children_then_waits(flows: FlowProducer, names: list[str]) -> None:
    pq, cq = names[0], names[1]
    parent_queue, child_queue = flows.queue(pq), flows.queue(cq)
    parent = parent_queue.add("step-parent", {})
    runs: list[Any] = []

    async def proc(job: Job) -> Any:
        if job.name != "step-parent":
            return job.data["n"] * 10
        runs.append(job.id)
        if len(runs) == 1:
            for n in (1, 2):
                await child_queue.aadd(
                    "child", {"n": n}, parent={"id": job.id, "queue": parent_queue.keys.queue_key}
                )
            # False when the children were already done (then the task just goes on)
            await job.amove_to_waiting_children()
        return sorted((await job.aget_children_values()).values())

    await run_workers(
        [parent_queue, child_queue],
        lambda: parent_queue.get_job_state(parent.id) == "completed",
        processor=proc,
    )
    assert runs in ([parent.id], [parent.id, parent.id])
    assert parent.refresh().returnvalue == [10, 20]


async def test_move_to_waiting_children_without_children_returns_false(
    flows: FlowProducer, names: list[str]
) -> None:
    q = flows.queue(names[0])
    job = q.add("lonely", {})
    answers: list[bool] = []

    async def proc(j: Job) -> Any:
        answers.append(await j.amove_to_waiting_children())
        return "done"

    await run_workers([q], lambda: q.get_job_state(job.id) == "completed", processor=proc)
    assert answers == [False]


def test_colons_and_bad_nodes_are_rejected_before_writing(
    flows: FlowProducer, names: list[str], r: redis.Redis
) -> None:
    with pytest.raises(InvalidNameError):
        flows.add(node("p", names[0], [node("c", "parent:child")]))
    with pytest.raises(InvalidNameError):
        flows.add(node("p", names[0], [node("c", names[1], job_id="custom:job:id:123")]))
    with pytest.raises(ValueError):
        flows.add(
            node(
                "p",
                names[0],
                [
                    node(
                        "c",
                        names[1],
                        fail_parent_on_failure=True,
                        ignore_dependency_on_failure=True,
                    )
                ],
            )
        )
    with pytest.raises(ValueError):
        flows.add({"name": "p", "queue_name": names[0], "childs": []})
    assert r.keys(f"bull:{names[0]}:*") == []


def test_root_with_missing_external_parent(
    flows: FlowProducer, names: list[str], r: redis.Redis
) -> None:
    with pytest.raises(ParentMissing):
        flows.add(
            node(
                "p",
                names[0],
                [node("c", names[1])],
                parent={"id": "nope", "queue": f"bull:{names[2]}"},
            )
        )
    assert r.keys(f"bull:{names[1]}:*") == []
    holder = flows.queue(names[2]).add("holder", {})
    tree = flows.add(node("p", names[0], parent={"id": holder.id, "queue": f"bull:{names[2]}"}))
    assert r.smembers(f"bull:{names[2]}:{holder.id}:dependencies") == {
        f"bull:{names[0]}:{tree.job.id}"
    }


async def test_add_bulk_is_one_transaction(flows: FlowProducer, names: list[str]) -> None:
    roots = await flows.aadd_bulk(
        [node("p1", names[0], [node("c", names[1])]), node("p2", names[0])]
    )
    q = flows.queue(names[0])
    assert q.get_job_state(roots[0].job.id) == "waiting-children"
    assert q.get_job_state(roots[1].job.id) == "waiting"  # no children: enqueued at once


async def test_step_job_sync_twins(flows: FlowProducer, names: list[str]) -> None:
    parent_queue, child_queue = flows.queue(names[0]), flows.queue(names[1])
    parent = parent_queue.add("sync-parent", {})
    runs: list[str] = []

    def proc(job: Job) -> Any:
        if job.name == "child":
            return 5
        runs.append(job.id)
        if len(runs) == 1:
            child_queue.add(
                "child", {}, parent={"id": job.id, "queue": parent_queue.keys.queue_key}
            )
            job.move_to_waiting_children()
        return {
            "values": list(job.get_children_values().values()),
            "count": job.get_dependencies_count()["processed"],
        }

    await run_workers(
        [parent_queue, child_queue],
        lambda: parent_queue.get_job_state(parent.id) == "completed",
        processor=proc,
    )
    assert parent.refresh().returnvalue == {"values": [5], "count": 1}
    assert len(runs) in (1, 2)  # 1 when the child was done before the move


# -------------------------------------------------------------------------------------------------
# Cases B11 (parent stuck when a runtime-added child fails early) and B13 (colons in job ids
# and queue names, flows part). See ../shared/cases/README.md.


@pytest.fixture
def pair(flows: FlowProducer) -> tuple[Queue, Queue]:
    tag = uuid.uuid4().hex[:8]
    return flows.queue(f"P-{tag}"), flows.queue(f"C-{tag}")


def _step_parent(
    child_queue: Queue, parent_queue: Queue, child_opts: dict[str, Any], runs: list[str]
) -> Any:
    async def proc(job: Job) -> Any:
        if job.name == "child":
            raise RuntimeError("child fails at once")
        runs.append(job.id)
        if len(runs) == 1:
            for n in (1, 2):
                await child_queue.aadd(
                    "child",
                    {"n": n},
                    parent={"id": job.id, "queue": parent_queue.keys.queue_key},
                    **child_opts,
                )
            await asyncio.sleep(0.2)  # the children fail meanwhile
            await job.amove_to_waiting_children()
        return "parent done"

    return proc


async def test_case_b11_fail_parent_child_failed_before_parent_waits(
    pair: tuple[Queue, Queue],
) -> None:
    pq, cq = pair
    parent = pq.add("parent", {})
    runs: list[str] = []
    proc = _step_parent(cq, pq, {"fail_parent_on_failure": True}, runs)
    await run_workers([pq, cq], lambda: pq.get_job_state(parent.id) == "failed", processor=proc)
    parent.refresh()
    assert runs == [parent.id]  # one processing cycle, never parked in waiting-children
    assert parent.failed_reason is not None
    assert parent.failed_reason.startswith(f"child {cq.keys.key_prefix}")
    assert parent.failed_reason.endswith(" failed")
    assert pq.get_job_counts("waiting-children")["waiting-children"] == 0
    assert len(parent.get_dependencies()["failed"]) == 2


@pytest.mark.parametrize("where", ["delayed", "prioritized"])
async def test_case_b11_fail_parent_when_parent_delayed_or_prioritized(
    pair: tuple[Queue, Queue], where: str
) -> None:
    pq, cq = pair
    opts = {"delay": 60_000} if where == "delayed" else {"priority": 3}
    parent = pq.add("parent", {}, **opts)
    for n in (1, 2):
        cq.add(
            "child",
            {"n": n},
            parent={"id": parent.id, "queue": pq.keys.queue_key},
            fail_parent_on_failure=True,
        )
    ran: list[str] = []

    async def proc(job: Job) -> Any:
        ran.append(job.name)
        raise RuntimeError("child fails at once")

    await run_workers([cq], lambda: cq.get_job_counts("failed")["failed"] == 2, processor=proc)
    # a delayed parent is released at once; a prioritized one carries the deferred failure
    assert parent.refresh().deferred_failure is not None
    await run_workers([pq], lambda: pq.get_job_state(parent.id) == "failed", processor=proc)
    assert ran == ["child", "child"]  # the parent's processor never ran
    assert "failed" in (parent.refresh().failed_reason or "")


async def test_case_b11_no_policy_parent_waits_and_reports_the_child(
    pair: tuple[Queue, Queue],
) -> None:
    pq, cq = pair
    parent = pq.add("parent", {})
    runs: list[str] = []
    proc = _step_parent(cq, pq, {}, runs)
    await run_workers(
        [pq, cq],
        lambda: (
            cq.get_job_counts("failed")["failed"] == 2
            and pq.get_job_state(parent.id) == "waiting-children"
        ),
        processor=proc,
    )
    # BullMQ's documented default: the failed children stay pending dependencies
    counts = parent.get_dependencies_count()
    assert counts == {"processed": 0, "unprocessed": 2, "ignored": 0, "failed": 0}
    pending = parent.get_dependencies()["unprocessed"]
    assert {cq.get_job_state(k.rsplit(":", 1)[1]) for k in pending} == {"failed"}


async def test_case_b11_ignore_dependency_parent_proceeds(pair: tuple[Queue, Queue]) -> None:
    pq, cq = pair
    parent = pq.add("parent", {})
    runs: list[str] = []
    proc = _step_parent(cq, pq, {"ignore_dependency_on_failure": True}, runs)
    await run_workers([pq, cq], lambda: pq.get_job_state(parent.id) == "completed", processor=proc)
    assert parent.refresh().returnvalue == "parent done"
    assert len(parent.get_dependencies()["ignored"]) == 2


def test_case_b13_flows_reject_colons_up_front(flows: FlowProducer) -> None:
    tag = uuid.uuid4().hex[:8]
    bad_queue = {
        "name": "p",
        "queue_name": f"parent-{tag}",
        "children": [{"name": "c", "queue_name": f"parent-{tag}:child"}],
    }
    with pytest.raises(InvalidNameError, match="must not contain ':'"):
        flows.add(bad_queue)
    bad_id = {
        "name": "p",
        "queue_name": f"parent-{tag}",
        "children": [
            {"name": "c", "queue_name": f"child-{tag}", "opts": {"job_id": "custom:job:id:123"}}
        ],
    }
    with pytest.raises(InvalidNameError, match="must not contain ':'"):
        flows.add(bad_id)
    for job_id in ("a:b", "a:b:c", "a:b:c:d", "123"):
        with pytest.raises(InvalidNameError):
            flows.add({"name": "p", "queue_name": f"parent-{tag}", "opts": {"job_id": job_id}})
    assert flows.queue(f"parent-{tag}").client.keys(f"bull:*-{tag}*") == []
    # ids that follow the rule round-trip through get_flow
    tree = flows.add(
        {
            "name": "p",
            "queue_name": f"parent-{tag}",
            "children": [
                {"name": "c", "queue_name": f"child-{tag}", "opts": {"job_id": "custom-job-id-123"}}
            ],
        }
    )
    read = flows.get_flow(f"parent-{tag}", tree.job.id)
    assert read is not None
    assert [n.job.id for n in read.children] == ["custom-job-id-123"]
    assert read.children[0].job.queue is not None
    assert read.children[0].job.queue.name == f"child-{tag}"
