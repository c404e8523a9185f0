"""The one settings object over ``settings.BULLQ``: defaults, cached merge, connections and queues.

Only this module reads ``settings.BULLQ``. Every key, its type, default and unit is listed in
:data:`DEFAULTS` and documented in ``docs/configuration.md``; ``checks.py`` validates the shape.
The merged view and the connection / queue caches are cleared on Django's ``setting_changed``
signal, so ``override_settings(BULLQ=...)`` works in tests.
"""

from __future__ import annotations

import threading
from dataclasses import fields
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .core.connection import Connection
from .core.options import JobOptions
from .core.queue import Queue
from .core.serialization import DEFAULT_MAX_PAYLOAD_BYTES
from .core.worker import WorkerOptions
from .exceptions import ConfigurationError  # re-exported: its documented path

#: Every ``BULLQ`` key with its default. Units: ms for durations stored in Redis (BullMQ's
#: unit), s for the worker's own waits (drain delay, grace period).
DEFAULTS: dict[str, Any] = {
    # dict: alias -> {"URL": str, "OPTIONS": dict of client kwargs, and optionally
    # "CLIENT_CLASS" / "ASYNC_CLIENT_CLASS" (dotted paths of the sync / asyncio client classes,
    # default redis-py's; "valkey.Valkey" for valkey-py) or "CLIENT_FACTORY" (dotted path of
    # f(url, options, kind) -> client, kind "sync" / "async" / "blocking")}. A plain URL string
    # is accepted for {"URL": url}. URL schemes: redis, rediss, unix, redis+sentinel,
    # redis+cluster. Given CONNECTIONS replace this default as a whole.
    "CONNECTIONS": {"default": {"URL": "redis://127.0.0.1:6379/0", "OPTIONS": {}}},
    # str: queue used by tasks without queue=... and by `runworker` without arguments.
    "DEFAULT_QUEUE": "default",
    # str: Redis key prefix (BullMQ's `prefix`); keys are <PREFIX>:<queue>:<suffix>.
    "PREFIX": "bull",
    # int bytes: largest job data (its JSON) that enqueue accepts and a worker runs; 0 = none.
    "MAX_PAYLOAD_BYTES": DEFAULT_MAX_PAYLOAD_BYTES,
    # dict: queue name -> {"CONNECTION": alias (default "default"), "DEFAULT_JOB_OPTIONS":
    # {JobOptions field: value} (e.g. {"attempts": 3, "backoff": 1000}), "PREFIX": str}.
    # Queues not listed use the "default" connection, PREFIX and no default job options.
    "QUEUES": {},
    # dict: defaults of `runworker` (merged key by key with the user's WORKER dict).
    "WORKER": {
        "CONCURRENCY": 1,  # int: jobs run at once per queue
        "LOCK_DURATION": 30_000,  # int ms: lock TTL (BullMQ lockDuration), renewed every half
        "STALLED_INTERVAL": 30_000,  # int ms: between stalled-job checks (stalledInterval)
        "MAX_STALLED_COUNT": 1,  # int: stalls allowed before a job fails (maxStalledCount)
        "DRAIN_DELAY": 5.0,  # float s: block on the marker when the queue is empty (drainDelay)
        "GRACE_PERIOD": 30.0,  # float s: active jobs may finish after SIGTERM/SIGINT
        "MAINTENANCE_INTERVAL": 30_000,  # int ms: retention sweeps of completed/failed, 0 = off
        "REMOVE_ON_COMPLETE": None,  # bool | int | {"count", "age" (s), "limit"} | None
        "REMOVE_ON_FAIL": None,  # same shape as REMOVE_ON_COMPLETE
        "LIMITER_MAX": 0,  # int: rate limit, jobs per LIMITER_DURATION per queue; 0 = none
        "LIMITER_DURATION": 0,  # int ms: rate-limit window (limiter.duration), > 0 with a max
        "METRICS_MAX_DATA_POINTS": 0,  # int: per-minute metrics points kept, 0 = off
        "RECORD_METRICS": True,  # bool: django_bullq's 72 h job metrics (docs/metrics.md)
        "EVENT_LOOP": "auto",  # str: "auto" (uvloop when installed), "uvloop" or "asyncio"
    },
    # dict: scheduler id -> {"queue", "task" (registered task name) or "name" (job name),
    # "every" (int ms) or "cron" (+ "tz"), "args", "kwargs", "data", "options", "limit",
    # "start_date" / "end_date" (ms)};
    # upserted when `runworker` starts (docs/schedulers.md).
    "SCHEDULERS": {},
    # str | None: dotted path to f(user, queue_name, job_id | None) -> bool deciding who may
    # open the events WebSockets; None = active staff with django_bullq.view_bullqqueue
    # (docs/events.md).
    "EVENTS_AUTHORIZER": None,
    # dict: the transactional outbox (docs/configuration.md#the-transactional-outbox), merged
    # key by key with the user's OUTBOX dict.
    "OUTBOX": {
        "ENABLED": False,  # bool: on-commit enqueues inside atomic() write an outbox row
        "DATABASES": ["default"],  # list of database aliases whose outbox `runworker` relays
        "POLL_INTERVAL": 1.0,  # float s: between relay passes of `runworker`
        "BATCH_SIZE": 100,  # int: rows moved to Redis per relay pass and database
    },
    # bool: OpenTelemetry traces and metrics of every queue and worker of the process, on the
    # global tracer and meter providers (docs/observability.md); needs opentelemetry-api.
    "TELEMETRY": False,
    # dict: the job index of finished jobs (docs/search.md), merged key by key.
    "JOB_INDEX": {
        "ENABLED": False,  # bool: runworker records completed/failed jobs; the admin searches it
        "DATABASE": "default",  # str: database alias of the JobRecord rows
        "RETENTION_S": 30 * 24 * 3600,  # int s: rows older (by finish time) are deleted; 0 = keep
        "POLL_INTERVAL": 1.0,  # float s: between recorder passes
        "BATCH_SIZE": 1000,  # int: jobs read from Redis and written per batch
        "MAX_DATA_BYTES": 65_536,  # int bytes: larger data JSON is kept as text only (cut)
        "MAX_TEXT_CHARS": 4096,  # int: characters of the searchable text kept per job
    },
    # dict: the Prometheus metrics view and `manage.py bullq metrics` (docs/observability.md),
    # merged key by key.
    "PROMETHEUS": {
        "TOKEN": None,  # str | None: a scraper sending `Authorization: Bearer <TOKEN>` may read
        "PERMISSION": "django_bullq.view_bullqqueue",  # str | None: a logged-in user with it may
        "MAX_TASKS": 20,  # int: job names per queue with a `task` label; the rest "(other names)"
    },
}

