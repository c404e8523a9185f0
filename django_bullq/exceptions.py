"""The errors of the Django layer, in one place (the engine's are in ``django_bullq.core.errors``).

Every one is a :class:`~django_bullq.core.errors.BullqError` (the tree: docs/api.md#errors).
The modules that raise
them re-export them under their old names (``django_bullq.conf.ConfigurationError``,
``django_bullq.tasks.TaskRegistryError``, ``django_bullq.devredis.DevRedisError``).
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from .core.errors import BullqError


class ConfigurationError(BullqError, ImproperlyConfigured):
    """``settings.BULLQ`` cannot be used as asked (unknown alias, wrong shape...)."""


class TaskRegistryError(BullqError, ValueError):
    """Two different functions claim one job name."""


class DevRedisError(BullqError):
    """A Redis could not be made available at the URL; the message says why and what to do."""


class BadURLError(DevRedisError):
    """The URL cannot name a server this module can check or start."""


class ProcessDiedError(BullqError, RuntimeError):
    """The pool process running a ``@task(process=True)`` call ended abruptly (an OOM kill, a
    segfault, ``os._exit``): the job's attempt fails with it and the pool is started afresh.
    Process tasks running in the same pool at that moment fail with it too (the pool ends
    them all) and are retried by their attempts."""


__all__ = [
    "BadURLError",
    "ConfigurationError",
    "DevRedisError",
    "ProcessDiedError",
    "TaskRegistryError",
]
