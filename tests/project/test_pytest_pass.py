"""tests/support/pytest_pass.py, the runner of ``make test``: it says "cut short" only when it is
true (issue 12 item 7: a failing run used to print it too)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_pass(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_sample.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BULLQ_PYTEST_DONE", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.pytest_pass",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:django",
            "-c",
            str(tmp_path / "pytest.ini"),
            str(tmp_path / "test_sample.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("def test_ok():\n    pass\n", 0),
        ("def test_fails():\n    assert False\n", 1),
    ],
)
def test_a_finished_session_keeps_its_status_and_says_nothing_more(
    tmp_path: Path, body: str, status: int
) -> None:
    done = run_pass(tmp_path, body)
    assert done.returncode == status, done.stdout + done.stderr
    assert "before the end of its session" not in done.stdout + done.stderr


def test_a_session_cut_short_fails_and_says_so(tmp_path: Path) -> None:
    done = run_pass(tmp_path, "import os\n\ndef test_exits():\n    os._exit(0)\n")
    assert done.returncode != 0
    assert "pytest exited (status 0) before the end of its session" in done.stderr