#: ``BULLQ["WORKER"]`` key -> :class:`~django_bullq.core.worker.WorkerOptions` field.
WORKER_FIELDS: dict[str, str] = {
    "CONCURRENCY": "concurrency",
    "LOCK_DURATION": "lock_duration",
    "STALLED_INTERVAL": "stalled_interval",
    "MAX_STALLED_COUNT": "max_stalled_count",
    "DRAIN_DELAY": "drain_delay",
    "GRACE_PERIOD": "grace_period_s",
    "MAINTENANCE_INTERVAL": "maintenance_interval_ms",
    "REMOVE_ON_COMPLETE": "remove_on_complete",
    "REMOVE_ON_FAIL": "remove_on_fail",
    "LIMITER_MAX": "limiter_max",
    "LIMITER_DURATION": "limiter_duration",
    "METRICS_MAX_DATA_POINTS": "metrics_max_data_points",
    "RECORD_METRICS": "record_metrics",
    "EVENT_LOOP": "event_loop",
}

#: Keys allowed in one ``BULLQ["QUEUES"][name]`` entry.
QUEUE_KEYS = ("CONNECTION", "DEFAULT_JOB_OPTIONS", "PREFIX")
#: Keys allowed in one ``BULLQ["CONNECTIONS"][alias]`` entry.
CONNECTION_KEYS = ("URL", "OPTIONS", "CLIENT_CLASS", "ASYNC_CLIENT_CLASS", "CLIENT_FACTORY")
#: The keys of a ``CONNECTIONS`` entry naming a class or a factory (a dotted path or the object).
CLIENT_KEYS = ("CLIENT_CLASS", "ASYNC_CLIENT_CLASS", "CLIENT_FACTORY")
#: Field names allowed in ``DEFAULT_JOB_OPTIONS`` (those of :class:`JobOptions`).
JOB_OPTION_FIELDS = tuple(f.name for f in fields(JobOptions))


