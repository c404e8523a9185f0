"""The short chaos soak (``make soak`` runs the full one): SIGKILL / SIGTERM / Redis restarts.

Re-runs cases B10 (worker termination loses the in-flight job) and B27 (work stranded after a
Redis restart) under load. ``BULLQ_SOAK_JOBS`` sets the jobs per run (default 10,000).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from reliability.soak import B27_DELAYED, cases, full_set, run

JOBS = int(os.environ.get("BULLQ_SOAK_JOBS", "10000"))
RUNS = {f"{c.signal.lower()}-{c.redis_restart}-{c.appendfsync}": c for c in full_set(JOBS, 2)}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("label", list(RUNS))
def test_soak_loses_nothing(label: str, tmp_path: Any) -> None:
    config = RUNS[label]
    result = run(config, logdir=tmp_path)
    fig = result["figures"]
    summary = f"{label}: {fig}"
    restarts = config.redis_restart != "none"
    assert fig["enqueued"] == config.jobs + (B27_DELAYED if restarts else 0), summary
    assert fig["lost"] == 0, summary
    assert fig["failed"] == 0, summary
    assert fig["completed"] == fig["enqueued"] == fig["effects_recorded"], summary
    assert fig["unexpected_worker_exits"] == [], summary
    assert fig["signals_sent"] >= 1, summary
    if config.signal == "TERM":
        assert fig["ran_more_than_once"] == 0, summary
        assert fig["sigterm_exits_not_0"] == [], summary
    else:
        # B10: a job runs again only if it was active on the worker at its SIGKILL (or when
        # Redis went down under it); B27: work resumed after the Redis restart.
        assert fig["ran_twice_outside_kills"] == 0, summary
        assert (
            fig["ran_more_than_once"] <= fig["active_at_kill"] + fig["active_at_redis_restart"]
        ), summary
        assert fig["first_completion_after_redis_restart_s"] is not None, summary
        assert fig["delayed_due_after_redis_restart"] >= B27_DELAYED, summary  # B27's job A
    assert cases([result])["B10"].startswith("pass"), summary
