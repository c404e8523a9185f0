"""The system checks of the client classes and factories of ``BULLQ["CONNECTIONS"]``
(E013, W005; ids in docs/checks.md).

``CLIENT_CLASS`` / ``ASYNC_CLIENT_CLASS`` are imported and looked at (never instantiated, never
connected): a class of a library other than redis-py or valkey-py is reported with what
django_bullq cannot do with it (:func:`~django_bullq.core.clients.client_gaps`). A
``CLIENT_FACTORY`` is only imported: what it builds is known when it builds it, and a client
with gaps is then logged (WARNING, ``django_bullq.connection``) once per kind.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning
from django.utils.module_loading import import_string

from ..core.clients import LIBRARIES, client_gaps, library_name, library_of
from ..core.connection import VALKEY_CLUSTER_REFUSED, Connection, ConnectionConfigError
from .settings import _connections, _url_errors, bullq_settings, error

_DOCS = "see docs/configuration.md#client-libraries"


def _imported(value: Any, where: str) -> tuple[Any, list[CheckMessage]]:
    if not isinstance(value, str):
        return value, []
    try:
        return import_string(value), []
    except ImportError as exc:
        hint = "Install the library (pip install 'django-bullq[valkey]' for valkey-py), "
        return None, [error(13, f"{where}: cannot import {value!r} ({exc}).", hint + _DOCS)]


def _entry_messages(key: str, value: Any, where: str) -> list[CheckMessage]:
    """E013 / W005 of one CLIENT_CLASS, ASYNC_CLIENT_CLASS or CLIENT_FACTORY value."""
    obj, errors = _imported(value, where)
    if obj is None:
        return errors
    if key == "CLIENT_FACTORY":
        if callable(obj):
            return []
        return [error(13, f"{where} is not callable.", "f(url, options, kind); " + _DOCS)]
    if not isinstance(obj, type) or not callable(getattr(obj, "from_url", None)):
        return [
            error(
                13,
                f"{where} is not a client class with from_url(url, **options).",
                "Use e.g. 'valkey.Valkey', or CLIENT_FACTORY for other clients; " + _DOCS,
            )
        ]
    gaps = client_gaps(obj)
    if not gaps:
        return []
    return [
        Warning(
            f"{where}: django_bullq cannot {'; nor '.join(gaps)}.",
            hint="Use redis-py or valkey-py clients (or subclasses); " + _DOCS,
            id="django_bullq.W005",
        )
    ]


def _cluster_messages(key: str, entry: dict[str, Any], where: str) -> list[CheckMessage]:
    """E013: valkey-py's classes on a ``redis+cluster://`` URL (see
    :data:`~django_bullq.core.connection.VALKEY_CLUSTER_REFUSED`)."""
    url = entry.get("URL")
    if key == "CLIENT_FACTORY" or not isinstance(url, str):
        return []
    if not url.startswith("redis+cluster:") or library_name(entry[key]) != "valkey":
        return []
    return [error(13, f"{where}: {VALKEY_CLUSTER_REFUSED}.", _DOCS)]


#: URL schemes whose client is built without connecting (Cluster and Sentinel clients connect
#: when they are built, so their OPTIONS are not tried here).
_LAZY_SCHEMES = ("redis://", "rediss://", "unix://")


#: OPTIONS that are seconds: a string there ("5", read from the environment) passes redis-py's
#: constructors and fails only at the first socket call.
_SECONDS_OPTIONS = ("socket_timeout", "socket_connect_timeout", "health_check_interval")


def _seconds_messages(options: dict[str, Any], where: str) -> list[CheckMessage]:
    """E003 for the first of :data:`_SECONDS_OPTIONS` that is not a number of seconds > 0
    (``health_check_interval``: >= 0)."""
    for name in _SECONDS_OPTIONS:
        value = options.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return [
                error(
                    3,
                    f"{where}['OPTIONS'][{name!r}] is {value!r}, not a number of seconds.",
                    "Give a number (int or float) or None; a value read from the environment "
                    "is a string: convert it (env.float(...), float(os.environ[...])).",
                )
            ]
        if value < 0 or (value == 0 and name != "health_check_interval"):
            return [
                error(
                    3,
                    f"{where}['OPTIONS'][{name!r}] is {value!r}: a timeout must be above 0 "
                    "(0 makes redis-py's sockets fail at once).",
                    "Give a number of seconds above 0, or None to wait forever.",
                )
            ]
    return []


def _options_messages(entry: dict[str, Any], where: str) -> list[CheckMessage]:
    """E003: ``OPTIONS`` the client library does not take (``{"bogus": 1}``,
    ``{"max_connections": "ten"}``). redis-py (and valkey-py) keep keyword arguments until they
    build a connection, where a wrong one raises a bare ``TypeError`` / ``ValueError``; one
    connection object of the sync and of the asyncio class is built here (no socket is opened)
    to find them. Skipped under ``CLIENT_FACTORY``, whose options are the factory's business,
    and for a URL that E004 refuses. The seconds options (``socket_timeout`` and the others of
    :data:`_SECONDS_OPTIONS`), which only a socket would refuse, must be numbers or None, the
    timeouts above 0."""
    url, options = entry.get("URL"), entry.get("OPTIONS") or {}
    if entry.get("CLIENT_FACTORY") is not None or not options or not isinstance(options, dict):
        return []
    seconds = _seconds_messages(options, where)
    if seconds:
        return seconds
    sentinel = isinstance(url, str) and url.startswith("redis+sentinel://")
    if not isinstance(url, str) or not (sentinel or url.startswith(_LAZY_SCHEMES)):
        return []
    if _url_errors(url, where):
        return []
    sync_path = entry.get("CLIENT_CLASS") or "redis.Redis"
    try:
        sync_class = import_string(sync_path) if isinstance(sync_path, str) else sync_path
        library = library_of(sync_class) or LIBRARIES["redis"]
        async_path = entry.get("ASYNC_CLIENT_CLASS")
        async_class = (
            (import_string(async_path) if isinstance(async_path, str) else async_path)
            if async_path is not None
            else library.client_class(asyncio_=True)
        )
    except (ImportError, ConnectionConfigError):  # E013 reports a class that cannot be used
        return []
    for asyncio_, client_class in ((False, sync_class), (True, async_class)):
        try:
            client = _client_of(url, options, client_class, asyncio_=asyncio_, sentinel=sentinel)
            client.connection_pool.make_connection()
        except ConnectionConfigError:  # the URL, not OPTIONS: reported where it is used
            return []
        except (TypeError, ValueError, AttributeError) as exc:
            name = f"{client_class.__module__}.{client_class.__qualname__}"
            return [
                error(
                    3,
                    f"{where}['OPTIONS'] holds an argument {name} does not take "
                    f"({type(exc).__name__}: {exc}).",
                    "OPTIONS are keyword arguments of the client's from_url; " + _DOCS,
                )
            ]
    return []


def _client_of(
    url: str, options: dict[str, Any], client_class: Any, *, asyncio_: bool, sentinel: bool
) -> Any:
    """The client ``url`` and ``options`` make, built without a socket: ``from_url`` of
    ``client_class``, or for a Sentinel URL the master client a :class:`Connection` builds
    (its library's ``Sentinel`` and ``master_for``)."""
    if not sentinel:
        return client_class.from_url(url, **options)
    if asyncio_:
        return Connection(url, options=options, async_client_class=client_class).new_async_client()
    return Connection(url, options=options, client_class=client_class).sync_client()


def check_clients(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E013 a client class or factory that cannot be imported or used; W005 a client class
    django_bullq cannot drive fully; E003 OPTIONS the client does not take."""
    raw = bullq_settings()
    if raw is None:
        return []
    found: list[CheckMessage] = []
    for alias, entry in _connections(raw).items():
        if not isinstance(entry, dict):
            continue
        found += _options_messages(entry, f"BULLQ['CONNECTIONS'][{alias!r}]")
        for key in ("CLIENT_CLASS", "ASYNC_CLIENT_CLASS", "CLIENT_FACTORY"):
            if entry.get(key) is not None:
                where = f"BULLQ['CONNECTIONS'][{alias!r}][{key!r}]"
                found += _entry_messages(key, entry[key], where)
                found += _cluster_messages(key, entry, where)
        if entry.get("CLIENT_FACTORY") is not None and entry.get("CLIENT_CLASS") is not None:
            found.append(
                Warning(
                    f"BULLQ['CONNECTIONS'][{alias!r}] sets both CLIENT_FACTORY and "
                    "CLIENT_CLASS: the factory builds every client, the class is not used.",
                    hint="Keep one of them; " + _DOCS,
                    id="django_bullq.W005",
                )
            )
    return found
