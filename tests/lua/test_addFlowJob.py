"""addFlowJob-11.lua: one flow node; children before parents (post-order) in one MULTI.

Return codes pinned: the node id; -5 parent missing (parentLater unset); -7 a duplicate id
belongs to another existing parent.
"""

from __future__ import annotations

import json
from typing import Any

from django_bullq.core.calls import ADD_KEYS
from django_bullq.core.keys import QueueKeys
from tests.lua.helpers import NOW, LuaQueue, opts_json


def add_node(
    lq: LuaQueue,
    job_id: str,
    *,
    parent_key: str = "",
    parent: str = "",
    parent_later: bool = False,
    has_children: bool = False,
    delay: int = 0,
    priority: int = 0,
) -> Any:
    keys = [*(lq.keys[s] for s in ADD_KEYS), lq.keys["waiting-children"]]
    return lq.run(
        "addFlowJob",
        keys,
        [
            lq.prefix,
            job_id,
            "node",
            "{}",
            opts_json(),
            NOW,
            delay,
            priority,
            "0",
            parent_key,
            parent,
            "1" if parent_later else "0",
            "1" if has_children else "0",
        ],
    )


def link(lq: LuaQueue, parent_id: str, **flags: bool) -> tuple[str, str]:
    return lq.keys.job(parent_id), json.dumps(
        {"id": parent_id, "queueKey": lq.keys.queue_key, **flags}
    )


def test_children_then_parent_parent_waits_for_children(lq: LuaQueue) -> None:
    pkey, pjson = link(lq, "p")
    assert add_node(lq, "c1", parent_key=pkey, parent=pjson, parent_later=True) == "c1"
    assert add_node(lq, "p", has_children=True) == "p"

    assert lq.zset("waiting-children") == [("p", float(NOW))]
    assert lq.lst("wait") == ["c1"]
    assert lq.members("p:dependencies") == {lq.keys.job("c1")}
    child = lq.job("c1")
    assert (child["parentKey"], json.loads(child["parent"])) == (pkey, json.loads(pjson))
    assert [e[1] for e in lq.events()] == ["added", "waiting", "added", "waiting-children"]


def test_parent_without_pending_children_is_enqueued(lq: LuaQueue) -> None:
    assert add_node(lq, "p", has_children=True, priority=2) == "p"
    assert lq.zset("waiting-children") == []
    assert [m for m, _ in lq.zset("prioritized")] == ["p"]


def test_missing_parent_is_minus_5(lq: LuaQueue) -> None:
    pkey, pjson = link(lq, "ghost")
    assert add_node(lq, "c", parent_key=pkey, parent=pjson) == -5
    assert lq.job("c") == {}


def test_duplicate_completed_child_counts_as_processed(lq: LuaQueue) -> None:
    lq.r.hset(
        lq.keys.job("c"), mapping={"name": "c", "data": "{}", "opts": "{}", "returnvalue": "42"}
    )
    lq.r.zadd(lq.keys["completed"], {"c": NOW})
    pkey, pjson = link(lq, "p")
    assert add_node(lq, "c", parent_key=pkey, parent=pjson, parent_later=True) == "c"
    assert add_node(lq, "p", has_children=True) == "p"
    assert lq.r.hgetall(pkey + ":processed") == {lq.keys.job("c"): "42"}
    assert lq.lst("wait") == ["p"]  # nothing pending: enqueued at once


def test_duplicate_of_another_live_parent_is_minus_7(lq: LuaQueue) -> None:
    other = QueueKeys(lq.keys.name).job("other")
    lq.r.hset(other, "name", "other")
    lq.r.hset(lq.keys.job("c"), mapping={"name": "c", "parentKey": other})
    pkey, pjson = link(lq, "p")
    assert add_node(lq, "c", parent_key=pkey, parent=pjson, parent_later=True) == -7
