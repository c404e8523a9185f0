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

from ..core.clients import client_gaps, library_name
from ..core.connection import VALKEY_CLUSTER_REFUSED
from .settings import _connections, bullq_settings, error

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


def _options_messages(entry: dict[str, Any], where: str) -> list[CheckMessage]:
    """E003: ``OPTIONS`` the client library does not take (``{"bogus": 1}``). redis-py (and
    valkey-py) keep unknown keyword arguments until the first connection, where they raise a
    bare ``TypeError``; a connection object is built here (no socket is opened) to find them.
    Skipped under ``CLIENT_FACTORY``, whose options are the factory's business."""
    url, options = entry.get("URL"), entry.get("OPTIONS") or {}
    if entry.get("CLIENT_FACTORY") is not None or not options or not isinstance(options, dict):
        return []
    if not isinstance(url, str) or not url.startswith(_LAZY_SCHEMES):
        return []
    cls = entry.get("CLIENT_CLASS") or "redis.Redis"
    try:
        client_class = import_string(cls) if isinstance(cls, str) else cls
        client = client_class.from_url(url, **options)
        client.connection_pool.make_connection().disconnect()
        client.close()
    except TypeError as exc:
        return [
            error(
                3,
                f"{where}['OPTIONS'] holds an argument the client does not take ({exc}).",
                "OPTIONS are keyword arguments of redis-py's Redis.from_url (or of "
                "CLIENT_CLASS's); " + _DOCS,
            )
        ]
    except (ImportError, ValueError, AttributeError):  # E013 or E004 report those
        return []
    return []


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