_lock = threading.RLock()
_config: dict[str, Any] | None = None
_connections: dict[str, Connection] = {}
_queues: dict[str, Queue] = {}


def user_config() -> Any:
    """The raw ``settings.BULLQ`` value (``{}`` when unset), for the system checks."""
    return getattr(settings, "BULLQ", {})


def normalize_connection(alias: str, value: Any) -> dict[str, Any]:
    """One ``CONNECTIONS`` entry as ``{"URL": str, "OPTIONS": dict}``, with the
    :data:`CLIENT_KEYS` it sets (as given: dotted paths are imported by
    :func:`get_connection`).

    Raises:
        ConfigurationError: the entry is neither a URL string nor a dict with a string URL.
    """
    if isinstance(value, str):
        return {"URL": value, "OPTIONS": {}}
    if isinstance(value, dict) and isinstance(value.get("URL"), str):
        options = value.get("OPTIONS") or {}
        if not isinstance(options, dict):
            raise ConfigurationError(f"BULLQ['CONNECTIONS'][{alias!r}]['OPTIONS'] must be a dict")
        clients = {key: value[key] for key in CLIENT_KEYS if value.get(key) is not None}
        return {"URL": value["URL"], "OPTIONS": dict(options), **clients}
    raise ConfigurationError(
        f"BULLQ['CONNECTIONS'][{alias!r}] must be a URL string or {{'URL': str, 'OPTIONS': dict}}"
    )


def get_config() -> dict[str, Any]:
    """``settings.BULLQ`` merged over :data:`DEFAULTS` (cached until a setting changes).

    Returns:
        A dict with every key of :data:`DEFAULTS`; ``CONNECTIONS`` entries normalised to
        ``{"URL", "OPTIONS"}``; ``WORKER`` merged key by key.

    Raises:
        ConfigurationError: ``BULLQ`` or one of its dict-valued keys is not a dict.
    """
    global _config
    with _lock:
        if _config is None:
            _config = _merge(user_config())
        return _config


def _merge(user: Any) -> dict[str, Any]:
    if not isinstance(user, dict):
        raise ConfigurationError("settings.BULLQ must be a dict")
    merged = {**DEFAULTS, **user}
    for key in ("CONNECTIONS", "QUEUES", "WORKER", "OUTBOX", "JOB_INDEX", "PROMETHEUS"):
        if not isinstance(merged[key], dict):
            raise ConfigurationError(f"BULLQ[{key!r}] must be a dict")
    merged["CONNECTIONS"] = {
        alias: normalize_connection(alias, value) for alias, value in merged["CONNECTIONS"].items()
    }
    merged["WORKER"] = {**DEFAULTS["WORKER"], **merged["WORKER"]}
    merged["OUTBOX"] = {**DEFAULTS["OUTBOX"], **merged["OUTBOX"]}
    merged["JOB_INDEX"] = {**DEFAULTS["JOB_INDEX"], **merged["JOB_INDEX"]}
    merged["PROMETHEUS"] = {**DEFAULTS["PROMETHEUS"], **merged["PROMETHEUS"]}
    return merged


class BullqSettings:
    """Attribute access to the merged settings: ``bullq_settings.PREFIX``, ``.QUEUES``...

    Raises:
        AttributeError: a name that is not a key of :data:`DEFAULTS`.
    """

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"BULLQ has no setting {name!r}")
        return get_config()[name]


#: The settings object (module-level singleton).
bullq_settings = BullqSettings()


def get_connection(alias: str = "default") -> Connection:
    """The core :class:`Connection` of ``BULLQ["CONNECTIONS"][alias]`` (one per alias, cached).

    Raises:
        ConfigurationError: unknown alias, or an unusable URL.
    """
    with _lock:
        conn = _connections.get(alias)
        if conn is None:
            entry = get_config()["CONNECTIONS"].get(alias)
            if entry is None:
                raise ConfigurationError(
                    f"BULLQ['CONNECTIONS'] has no alias {alias!r} "
                    f"(known: {', '.join(sorted(get_config()['CONNECTIONS'])) or 'none'})"
                )
            try:
                conn = Connection(
                    url=entry["URL"],
                    options=dict(entry["OPTIONS"]),
                    client_class=client_object(alias, entry, "CLIENT_CLASS"),
                    async_client_class=client_object(alias, entry, "ASYNC_CLIENT_CLASS"),
                    client_factory=client_object(alias, entry, "CLIENT_FACTORY"),
                )
            except ValueError as exc:
                raise ConfigurationError(f"BULLQ['CONNECTIONS'][{alias!r}]: {exc}") from exc
            _connections[alias] = conn
        return conn


