"""The system checks of ``settings.BULLQ``'s shape: connections, queues, worker, outbox and the
queues tasks name (E001-E009; ids in docs/checks.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from django.core.checks import CheckMessage, Error

from ..conf import (
    CONNECTION_KEYS,
    DEFAULTS,
    JOB_OPTION_FIELDS,
    QUEUE_KEYS,
    WORKER_FIELDS,
    user_config,
)
from ..core.connection import Connection
from ..core.errors import InvalidNameError
from ..core.eventloop import loop_factory
from ..core.names import has_hash_tag, validate_queue_name
from ..core.options import JobOptions

#: Tag the checks are registered under (``manage.py check --tag django_bullq``).
TAG = "django_bullq"
#: URL schemes the core connection accepts.
URL_SCHEMES = ("redis", "rediss", "unix", "redis+sentinel", "redis+cluster")

_DOCS = "see docs/configuration.md"

#: ``BULLQ["WORKER"]`` key -> (accepted types, minimum value or None).
_WORKER_TYPES: dict[str, tuple[tuple[type, ...], float | None]] = {
    "CONCURRENCY": ((int,), 1),
    "LOCK_DURATION": ((int,), 1),
    "STALLED_INTERVAL": ((int,), 1),
    "MAX_STALLED_COUNT": ((int,), 0),
    "DRAIN_DELAY": ((int, float), 0),
    "GRACE_PERIOD": ((int, float), 0),
    "MAINTENANCE_INTERVAL": ((int,), 0),
    "REMOVE_ON_COMPLETE": ((bool, int, dict, type(None)), None),
    "REMOVE_ON_FAIL": ((bool, int, dict, type(None)), None),
    "LIMITER_MAX": ((int,), 0),
    "LIMITER_DURATION": ((int,), 0),
    "METRICS_MAX_DATA_POINTS": ((int,), 0),
    "RECORD_METRICS": ((bool,), None),
    "EVENT_LOOP": ((str,), None),
}


def error(n: int, msg: str, hint: str, obj: Any = None) -> Error:
    return Error(msg, hint=hint, obj=obj, id=f"django_bullq.E{n:03d}")


def bullq_settings() -> dict[str, Any] | None:
    """The raw BULLQ dict, or None when it is not a dict (E001 reports that)."""
    raw = user_config()
    return raw if isinstance(raw, dict) else None


def _connections(raw: dict[str, Any]) -> dict[str, Any]:
    value = raw.get("CONNECTIONS", DEFAULTS["CONNECTIONS"])
    return value if isinstance(value, dict) else {}


def _queues(raw: dict[str, Any]) -> dict[str, Any]:
    value = raw.get("QUEUES", {})
    return value if isinstance(value, dict) else {}


def check_settings_shape(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E001 BULLQ not a dict; E002 unknown key; E003 a top-level or WORKER value of wrong type."""
    raw = user_config()
    if not isinstance(raw, dict):
        return [
            error(
                1,
                "settings.BULLQ must be a dict.",
                "Write BULLQ = {'CONNECTIONS': {...}, ...}; " + _DOCS,
            )
        ]
    errors: list[CheckMessage] = list(_unknown_keys(raw, DEFAULTS, "BULLQ"))
    for key in ("CONNECTIONS", "QUEUES", "WORKER"):
        if key in raw and not isinstance(raw[key], dict):
            errors.append(error(3, f"BULLQ[{key!r}] must be a dict.", _DOCS))
    for key in ("PREFIX", "DEFAULT_QUEUE"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key]):
            errors.append(error(3, f"BULLQ[{key!r}] must be a non-empty string.", _DOCS))
    limit = raw.get("MAX_PAYLOAD_BYTES", 0)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        errors.append(
            error(
                3,
                "BULLQ['MAX_PAYLOAD_BYTES'] must be an int >= 0 (bytes; 0 = no "
                f"limit), got {limit!r}.",
                _DOCS,
            )
        )
    authorizer = raw.get("EVENTS_AUTHORIZER")
    if authorizer is not None and (not isinstance(authorizer, str) or "." not in authorizer):
        errors.append(error(3, "BULLQ['EVENTS_AUTHORIZER'] must be a dotted path or None.", _DOCS))
    worker = raw.get("WORKER", {})
    if isinstance(worker, dict):
        errors += _unknown_keys(worker, WORKER_FIELDS, "BULLQ['WORKER']")
        errors += _worker_values(worker)
    errors += _outbox_errors(raw.get("OUTBOX", {}))
    errors += _job_index_errors(raw.get("JOB_INDEX", {}))
    return errors


