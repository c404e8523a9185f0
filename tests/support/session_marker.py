"""pytest plugin: write ``$BULLQ_PYTEST_DONE`` when the session finishes (pytest_pass)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Leave the marker behind with the exit status: only a session that ended writes it."""
    marker = os.environ.get("BULLQ_PYTEST_DONE")
    if marker:
        Path(marker).parent.mkdir(parents=True, exist_ok=True)
        Path(marker).write_text(f"{exitstatus}\n")
