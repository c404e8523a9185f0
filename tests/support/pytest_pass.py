"""Run one pytest pass for ``make test`` and tell a cut-short run from a finished one.

``python -m tests.support.pytest_pass [pytest arguments]`` runs pytest in a child process with the
:mod:`tests.support.session_marker` plugin, which writes a marker file when the session finishes. A
run whose process ended without it (``os._exit`` from a test, a killed interpreter) would
otherwise look like its exit status, 0 included; it is reported as cut short and fails. A run
that finished keeps pytest's own exit status and no extra message.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

CUT_SHORT = "pytest exited (status {status}) before the end of its session"


def run(pytest_args: list[str]) -> int:
    """Run pytest with ``pytest_args``; returns its exit status, or non-zero if cut short."""
    with tempfile.TemporaryDirectory(prefix="bullq-pytest-") as tmp:
        marker = Path(tmp) / "session-finished"  # absolute: a test's chdir cannot move it
        env = {**os.environ, "BULLQ_PYTEST_DONE": str(marker)}
        status = subprocess.call(
            [sys.executable, "-m", "pytest", "-p", "tests.support.session_marker", *pytest_args],
            env=env,
        )
        if not marker.exists():
            print(CUT_SHORT.format(status=status), file=sys.stderr, flush=True)
            return status or 1
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
