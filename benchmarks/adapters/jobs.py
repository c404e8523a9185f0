"""Job functions that thread-based peers import by dotted path (RQ stores ``module.function``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks.adapters.common import Tally

#: Set by the adapter before its worker starts.
TALLY: Tally | None = None
BODY: Callable[[], Any] = lambda: None  # noqa: E731


def run_job(i: int = 0) -> None:
    """One benchmark job: count its start, do the scenario's work, count its end."""
    assert TALLY is not None, "the adapter sets jobs.TALLY before working"
    TALLY.started()
    BODY()
    TALLY.done()
