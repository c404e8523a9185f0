"""factory-boy factories for jobs: addJob arguments and raw job hashes."""
# factory-boy ships no type information for its declarations:
# mypy: disable-error-code="attr-defined,name-defined,misc,no-untyped-call"

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import factory

from django_bullq.core.options import JobOptions
from django_bullq.core.serialization import dumps
from tests.lua.helpers import NOW, LuaQueue


@dataclass
class NewJob:
    """The arguments of one addJob call (besides the queue's keys and prefix)."""

    name: str
    data: str
    opts: str
    timestamp: int
    job_id: str = ""
    delay: int = 0
    priority: int = 0
    lifo: bool = False

    def add_to(self, lq: LuaQueue) -> Any:
        """Run addJob; returns the raw answer (the job id or a negative code)."""
        return lq.add(
            job_id=self.job_id,
            name=self.name,
            data=self.data,
            opts=self.opts,
            timestamp=self.timestamp,
            delay=self.delay,
            priority=self.priority,
            lifo=self.lifo,
        )


class NewJobFactory(factory.Factory[NewJob]):
    """A job to add; ``opts`` is JobOptions' stored JSON for the chosen delay/priority/lifo."""

    class Meta:
        model = NewJob

    name = factory.Sequence(lambda n: f"app.tasks.job_{n}")
    data = factory.Sequence(lambda n: dumps({"args": [n], "kwargs": {}}))
    timestamp = NOW
    job_id = ""
    delay = 0
    priority = 0
    lifo = False
    opts = factory.LazyAttribute(
        lambda o: dumps(
            JobOptions(job_id=o.job_id or None, priority=o.priority, lifo=o.lifo).to_stored(o.delay)
        )
    )


class JobHashFactory(factory.DictFactory):
    """A job hash as BullMQ writes it on add (§3.1), for seeding state structures directly."""

    name = factory.Sequence(lambda n: f"app.tasks.job_{n}")
    data = factory.Sequence(lambda n: json.dumps({"n": n}))
    opts = '{"attempts":0}'
    timestamp = str(NOW)
    delay = "0"
    priority = "0"


def seed_finished(
    lq: LuaQueue, target: str, finished_on: list[int], opts: list[str] | None = None
) -> list[str]:
    """Write finished jobs straight into ``target`` (completed/failed) with the given scores.

    Returns the ids, ``f0``, ``f1``, ... in the order given.
    """
    ids: list[str] = []
    for i, finished in enumerate(finished_on):
        job_id = f"f{i}"
        fields = JobHashFactory(finishedOn=str(finished), atm="1")
        if opts is not None:
            fields["opts"] = opts[i]
        lq.r.hset(lq.keys.job(job_id), mapping=fields)
        lq.r.zadd(lq.keys[target], {job_id: finished})
        ids.append(job_id)
    return ids
