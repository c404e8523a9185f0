"""One measurement: start a library's adapter, read the server's counters around its run."""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django_bullq.core import redis_cost

from .scenarios import ROOT, Library


@dataclass(frozen=True, slots=True)
class Settings:
    """What every measurement of one bench run shares.

    Attributes:
        url: the private Redis. python / node: interpreters of the adapters.
        max_seconds: cap of one processing run, s (0 = none). timeout: s one child may take.
        cpu_iterations / io_ms / chunk / producers: the work and insert shapes.
    """

    url: str
    python: str
    node: str
    max_seconds: float = 10.0
    timeout: float = 300.0
    cpu_iterations: int = 1000
    io_ms: int = 10
    chunk: int = 1000
    producers: int = 10


@dataclass(slots=True)
class Measurement:
    """The outcome of one child run: a rate and its Redis cost, or why there is none.

    Attributes:
        jobs: jobs done. seconds: their span, s. round_trips: the client's requests, None
            when the adapter's counters do not see its client ("not measured", never 0).
        cost: :meth:`redis_cost.Cost.as_dict` of the run. na: reason the library cannot run it.
        error: what went wrong (the run then counts as missing).
        extra: other fields of the result line (``rss_mb``).
    """

    jobs: int = 0
    seconds: float = 0.0
    round_trips: int | None = 0
    cost: dict[str, Any] = field(default_factory=dict)
    na: str = ""
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.na or self.error) and self.jobs > 0 and self.seconds > 0

    @property
    def jobs_per_second(self) -> float:
        return self.jobs / self.seconds if self.ok else 0.0

    @property
    def round_trips_per_job(self) -> float | None:
        """Round trips per job; None when they were not measured."""
        if self.round_trips is None:
            return None
        return self.round_trips / self.jobs if self.jobs else 0.0


class ChildFailed(Exception):
    """The adapter exited, printed something unexpected, or took longer than the timeout."""


class Child:
    """An adapter process and a reader of its JSON lines (other stdout lines are ignored)."""

    def __init__(self, command: list[str], timeout: float, cwd: Path = ROOT) -> None:
        self.timeout = timeout
        # open for the child's life, closed by close()
        self.stderr: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(line)
        self.lines.put(None)

    def message(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=self.timeout)
        except queue.Empty:
            raise ChildFailed(f"no answer within {self.timeout:.0f} s") from None
        if line is None:
            self.proc.wait(5)
            raise ChildFailed(f"exited with {self.proc.returncode}: {self.stderr_tail()}")
        message: dict[str, Any] = json.loads(line)
        return message

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read()[-1500:].strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        self.stderr.close()


def spec_for(
    settings: Settings,
    queue_name: str,
    kind: str,
    jobs: int,
    concurrency: int = 1,
    work: str = "noop",
    *,
    remove_completed: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON spec an adapter gets (see benchmarks/adapters/common.py)."""
    return {
        "url": settings.url,
        "queue": queue_name,
        "kind": kind,
        "jobs": jobs,
        "concurrency": concurrency,
        "work": work,
        "cpu_iterations": settings.cpu_iterations,
        "io_ms": settings.io_ms,
        "chunk": settings.chunk,
        "producers": settings.producers,
        "max_seconds": settings.max_seconds if kind == "process" else 0,
        "remove_completed": remove_completed,
        **extra,
    }


def measure(library: Library, spec: dict[str, Any], settings: Settings, client: Any) -> Measurement:
    """Run ``library``'s adapter on ``spec`` once; the server's counters are read around it.

    Args:
        client: a sync redis-py client of the same server (reads INFO only).
    """
    command = library.command(spec, settings.python, settings.node)
    try:
        child = Child(command, settings.timeout, cwd=library.root)
    except OSError as exc:  # its interpreter is missing (a venv not built)
        return Measurement(error=f"{library.key}: cannot start {command[0]}: {exc}")
    try:
        first = child.message()
        if "na" in first:
            return Measurement(na=str(first["na"]))
        before = redis_cost.snapshot(client)
        child.go()
        result = child.message()
        after = redis_cost.snapshot(client)
    except ChildFailed as exc:
        return Measurement(error=f"{library.key}: {exc}")
    finally:
        child.close()
    jobs = int(result["jobs"])
    measurement = Measurement(
        jobs=jobs,
        seconds=float(result["seconds"]),
        round_trips=None if result["round_trips"] is None else int(result["round_trips"]),
        extra={k: v for k, v in result.items() if k not in ("jobs", "seconds", "round_trips")},
    )
    if jobs > 0:
        measurement.cost = redis_cost.cost(before, after, jobs).as_dict()
    return measurement
