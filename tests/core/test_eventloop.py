"""The worker's event loop: uvloop when installed ("auto"), asyncio's on request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvloop

from django_bullq import Queue
from django_bullq.core.eventloop import loop_factory, run
from tests.support.workerkit import make_worker


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_auto_and_uvloop_use_uvloop_asyncio_does_not() -> None:
    assert run(_loop_type(), "auto") is uvloop.Loop
    assert run(_loop_type(), "uvloop") is uvloop.Loop
    assert run(_loop_type(), "asyncio") is not uvloop.Loop
    assert loop_factory("asyncio") is None


def test_an_unknown_choice_fails_without_leaking_the_coroutine() -> None:
    main = _loop_type()
    with pytest.raises(ValueError, match="one of auto, asyncio, uvloop"):
        run(main, "trio")
    assert main.cr_frame is None  # closed: no "never awaited" warning


def test_uvloop_required_but_missing_says_how_to_install_it(monkeypatch: Any) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop -> ImportError
    assert loop_factory("auto") is None
    with pytest.raises(ImportError, match=r"django-bullq\[uvloop\]"):
        loop_factory("uvloop")


@pytest.mark.parametrize("choice, expected_uvloop", [("auto", True), ("asyncio", False)])
def test_a_worker_runs_its_jobs_on_the_chosen_loop(
    queue: Queue, choice: str, *, expected_uvloop: bool
) -> None:
    seen: list[bool] = []

    async def process(job: Any) -> int:
        seen.append(isinstance(asyncio.get_running_loop(), uvloop.Loop))
        return 1

    for _ in range(3):
        queue.add("t", {})
    worker = make_worker(queue, process, event_loop=choice)
    worker.run(burst=True, handle_signals=False)
    assert seen == [expected_uvloop] * 3
    assert queue.get_job_counts("completed")["completed"] == 3
