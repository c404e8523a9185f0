"""moveToFinished-13.lua ARGV[17] (includes/collectMetrics.lua): per-minute metrics, §5.11.

Minute boundaries of the ms clock count (as BullMQ, checked against Node 6.7.0): a job finished
in a later minute than ``prevTS`` closes the earlier minute with ``count before - prevCount``
and adds one 0 per further empty minute, capped at maxDataPoints.
"""

from __future__ import annotations

from typing import Any

from tests.lua.helpers import NOW, LuaQueue

MINUTE = 60_000
T0 = NOW - NOW % MINUTE + 1000  # 1 s into a minute


def finish(lq: LuaQueue, now: int, max_points: Any, target: str = "completed") -> None:
    job_id = lq.add_active()
    args = [
        lq.prefix,
        job_id,
        now,
        target,
        '"ok"',
        "worker-a:1",
        -1,
        0,
        1000,
        "0",
        30_000,
        0,
        0,
        "",
        0,
        "",
    ]
    if max_points is not None:
        args.append(max_points)
    assert lq.run("moveToFinished", lq.finish_keys(job_id, target), args) == 0


def metrics(lq: LuaQueue, target: str = "completed") -> tuple[dict[str, str], list[str]]:
    key = lq.keys[f"metrics:{target}"]
    return dict(lq.r.hgetall(key)), [str(x) for x in lq.r.lrange(key + ":data", 0, -1)]


def test_per_minute_points(lq: LuaQueue) -> None:
    finish(lq, T0, 3)
    assert metrics(lq) == ({"count": "1", "prevTS": str(T0), "prevCount": "0"}, [])
    finish(lq, T0 + 30_000, 3)  # same minute
    assert metrics(lq) == ({"count": "2", "prevTS": str(T0), "prevCount": "0"}, [])
    finish(lq, T0 + MINUTE, 3)  # next minute: the closed minute had 2 jobs
    t2 = T0 + MINUTE
    assert metrics(lq) == ({"count": "3", "prevTS": str(t2), "prevCount": "2"}, ["2"])
    finish(lq, t2 + 3 * MINUTE, 3)  # 1 job, then 2 empty minutes; capped at 3 points
    assert metrics(lq) == (
        {"count": "4", "prevTS": str(t2 + 3 * MINUTE), "prevCount": "3"},
        ["0", "0", "1"],
    )


def test_boundary_not_elapsed_time(lq: LuaQueue) -> None:
    start = T0 - 1001  # last ms of the previous minute
    finish(lq, start, 5)
    finish(lq, start + 2, 5)  # 2 ms later, but in a new minute
    assert metrics(lq)[1] == ["1"]


def test_failed_target_and_off_switch(lq: LuaQueue) -> None:
    finish(lq, T0, 5, target="failed")
    assert metrics(lq, "failed")[0]["count"] == "1"
    finish(lq, T0, "")
    finish(lq, T0, 0)
    finish(lq, T0, None)  # callers that pass 16 ARGVs
    assert lq.exists("metrics:completed") == 0