def _job_index_errors(index: Any) -> list[CheckMessage]:
    """E003 for ``BULLQ["JOB_INDEX"]``: its keys and the type of each (docs/search.md)."""
    from django.conf import settings

    where = "BULLQ['JOB_INDEX']"
    if not isinstance(index, dict):
        return [error(3, f"{where} must be a dict.", _DOCS)]
    errors: list[CheckMessage] = list(_unknown_keys(index, DEFAULTS["JOB_INDEX"], where))
    for key, value in index.items():
        default = DEFAULTS["JOB_INDEX"].get(key)
        if default is None:
            continue
        if key == "DATABASE":
            ok = isinstance(value, str) and value in settings.DATABASES
        elif isinstance(default, bool):
            ok = isinstance(value, bool)
        else:
            number = isinstance(value, int | float) and not isinstance(value, bool)
            positive = key in ("BATCH_SIZE", "POLL_INTERVAL")
            ok = number and (value > 0 if positive else value >= 0)
        if not ok:
            errors.append(error(3, f"{where}[{key!r}] is invalid: {value!r}.", _DOCS))
    return errors


def _outbox_errors(outbox: Any) -> list[CheckMessage]:
    """E002 / E003 for ``BULLQ["OUTBOX"]``: its keys, types and database aliases."""
    from django.conf import settings

    if not isinstance(outbox, dict):
        return [error(3, "BULLQ['OUTBOX'] must be a dict.", _DOCS)]
    errors: list[CheckMessage] = list(_unknown_keys(outbox, DEFAULTS["OUTBOX"], "BULLQ['OUTBOX']"))
    if "ENABLED" in outbox and not isinstance(outbox["ENABLED"], bool):
        errors.append(error(3, "BULLQ['OUTBOX']['ENABLED'] must be a bool.", _DOCS))
    aliases = outbox.get("DATABASES", [])
    if not isinstance(aliases, list | tuple) or any(a not in settings.DATABASES for a in aliases):
        errors.append(
            error(
                3,
                f"BULLQ['OUTBOX']['DATABASES'] must list aliases of "
                f"settings.DATABASES, got {aliases!r}.",
                _DOCS,
            )
        )
    for key, kind, floor in (("POLL_INTERVAL", (int, float), 0), ("BATCH_SIZE", (int,), 1)):
        value = outbox.get(key, DEFAULTS["OUTBOX"][key])
        if (
            isinstance(value, bool)
            or not isinstance(value, kind)
            or value < floor
            or (key == "POLL_INTERVAL" and value == 0)
        ):
            errors.append(
                error(
                    3,
                    f"BULLQ['OUTBOX'][{key!r}] must be a number > 0"
                    f"{' (s)' if key == 'POLL_INTERVAL' else ' (int)'}, "
                    f"got {value!r}.",
                    _DOCS,
                )
            )
    return errors


def _unknown_keys(value: dict[str, Any], known: Any, where: str) -> Iterator[CheckMessage]:
    for key in value:
        if key not in known:
            yield error(
                2,
                f"{where} has an unknown key {key!r}.",
                f"Known keys: {', '.join(sorted(known))}.",
            )


def _worker_values(worker: dict[str, Any]) -> Iterator[CheckMessage]:
    for key, value in worker.items():
        if key not in _WORKER_TYPES:
            continue
        types, minimum = _WORKER_TYPES[key]
        bad_type = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if bad_type or (minimum is not None and value < minimum):
            allowed = " or ".join(t.__name__ for t in types)
            floor = f" >= {minimum}" if minimum is not None else ""
            yield error(
                3, f"BULLQ['WORKER'][{key!r}] must be {allowed}{floor}, got {value!r}.", _DOCS
            )
        elif key == "EVENT_LOOP":
            try:
                loop_factory(value)
            except (ValueError, ImportError) as exc:
                yield error(3, f"BULLQ['WORKER']['EVENT_LOOP']: {exc}.", _DOCS)


