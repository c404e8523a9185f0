"""The import paths README.md and docs/ give users keep working after the Django layer moved
into producer/, worker/, backends/ and live/ (issue 13): each old path is the same object."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import django_bullq
from django_bullq.core.errors import BullqError

#: (public path, where the code lives) for every name the docs tell users to import or name.
PATHS = [
    ("django_bullq.tasks.current_job", "django_bullq.worker.dispatch.current_job"),
    ("django_bullq.tasks.rate_limit", "django_bullq.worker.dispatch.rate_limit"),
    ("django_bullq.tasks.arate_limit", "django_bullq.worker.dispatch.arate_limit"),
    ("django_bullq.tasks.process_job", "django_bullq.worker.dispatch.process_job"),
    ("django_bullq.tasks.registry", "django_bullq.producer.registry.registry"),
    ("django_bullq.tasks.TaskRegistry", "django_bullq.producer.registry.TaskRegistry"),
    ("django_bullq.tasks.TaskRegistryError", "django_bullq.exceptions.TaskRegistryError"),
    ("django_bullq.tasks.task", "django_bullq.producer.task.task"),
    ("django_bullq.tasks.Task", "django_bullq.producer.task.Task"),
    ("django_bullq.tasks.PendingEnqueue", "django_bullq.producer.task.PendingEnqueue"),
    ("django_bullq.task", "django_bullq.producer.task.task"),
    ("django_bullq.flows.add_flow", "django_bullq.producer.flows.add_flow"),
    ("django_bullq.flows.aadd_flow", "django_bullq.producer.flows.aadd_flow"),
    ("django_bullq.flows.add_chain", "django_bullq.producer.flows.add_chain"),
    ("django_bullq.flows.flow_producer", "django_bullq.producer.flows.flow_producer"),
    ("django_bullq.transactional.Pending", "django_bullq.producer.transaction.Pending"),
    ("django_bullq.consumers.default_authorizer", "django_bullq.live.consumers.default_authorizer"),
    ("django_bullq.runner.run_workers", "django_bullq.worker.group.run_workers"),
    ("django_bullq.runner.build_worker", "django_bullq.worker.group.build_worker"),
    ("django_bullq.conf.ConfigurationError", "django_bullq.exceptions.ConfigurationError"),
    ("django_bullq.devredis.DevRedisError", "django_bullq.exceptions.DevRedisError"),
    ("django_bullq.devredis.BadURLError", "django_bullq.exceptions.BadURLError"),
    ("django_bullq.core.capacity.CapacityError", "django_bullq.core.errors.CapacityError"),
    ("django_bullq.core.scripts.ScriptSourceError", "django_bullq.core.errors.ScriptSourceError"),
    (
        "django_bullq.core.connection.ConnectionConfigError",
        "django_bullq.core.errors.ConnectionConfigError",
    ),
    (
        "django_bullq.core.connection.RedisUnavailableError",
        "django_bullq.core.errors.RedisUnavailableError",
    ),
    ("django_bullq.backends.BullQBackend", "django_bullq.backends.BullQBackend"),
]


def resolve(path: str) -> object:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize(("public", "home"), PATHS)
def test_public_path_is_the_moved_object(public: str, home: str) -> None:
    assert resolve(public) is resolve(home)


@pytest.mark.parametrize("module", ["tasks", "flows", "transactional", "consumers", "runner"])
def test_re_export_modules_list_what_they_export(module: str) -> None:
    mod = importlib.import_module(f"django_bullq.{module}")
    assert mod.__all__ == sorted(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name).__module__.startswith(
            (
                "django_bullq.producer",
                "django_bullq.worker",
                "django_bullq.live",
                "django_bullq.exceptions",
            )
        )


def test_one_exception_tree() -> None:
    """Every exception class of the package is a BullqError, defined in core/errors.py or, for
    the Django layer, in exceptions.py (issue 13: one exception tree)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(django_bullq.__path__, "django_bullq."):
        if ".migrations" in info.name:
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            is_error = isinstance(value, type) and issubclass(value, BaseException)
            if is_error and value.__module__.startswith("django_bullq"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    assert "django_bullq.core.errors.BullqError" in found
    homes = {"django_bullq.core.errors", "django_bullq.exceptions"}
    assert sorted(path for path, cls in found.items() if cls.__module__ not in homes) == []
    assert sorted(path for path, cls in found.items() if not issubclass(cls, BullqError)) == []
