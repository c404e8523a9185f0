"""The client libraries django_bullq drives, redis-py and valkey-py, and their error classes.

valkey-py (PyPI ``valkey``) is a fork of redis-py 5: the same classes under other names
(``valkey.Valkey``, ``valkey.asyncio.Valkey``, ``valkey.cluster.ValkeyCluster``), the same
connection and pool internals the pipelines use (``make_connection``, ``connect``, ``_sock``,
``send_packed_command``, ``read_response``), the same ``register_script``. What differs is its
exceptions: a valkey-py client raises ``valkey.exceptions.ConnectionError``, which is no
``redis.ConnectionError``. Every handler of a client error therefore catches one of the tuples
below, which hold the class of each library installed, never a redis-py class alone.

A library is chosen per connection (``BULLQ["CONNECTIONS"][alias]["CLIENT_CLASS"]``, see
docs/configuration.md); :class:`ClientLibrary` names its classes for one library.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import redis.exceptions

from .errors import ConnectionConfigError

_valkey_exceptions: ModuleType | None
try:
    import valkey.exceptions as _valkey_exceptions
except ImportError:  # pragma: no cover - valkey-py is an optional extra
    _valkey_exceptions = None

_MODULES: tuple[ModuleType, ...] = tuple(
    m for m in (redis.exceptions, _valkey_exceptions) if m is not None
)

ErrorClasses = tuple[type[Exception], ...]


def _classes(name: str) -> ErrorClasses:
    return tuple(getattr(module, name) for module in _MODULES)


#: Any error of a client library (redis-py's ``RedisError``, valkey-py's ``ValkeyError``).
CLIENT_ERRORS: ErrorClasses = (redis.exceptions.RedisError,) + (
    (_valkey_exceptions.ValkeyError,) if _valkey_exceptions is not None else ()
)
#: The connection failed (refused, reset, closed); AuthenticationError is one of them.
CONNECTION_ERRORS: ErrorClasses = _classes("ConnectionError")
#: A read or connect timed out.
TIMEOUT_ERRORS: ErrorClasses = _classes("TimeoutError")
#: The server could not be reached (a connection error or a timeout), an outage to retry.
UNREACHABLE_ERRORS: ErrorClasses = CONNECTION_ERRORS + TIMEOUT_ERRORS
#: What the worker rides out as an outage, :data:`UNREACHABLE_ERRORS` and the socket's own.
OUTAGE_ERRORS: ErrorClasses = (*UNREACHABLE_ERRORS, OSError)
#: The server answered an error reply (a Lua error, a refused command).
RESPONSE_ERRORS: ErrorClasses = _classes("ResponseError")
#: EVALSHA of a script the server does not hold (SCRIPT FLUSH, a restart).
NOSCRIPT_ERRORS: ErrorClasses = _classes("NoScriptError")
#: A wrong password or ACL user, no outage but a setting to fix.
AUTHENTICATION_ERRORS: ErrorClasses = _classes("AuthenticationError")
#: An ACL refused a command (NOPERM).
NO_PERMISSION_ERRORS: ErrorClasses = _classes("NoPermissionError")
#: A client-side lock (``client.lock``) was lost or not held.
LOCK_ERRORS: ErrorClasses = _classes("LockError")


@dataclass(frozen=True)
class ClientLibrary:
    """One client library's classes, as django_bullq builds clients from a URL.

    Attributes:
        name: the import name, ``"redis"`` or ``"valkey"``.
    """

    name: str
    sync_name: str
    async_name: str
    cluster_name: str

    def _module(self, path: str) -> ModuleType:
        try:
            return importlib.import_module(f"{self.name}.{path}" if path else self.name)
        except ImportError as exc:
            raise ConnectionConfigError(
                f"client library {self.name!r} is not installed "
                f"(pip install 'django-bullq[{self.name}]')"
            ) from exc

    def client_class(self, *, asyncio_: bool) -> Any:
        """``Redis`` / ``Valkey`` (sync) or their asyncio twin."""
        if asyncio_:
            return getattr(self._module("asyncio"), self.async_name)
        return getattr(self._module(""), self.sync_name)

    def sentinel_class(self, *, asyncio_: bool) -> Any:
        """The library's ``Sentinel`` (sync or asyncio)."""
        return self._module("asyncio.sentinel" if asyncio_ else "sentinel").Sentinel

    def cluster_class(self, *, asyncio_: bool) -> Any:
        """The library's cluster client (sync or asyncio)."""
        return getattr(
            self._module("asyncio.cluster" if asyncio_ else "cluster"), self.cluster_name
        )


