"""Case B32: CROSSSLOT on Redis Cluster. Every feature on a real 3-master cluster.

The queues use the prefix ``{bullq}``: every key of every queue hashes to the slot of ``bullq``,
so scripts, pipelines, MULTI/EXEC flows and blocking reads never span slots. After each test
every key in the cluster is audited: none may lie outside a hash-tagged prefix (a script that
built a key outside the prefix would leave one behind, wherever its slot landed).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis

from django_bullq import FlowProducer, Job, JobOptions, Queue
from django_bullq.core.connection import ConnectionConfigError
from django_bullq.core.errors import CrossSlotError
from django_bullq.core.events import QueueEvents
from django_bullq.core.names import has_hash_tag, hash_slot
from tests.support.redis_cluster import RedisCluster
from tests.support.workerkit import make_worker, run_all_until

PREFIX = "{bullq}"


def cluster_keys(cluster: RedisCluster) -> dict[str, list[str]]:
    """Every key on every master, by node port."""
    found: dict[str, list[str]] = {}
    for node in cluster.nodes:
        client = node.client()
        try:
            found[str(node.port)] = list(client.scan_iter(count=1000))
        finally:
            client.close()
    return found


@pytest.fixture
def cluster(redis_cluster: RedisCluster) -> Any:
    """The session cluster; after the test, audit that every key sits in a tagged slot."""
    yield redis_cluster
    for port, keys in cluster_keys(redis_cluster).items():
        stray = [k for k in keys if not (k.startswith("{") and has_hash_tag(k))]
        assert not stray, f"keys outside a hash-tagged prefix on node {port}: {stray[:10]}"


def names(n: int) -> list[str]:
    return [f"c-{uuid.uuid4().hex[:8]}" for _ in range(n)]


def test_case_b32_every_key_of_a_queue_is_in_one_slot(cluster: RedisCluster) -> None:
    queue = Queue(names(1)[0], cluster.url, prefix=PREFIX)
    queue.add("a", {"x": 1})
    queue.add("b", {}, delay=60_000, deduplication={"id": "d"})
    queue.add("c", {}, priority=3)
    slot = hash_slot(PREFIX)
    mine = [
        k
        for keys in cluster_keys(cluster).values()
        for k in keys
        if k.startswith(queue.keys.key_prefix)
    ]
    assert len(mine) >= 8  # id, meta, events, marker, wait, delayed, prioritized, pc, jobs, de
    assert {hash_slot(k) for k in mine} == {slot}
    queue.obliterate(force=True)
    queue.close()


async def test_case_b32_queue_features_end_to_end_on_cluster(cluster: RedisCluster) -> None:
    """Add, delayed, priorities, retries, dedup, bulk, schedulers, flows, events, rate limit."""
    qa, qb, qc = (Queue(n, cluster.url, prefix=PREFIX) for n in names(3))
    order: list[str] = []
    attempts: dict[str, int] = {}

    def process(job: Job) -> Any:
        order.append(job.name)
        if job.name == "flaky" and job.attempts_made < 2:
            raise RuntimeError(f"flaky attempt {job.attempts_made + 1}")
        attempts[job.name] = job.attempts_made
        return {"name": job.name, "children": job.get_children_values()}

    prio_low = qa.add("prio-5", {}, priority=5)
    prio_high = qa.add("prio-1", {}, priority=1)
    plain = qa.add("plain", {"n": 1})
    delayed = qa.add("delayed", {}, delay=300)
    flaky = qa.add("flaky", {}, attempts=3, backoff=50)
    first = qa.add("dedup", {"v": 1}, deduplication={"id": "once"})
    again = qa.add("dedup", {"v": 2}, deduplication={"id": "once"})
    assert again.id == first.id and qa.get_deduplication_job_id("once") == first.id
    bulk = qa.add_bulk([("bulk", 1), ("bulk", 2, {"priority": 2})])
    abulk = await qa.aadd_bulk([("abulk", 3)])
    qa.upsert_job_scheduler("tick", {"every": 150}, {"name": "tick"}, limit=3)
    flows = FlowProducer(cluster.url, prefix=PREFIX)
    tree = flows.add(
        {
            "name": "parent",
            "queue_name": qa.name,
            "children": [
                {"name": "child-b", "queue_name": qb.name, "data": {"i": 1}},
                {"name": "child-a", "queue_name": qa.name, "data": {"i": 2}},
            ],
        }
    )
    atree = await flows.aadd(
        {
            "name": "aparent",
            "queue_name": qb.name,
            "children": [{"name": "achild", "queue_name": qa.name}],
        }
    )
    limited = [qc.add("limited", {"i": i}) for i in range(5)]
    reader = QueueEvents(qa, last_id="0", block_ms=10)

    ids = [j.id for j in (plain, delayed, flaky, first, prio_low, prio_high, *bulk, *abulk)]
    roots = [(qa, tree.job.id), (qb, atree.job.id)]

    def all_done() -> bool:
        return (
            all(qa.get_job_state(i) == "completed" for i in ids)
            and all(q.get_job_state(i) == "completed" for q, i in roots)
            and order.count("tick") >= 3
            and qc.get_job_counts("completed")["completed"] == 5
        )

    workers = [
        make_worker(qa, process),
        make_worker(qb, process),
        make_worker(qc, process, limiter_max=2, limiter_duration=300),
    ]
    await run_all_until(workers, all_done, timeout=30)

    assert order.index("prio-1") < order.index("prio-5")
    assert order.count("flaky") == 3 and attempts["flaky"] == 2
    assert order.count("dedup") == 1
    assert order.count("tick") == 3  # the scheduler's limit holds across slots' nodes
    assert qa.get_job(tree.job.id).returnvalue["children"] == {
        f"{qb.keys.key_prefix}{tree.children[0].job.id}": {"name": "child-b", "children": {}},
        f"{qa.keys.key_prefix}{tree.children[1].job.id}": {"name": "child-a", "children": {}},
    }
    processed = sorted(qc.get_job(j.id).processed_on for j in limited)
    assert processed[-1] - processed[0] >= 500  # 5 jobs at 2 per 300 ms: three windows
    completed = {e.job_id for e in reader.read() if e.event == "completed"}
    assert set(ids) <= completed
    for queue in (qa, qb, qc):
        queue.obliterate(force=True)
        queue.close()
    flows.close()


async def test_case_b32_remote_cancel_uses_sharded_pubsub(cluster: RedisCluster) -> None:
    queue = Queue(names(1)[0], cluster.url, prefix=PREFIX)
    started = asyncio.Event()

    async def slow(job: Job) -> None:
        started.set()
        await asyncio.sleep(30)

    job = queue.add("slow", {})
    worker = make_worker(queue, slow)
    task = asyncio.create_task(worker.arun())
    try:
        await asyncio.wait_for(started.wait(), 10)
        for _ in range(250):  # the worker subscribes in the background
            if queue.cancel_job(job.id, "from afar"):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("no worker ever received the cancel message")
        for _ in range(250):
            if queue.get_job_state(job.id) == "failed":
                break
            await asyncio.sleep(0.02)
    finally:
        worker.close()
        await asyncio.wait_for(task, 15)
    assert queue.get_job(job.id).failed_reason == "cancelled: from afar"
    assert await queue.acancel_job(job.id) == 0  # nobody listens any more
    queue.obliterate(force=True)
    queue.close()


def test_case_b32_flow_across_slots_fails_at_add_with_a_clear_error(cluster: RedisCluster) -> None:
    """Different hash tags = different slots: a parent link between them is refused up front."""
    name_a, name_b = names(2)
    qa = Queue(name_a, cluster.url, prefix="{slot-a}")
    qb = Queue(name_b, cluster.url, prefix="{slot-b}")
    assert hash_slot(qa.keys.queue_key) != hash_slot(qb.keys.queue_key)
    parent = qa.add("parent", {})
    link = {"id": parent.id, "queue": qa.keys.queue_key}
    with pytest.raises(CrossSlotError, match="share one hash tag"):
        qb.add("child", {}, parent=link)
    with pytest.raises(CrossSlotError, match="slot"):
        FlowProducer(cluster.url, prefix="{slot-b}").add(
            {"name": "root", "queue_name": name_b, "opts": JobOptions(parent=link)}
        )
    assert qb.get_job_counts() == dict.fromkeys(qb.get_job_counts(), 0)
    # The same tag with different text around it is one slot: that link works.
    qc = Queue(name_b, cluster.url, prefix="x{slot-a}")
    child = qc.add("child", {}, parent=link)
    assert qc.get_job(child.id).parent_key == f"{qa.keys.queue_key}:{parent.id}"
    for queue in (qa, qb, qc):
        queue.obliterate(force=True)
        queue.close()


@pytest.mark.parametrize("prefix", ["bull", "{}bull", "bull}{"])
def test_case_b32_prefix_without_a_usable_hash_tag_is_refused(prefix: str) -> None:
    with pytest.raises(ConnectionConfigError, match="hash tag"):
        Queue("q", "redis+cluster://127.0.0.1:7000", prefix=prefix)


def test_case_b32_a_plain_cluster_client_is_recognised(cluster: RedisCluster) -> None:
    client = redis.cluster.RedisCluster.from_url(cluster.url.replace("redis+cluster", "redis"))
    with pytest.raises(ConnectionConfigError, match="hash tag"):
        Queue("q", client)
    queue = Queue(names(1)[0], client, prefix=PREFIX)
    assert queue.is_cluster and queue.add("x", {}).id == "1"
    queue.obliterate(force=True)
    client.close()


def test_case_b32_the_admin_filter_walks_a_queue_on_cluster(cluster: RedisCluster) -> None:
    """The filter's read script (one call per chunk of ids) stays in the queue's slot."""
    from django_bullq.admin import scan
    from django_bullq.admin.search import JobFilter

    queue = Queue(names(1)[0], cluster.url, prefix=PREFIX)
    jobs = queue.add_bulk([("t", {"user": {"id": n % 5}}) for n in range(2500)])
    walked = scan.walk(queue, "waiting", JobFilter(path=("user", "id"), value=3), want=1000)
    assert [j.id for j in walked.jobs] == [
        j.id for j in reversed(jobs) if j.data["user"]["id"] == 3
    ]
    assert walked.scanned == 2500 and walked.cursor is None
    queue.obliterate(force=True)
    queue.close()