def client_object(alias: str, entry: dict[str, Any], key: str) -> Any:
    """The class or factory ``entry[key]`` names (a dotted path is imported); None if unset.

    Raises:
        ConfigurationError: the dotted path cannot be imported.
    """
    value = entry.get(key)
    if not isinstance(value, str):
        return value
    try:
        return import_string(value)
    except ImportError as exc:
        raise ConfigurationError(
            f"BULLQ['CONNECTIONS'][{alias!r}][{key!r}]: cannot import {value!r} ({exc})"
        ) from exc


def queue_config(name: str) -> dict[str, Any]:
    """The effective entry of queue ``name``: ``{"CONNECTION", "DEFAULT_JOB_OPTIONS", "PREFIX"}``.

    Queues absent from ``BULLQ["QUEUES"]`` get the ``"default"`` alias, the global ``PREFIX``
    and no default job options.

    Raises:
        ConfigurationError: the queue's entry is not a dict.
    """
    cfg = get_config()
    entry = cfg["QUEUES"].get(name) or {}
    if not isinstance(entry, dict):
        raise ConfigurationError(f"BULLQ['QUEUES'][{name!r}] must be a dict")
    return {
        "CONNECTION": entry.get("CONNECTION", "default"),
        "DEFAULT_JOB_OPTIONS": dict(entry.get("DEFAULT_JOB_OPTIONS") or {}),
        "PREFIX": entry.get("PREFIX", cfg["PREFIX"]),
    }


def get_queue(name: str | None = None) -> Queue:
    """The core :class:`Queue` named ``name`` (default ``DEFAULT_QUEUE``), cached per name.

    Raises:
        ConfigurationError: unknown connection alias or invalid ``DEFAULT_JOB_OPTIONS``.
        InvalidNameError: the queue name or prefix breaks BullMQ's key layout.
    """
    name = name or get_config()["DEFAULT_QUEUE"]
    with _lock:
        queue = _queues.get(name)
        if queue is None:
            entry = queue_config(name)
            try:
                defaults = JobOptions(**entry["DEFAULT_JOB_OPTIONS"])
                defaults.validate()
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(
                    f"BULLQ['QUEUES'][{name!r}]['DEFAULT_JOB_OPTIONS']: {exc}"
                ) from exc
            queue = Queue(
                name,
                get_connection(entry["CONNECTION"]),
                prefix=entry["PREFIX"],
                default_job_options=defaults,
                max_payload_bytes=get_config()["MAX_PAYLOAD_BYTES"],
            )
            _queues[name] = queue
        return queue


def worker_options(**overrides: Any) -> WorkerOptions:
    """``BULLQ["WORKER"]`` as core :class:`WorkerOptions`, with ``overrides`` applied on top.

    Args:
        overrides: WorkerOptions field names (``concurrency=4``, ``grace_period_s=5.0``,
            ``name="w1"``...); ``None`` values are ignored.

    Raises:
        ConfigurationError: an unknown key in ``BULLQ["WORKER"]``.
        TypeError: an unknown override name.
    """
    values: dict[str, Any] = {}
    for key, value in get_config()["WORKER"].items():
        if key not in WORKER_FIELDS:
            raise ConfigurationError(f"BULLQ['WORKER'] has an unknown key {key!r}")
        values[WORKER_FIELDS[key]] = value
    values["max_data_bytes"] = get_config()["MAX_PAYLOAD_BYTES"]
    values.update({k: v for k, v in overrides.items() if v is not None})
    return WorkerOptions(**values)


def reset() -> None:
    """Forget the merged settings and the cached connections and queues."""
    global _config
    with _lock:
        _config = None
        _connections.clear()
        _queues.clear()


@receiver(setting_changed)
def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == "BULLQ":
        reset()