#: The libraries whose clients django_bullq builds and whose errors it recognises.
LIBRARIES: dict[str, ClientLibrary] = {
    "redis": ClientLibrary("redis", "Redis", "Redis", "RedisCluster"),
    "valkey": ClientLibrary("valkey", "Valkey", "Valkey", "ValkeyCluster"),
}


def library_name(obj: Any) -> str:
    """The top-level package of ``obj``'s class (of ``obj`` itself when it is a class, of the
    path when it is a dotted path): ``"redis"`` for a redis-py client, ``"valkey"`` for a
    valkey-py one."""
    if isinstance(obj, str):
        return obj.partition(".")[0]
    module = getattr(obj, "__module__", None) if isinstance(obj, type) else type(obj).__module__
    return str(module or "").partition(".")[0]


def library_of(obj: Any) -> ClientLibrary | None:
    """The :class:`ClientLibrary` of a client or client class; None for another library's."""
    for cls in type.mro(obj if isinstance(obj, type) else type(obj)):
        found = LIBRARIES.get(str(cls.__module__).partition(".")[0])
        if found is not None:
            return found
    return None


def is_cluster(client: Any) -> bool:
    """True for a cluster client or cluster pipeline of redis-py or valkey-py (sync or
    asyncio)."""
    names = {cls.__name__ for cls in type(client).__mro__}
    return bool(names & {"RedisCluster", "ValkeyCluster"}) and library_of(client) is not None


def is_cluster_pipeline(client: Any) -> bool:
    """True for a redis-py or valkey-py cluster pipeline (sync or asyncio)."""
    names = {cls.__name__ for cls in type(client).__mro__}
    return "ClusterPipeline" in names and library_of(client) is not None


def client_gaps(obj: Any) -> list[str]:
    """What django_bullq cannot do with client (or client class) ``obj``, one phrase each;
    ``[]`` for redis-py's and valkey-py's clients (and their subclasses).

    The Lua scripts need ``register_script``; the worker's blocking fetch needs ``bzpopmin``;
    outage detection, the NOSCRIPT reload and the two pipelines need a library whose error
    classes and connection internals django_bullq knows (:data:`LIBRARIES`).
    """
    cls = obj if isinstance(obj, type) else type(obj)
    gaps = []
    if not callable(getattr(cls, "register_script", None)):
        gaps.append("run the Lua scripts (it has no register_script)")
    if not callable(getattr(cls, "bzpopmin", None)):
        gaps.append("block on the queue's marker (it has no bzpopmin)")
    if library_of(cls) is None:
        gaps.append(
            "tell its connection errors from other errors (no outage retry, no NOSCRIPT "
            "reload) nor pipeline its calls (the auto-pipelining and the thread pipeline "
            "drive redis-py's connection internals); django_bullq knows "
            + " and ".join(f"{name}-py" for name in LIBRARIES)
        )
    return gaps


def can_pipeline(client: Any) -> bool:
    """Whether the auto-pipelining and the thread pipeline can drive ``client``: a redis-py or
    valkey-py client with a connection pool that makes connections (not a cluster client)."""
    pool = getattr(client, "connection_pool", None)
    return (
        library_of(client) is not None
        and callable(getattr(pool, "make_connection", None))
        and not is_cluster(client)
    )


__all__ = [
    "AUTHENTICATION_ERRORS",
    "CLIENT_ERRORS",
    "CONNECTION_ERRORS",
    "LIBRARIES",
    "LOCK_ERRORS",
    "NOSCRIPT_ERRORS",
    "NO_PERMISSION_ERRORS",
    "OUTAGE_ERRORS",
    "RESPONSE_ERRORS",
    "TIMEOUT_ERRORS",
    "UNREACHABLE_ERRORS",
    "ClientLibrary",
    "ErrorClasses",
    "can_pipeline",
    "client_gaps",
    "is_cluster",
    "is_cluster_pipeline",
    "library_name",
    "library_of",
]
