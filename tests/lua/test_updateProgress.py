"""updateProgress-3.lua: store progress JSON and emit `progress`.

Return codes pinned: 0; -1 missing job.
"""

from __future__ import annotations

import pytest

from tests.lua.helpers import LuaQueue


def progress(lq: LuaQueue, job_id: str, value: str) -> int:
    return int(
        lq.run(
            "updateProgress",
            [lq.keys.job(job_id), lq.keys["events"], lq.keys["meta"]],
            [job_id, value],
        )
    )


PROGRESS_VALUES = ["42", '{"step":2,"of":5}', '"\\u00e9t\\u00e9 \u05e9\u05dc\u05d5\u05dd"', "null"]


@pytest.mark.parametrize("value", PROGRESS_VALUES)
def test_progress_is_stored_and_emitted(lq: LuaQueue, value: str) -> None:
    lq.add()
    lq.clear_events()
    assert progress(lq, "1", value) == 0
    assert lq.job("1")["progress"] == value
    assert lq.events() == [("event", "progress", "jobId", "1", "data", value)]


def test_missing_job_returns_minus_1(lq: LuaQueue) -> None:
    assert progress(lq, "ghost", "1") == -1
    assert lq.events() == []
    assert lq.r.exists(lq.keys.job("ghost")) == 0
