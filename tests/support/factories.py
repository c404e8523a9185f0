"""factory-boy factories for jobs added through a core Queue."""

from __future__ import annotations

from typing import Any

import factory

from django_bullq import Job, Queue


class JobSpec:
    """What to add: a name, JSON data and JobOptions fields."""

    def __init__(self, name: str, data: Any, options: dict[str, Any]) -> None:
        self.name = name
        self.data = data
        self.options = options

    def add(self, queue: Queue) -> Job:
        return queue.add(self.name, self.data, **self.options)


class JobSpecFactory(factory.Factory):
    class Meta:
        model = JobSpec

    name = factory.Sequence(lambda n: f"job-{n}")
    data = factory.Sequence(lambda n: {"n": n, "text": f"item {n}"})
    options = factory.LazyFunction(dict)


def add_jobs(queue: Queue, count: int, **options: Any) -> list[Job]:
    """Add ``count`` jobs built by :class:`JobSpecFactory` in one round trip."""
    specs = JobSpecFactory.build_batch(count, options=options)
    return queue.add_bulk([(s.name, s.data, s.options) for s in specs])