def check_connections(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E002/E003 malformed ``CONNECTIONS`` entry; E004 URL scheme the core cannot use."""
    raw = bullq_settings()
    if raw is None:
        return []
    errors: list[CheckMessage] = []
    for alias, entry in _connections(raw).items():
        where = f"BULLQ['CONNECTIONS'][{alias!r}]"
        if isinstance(entry, dict):
            errors += _unknown_keys(entry, CONNECTION_KEYS, where)
            url = entry.get("URL")
            if not isinstance(entry.get("OPTIONS", {}), dict):
                errors.append(
                    error(
                        3,
                        f"{where}['OPTIONS'] must be a dict.",
                        "OPTIONS are keyword arguments of redis-py's client.",
                    )
                )
        else:
            url = entry
        if not isinstance(url, str):
            errors.append(
                error(
                    3,
                    f"{where} needs a URL string.",
                    "Use 'redis://host:6379/0' or {'URL': ..., 'OPTIONS': {...}}; "
                    "read it from the environment (os.environ or django-environ).",
                )
            )
            continue
        errors += _url_errors(url, where)
    return errors


def _url_errors(url: str, where: str) -> list[CheckMessage]:
    """E004: a scheme the core cannot use; a ``redis://`` / ``rediss://`` URL whose port or
    database index is not a number, or whose port is out of range (redis-py would refuse it
    only at the first call); a ``redis+sentinel://`` URL without a service name, or with a
    port or database index that is not a number."""
    parts = urlsplit(url)
    if parts.scheme not in URL_SCHEMES:
        return [
            error(
                4,
                f"{where} has URL scheme {parts.scheme!r}, which is not supported.",
                f"Use one of: {', '.join(URL_SCHEMES)}.",
            )
        ]
    if parts.scheme == "redis+sentinel":
        try:
            Connection(url)  # reads the sentinels, the service and the database; no socket
        except ValueError as exc:  # ConnectionConfigError, or a port or index not a number
            return [
                error(
                    4,
                    f"{where} has a Sentinel URL that cannot be used ({exc}).",
                    "Use redis+sentinel://[:password@]host:port[,host:port...]/<service>[/db].",
                )
            ]
        return []
    if parts.scheme not in ("redis", "rediss"):
        return []
    hint = "Use redis://[[user]:password@]host[:port][/db], e.g. redis://127.0.0.1:6379/0."
    try:
        port = parts.port  # raises ValueError for a port that is not a number, or past 65535
    except ValueError:
        port = 0
    if port == 0 and parts.netloc.rpartition("@")[2].rpartition(":")[1]:
        # redis-py takes port 0 as "none" and goes to 6379: another server's data
        return [error(4, f"{where} has a URL whose port is not a number from 1 to 65535.", hint)]
    db = parts.path.lstrip("/")
    if db and not db.isdigit():
        return [error(4, f"{where} has a URL whose database index {db!r} is not a number.", hint)]
    return []


def check_queues(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E003 entry not a dict; E005 unknown alias; E006 bad name/prefix; E008 bad job options;
    E009 cluster connection without a hash-tag prefix."""
    raw = bullq_settings()
    if raw is None:
        return []
    errors: list[CheckMessage] = []
    aliases = _connections(raw)
    for name, entry in _queues(raw).items():
        where = f"BULLQ['QUEUES'][{name!r}]"
        errors += _queue_name_errors(name, where)
        if not isinstance(entry, dict):
            errors.append(
                error(3, f"{where} must be a dict.", "Keys: " + ", ".join(QUEUE_KEYS) + ".")
            )
            continue
        errors += _unknown_keys(entry, QUEUE_KEYS, where)
        alias = entry.get("CONNECTION", "default")
        if alias not in aliases:
            errors.append(
                error(
                    5,
                    f"{where} uses connection alias {alias!r}, which is not in "
                    f"BULLQ['CONNECTIONS'].",
                    f"Define it, or use one of: {', '.join(sorted(aliases))}.",
                )
            )
        prefix = entry.get("PREFIX", raw.get("PREFIX", DEFAULTS["PREFIX"]))
        errors += _prefix_errors(prefix, aliases.get(alias), where)
        errors += _job_option_errors(entry.get("DEFAULT_JOB_OPTIONS", {}), where)
    return errors


def _queue_name_errors(name: Any, where: str, obj: Any = None) -> list[CheckMessage]:
    try:
        validate_queue_name(name)
    except InvalidNameError as exc:
        return [
            error(
                6,
                f"{where}: {exc}.",
                "Queue names are non-empty and hold no ':', '{', '}' or control "
                "characters (BullMQ key layout).",
                obj,
            )
        ]
    return []


def _prefix_errors(prefix: Any, connection: Any, where: str) -> list[CheckMessage]:
    if not isinstance(prefix, str) or not prefix:
        return [error(3, f"{where}['PREFIX'] must be a non-empty string.", _DOCS)]
    url = connection.get("URL") if isinstance(connection, dict) else connection
    on_cluster = isinstance(url, str) and url.startswith("redis+cluster://")
    if on_cluster and not has_hash_tag(prefix):
        return [
            error(
                9,
                f"{where} is on Redis Cluster but its prefix {prefix!r} holds no hash tag.",
                f"Use a prefix such as '{{{prefix}}}' so all keys of a queue share one slot.",
            )
        ]
    return []


def _job_option_errors(options: Any, where: str) -> list[CheckMessage]:
    where = f"{where}['DEFAULT_JOB_OPTIONS']"
    if not isinstance(options, dict):
        return [error(8, f"{where} must be a dict.", "Use JobOptions field names as keys.")]
    unknown = sorted(set(options) - set(JOB_OPTION_FIELDS))
    if unknown:
        return [
            error(
                8,
                f"{where} has unknown option(s): {', '.join(unknown)}.",
                f"Known: {', '.join(JOB_OPTION_FIELDS)} (snake_case, delays in ms).",
            )
        ]
    try:
        JobOptions(**options).validate()
    except (TypeError, ValueError) as exc:
        return [error(8, f"{where} is invalid: {exc}.", "See docs/tasks.md for option values.")]
    return []


def check_default_queue(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E006 DEFAULT_QUEUE is not a valid name; E007 its connection alias does not exist;
    E009 it is on Redis Cluster with a prefix that holds no hash tag."""
    raw = bullq_settings()
    if raw is None:
        return []
    name = raw.get("DEFAULT_QUEUE", DEFAULTS["DEFAULT_QUEUE"])
    if not isinstance(name, str) or not name:
        return []  # E003 already
    errors = _queue_name_errors(name, "BULLQ['DEFAULT_QUEUE']")
    entry = _queues(raw).get(name)
    alias = entry.get("CONNECTION", "default") if isinstance(entry, dict) else "default"
    if entry is None:
        # Not listed in QUEUES: the global PREFIX on the 'default' connection (E009 too).
        errors += _prefix_errors(
            raw.get("PREFIX", DEFAULTS["PREFIX"]),
            _connections(raw).get(alias),
            "BULLQ['DEFAULT_QUEUE']",
        )
    if alias not in _connections(raw):
        errors.append(
            error(
                7,
                f"BULLQ['DEFAULT_QUEUE'] {name!r} cannot be reached: connection "
                f"alias {alias!r} is not defined.",
                "Add a 'default' entry to BULLQ['CONNECTIONS'], or list the queue "
                "in BULLQ['QUEUES'] with a defined CONNECTION.",
            )
        )
    return errors


def check_task_queues(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E006 for a registered task whose ``queue=`` is not a valid queue name."""
    from ..producer.registry import registry

    errors: list[CheckMessage] = []
    for name in registry.names():
        task = registry.get(name)
        if task is not None and task.queue_name is not None:
            errors += _queue_name_errors(task.queue_name, f"task {name!r} queue", obj=task)
    return errors
