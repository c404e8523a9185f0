"""Redis clients from a URL or from objects the caller built: sync, asyncio and blocking ones.

URL forms (all read by redis-py and valkey-py): ``redis://``, ``rediss://``, ``unix://``; plus
``redis+sentinel://[:password@]host:port[,host:port...]/<service_name>[/<db>]`` for Sentinel and
``redis+cluster://host:port`` for Redis Cluster.

The clients are redis-py's unless the connection names other classes (valkey-py's, or
subclasses) or a factory (:data:`ClientFactory`) that builds each client itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

from . import clients
from .clients import ClientLibrary, client_gaps, library_of

# re-exported: their old paths
from .clients import is_cluster as is_cluster
from .deprecation import renamed_kwargs
from .errors import ConnectionConfigError as ConnectionConfigError
from .errors import RedisUnavailableError as RedisUnavailableError
from .packing import use_hiredis_packing

logger = logging.getLogger("django_bullq.connection")

#: Why a ``redis+cluster://`` URL cannot use valkey-py's client classes.
VALKEY_CLUSTER_REFUSED = (
    "valkey-py's ValkeyCluster refuses MULTI pipelines (redis-py 6 and later run them on one "
    "hash slot), which django_bullq's reads need: keep redis-py's classes (the default) for a "
    "redis+cluster:// URL; they talk to a Valkey cluster as well"
)

#: redis-py keyword arguments applied unless ``OPTIONS`` set them (s): a dead or silent Redis
#: makes a call fail instead of hanging (a producer fails fast, a worker's loop moves on).
#: Blocking reads (worker marker wait, events) use their own, longer socket timeout.
CLIENT_DEFAULTS: dict[str, Any] = {"socket_connect_timeout": 5.0, "socket_timeout": 30.0}


#: ``factory(url, options, kind)`` -> a client: ``kind`` is ``"sync"`` (the shared sync
#: client, built once), ``"async"`` (one per event loop) or ``"blocking"`` (a worker's
#: dedicated asyncio client for ``BZPOPMIN`` / ``XREAD BLOCK``, its ``socket_timeout`` in
#: ``options`` raised above the longest block); ``options`` are :data:`CLIENT_DEFAULTS`
#: under the connection's own.
ClientFactory = Callable[[str, dict[str, Any], str], Any]
#: The kinds of client a :data:`ClientFactory` is asked for.
CLIENT_KINDS = ("sync", "async", "blocking")


#: Shown instead of a secret.
HIDDEN = "***"


def redact_url(url: str) -> str:
    """``url`` with its password hidden, for logs, errors and reprs.

    Hides the password of the user-info part (``redis://user:***@host``) and the value of any
    query parameter whose name contains ``password`` (redis-py reads ``?password=``).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable Redis URL>"
    redacted = url
    userinfo, at, hosts = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        redacted = redacted.replace(
            parts.netloc, f"{userinfo.split(':', 1)[0]}:{HIDDEN}@{hosts}", 1
        )
    if "password" in parts.query.lower():
        query = urlencode(
            [
                (k, HIDDEN if "password" in k.lower() else v)
                for k, v in parse_qsl(parts.query, keep_blank_values=True)
            ],
            safe="*",
        )
        head, _, tail = redacted.partition("?")
        fragment = tail.partition("#")[2]
        redacted = f"{head}?{query}" + (f"#{fragment}" if fragment else "")
    return redacted


def redact_options(options: dict[str, Any]) -> dict[str, Any]:
    """Client options with the values of password-like keys hidden."""
    return {
        k: HIDDEN if "password" in k.lower() or k.lower() in ("credential_provider",) else v
        for k, v in options.items()
    }


#: Errors :func:`reaching` lets through as they are.
_NO_OUTAGE: clients.ErrorClasses = (RedisUnavailableError, *clients.AUTHENTICATION_ERRORS)
#: Errors the database-count probe of :meth:`Connection.database_error` ignores.
_PROBE_ERRORS: clients.ErrorClasses = (*clients.CLIENT_ERRORS, KeyError, ValueError, TypeError)


@contextmanager
def reaching(connection: Connection, what: str) -> Iterator[None]:
    """Turn redis-py connection errors inside the block into :class:`RedisUnavailableError`
    (so too a write the master refuses for want of replicas, ``NOREPLICAS``: it did not
    happen, and is retried as an outage is), and a database index the server lacks into
    :class:`ConnectionConfigError`.

    Args:
        connection: the :class:`Connection` used (for its password-free description).
        what: what the block does, e.g. ``"add job 'email'"``.
    """
    try:
        yield
    except _NO_OUTAGE:
        raise  # a wrong password or ACL user is no outage: the client's error says what is wrong
    except clients.UNREACHABLE_ERRORS as exc:
        if type(exc).__name__ == "MasterNotFoundError" and "AuthenticationError" in str(exc):
            # redis-py folds each sentinel's AuthenticationError into MasterNotFoundError
            raise ConnectionConfigError(
                f"the sentinels of {connection.describe()} refused the credentials to {what} "
                "(AuthenticationError): sentinels take a password of their own, in OPTIONS "
                '{"sentinel_kwargs": {"password": ...}} (docs/redis-topologies.md)'
            ) from exc
        raise RedisUnavailableError(
            f"cannot reach Redis at {connection.describe()} to {what}: {type(exc).__name__}: {exc}"
        ) from exc
    except clients.RESPONSE_ERRORS as exc:
        if "NOREPLICAS" in str(exc):  # min-replicas-to-write: the write did not happen
            raise RedisUnavailableError(
                f"Redis at {connection.describe()} refused the write to {what}: too few "
                f"replicas in sync (min-replicas-to-write); retry: {exc}"
            ) from exc
        missing = connection.database_error(exc)  # redis://host/99 on a server of 16
        if missing is None:
            raise
        raise missing from exc


def _sentinel_parts(url: str) -> tuple[list[tuple[str, int]], str, int | None, str | None]:
    """The sentinels' ``(host, port)`` list, the service name, and the database and password
    the URL gives (None when it gives none: OPTIONS may)."""
    parts = urlsplit(url)
    hosts = []
    netloc = parts.netloc.rsplit("@", 1)[-1]
    for item in netloc.split(","):
        host, _, port = item.partition(":")
        hosts.append((host or "127.0.0.1", int(port or 26379)))
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise ConnectionConfigError(f"sentinel URL {redact_url(url)!r} needs /<service_name>")
    db = int(path[1]) if len(path) > 1 else None
    password = unquote(parts.password) if parts.password else None
    return hosts, path[0], db, password


def _sentinel_master(
    library: ClientLibrary, url: str, opts: dict[str, Any], *, asyncio_: bool
) -> Any:
    """The master client of a ``redis+sentinel://`` URL: the password and database the URL
    gives win over ``opts``' (as redis-py's ``from_url`` does it); ``sentinel_kwargs`` in
    ``opts`` go to the sentinels."""
    hosts, service, db, password = _sentinel_parts(url)
    opts = dict(opts)
    if password is not None:
        opts["password"] = password
    if db is not None:
        opts["db"] = db
    sentinel = library.sentinel_class(asyncio_=asyncio_)(
        hosts, sentinel_kwargs=opts.pop("sentinel_kwargs", None), **opts
    )
    master = sentinel.master_for(service)
    return use_hiredis_packing(master) if asyncio_ else master


@dataclass
class Connection:
    """How to reach one Redis deployment; makes the clients django_bullq needs from it.

    Args:
        url: a Redis URL (see module doc). Optional when ``client``/``async_client`` are given.
        options: extra keyword arguments for redis-py client constructors.
        client: a ready sync client to use instead of building one (any
            ``decode_responses`` setting works; replies are normalised).
        async_client: the same for asyncio.
        client_class: the sync client class built from ``url`` (``cls.from_url(url,
            **options)``); default ``redis.Redis``. A valkey-py class (``valkey.Valkey``)
            makes the asyncio, Sentinel and Cluster clients valkey-py's too.
        async_client_class: the asyncio client class; default the asyncio twin of
            ``client_class``'s library.
        client_factory: a :data:`ClientFactory` building every client instead (a custom
            pool, ``Retry``, health checks); ``url`` is what it is given.
    """

    url: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    client: Any = None
    async_client: Any = None
    client_class: Any = None
    async_client_class: Any = None
    client_factory: ClientFactory | None = None
    #: the kinds of client whose gaps (:func:`~django_bullq.core.clients.client_gaps`) were
    #: logged
    _gaps_said: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        # Never the password: reprs end up in logs, tracebacks and debug pages.
        where = self.describe()
        options = f" options={redact_options(self.options)!r}" if self.options else ""
        return f"<Connection {where}{options}>"

    def __post_init__(self) -> None:
        if self.url is None and self.client is None and self.async_client is None:
            raise ConnectionConfigError("a Connection needs a url or a client")
        for name in ("client_class", "async_client_class"):
            cls = getattr(self, name)
            if cls is not None and not callable(getattr(cls, "from_url", None)):
                raise ConnectionConfigError(f"{name} {cls!r} has no from_url(url, **options)")
        if self.client_factory is not None and not callable(self.client_factory):
            raise ConnectionConfigError(f"client_factory {self.client_factory!r} is not callable")
        if self.url is not None:
            scheme = urlsplit(self.url).scheme
            if scheme not in ("redis", "rediss", "unix", "redis+sentinel", "redis+cluster"):
                raise ConnectionConfigError(f"unsupported Redis URL scheme {scheme!r}")
            if scheme == "redis+sentinel":
                _sentinel_parts(self.url)  # a malformed sentinel URL fails here, not at first use

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme if self.url else ""

    def library(self) -> ClientLibrary:
        """The client library whose Sentinel and Cluster classes serve this connection's
        ``redis+sentinel`` / ``redis+cluster`` URLs: that of ``client_class`` (or
        ``async_client_class``), redis-py by default."""
        for cls in (self.client_class, self.async_client_class):
            found = library_of(cls) if cls is not None else None
            if found is not None:
                return found
        return clients.LIBRARIES["redis"]

    def sync_client(self) -> Any:
        """The shared synchronous client (built once)."""
        if self.client is None:
            self.client = self._build(asyncio_=False)
        return self.client

    def new_async_client(self) -> Any:
        """A new asyncio client (asyncio clients belong to one event loop, so build per loop)."""
        if self.async_client is not None:
            return self.async_client
        return self._build(asyncio_=True)

    @renamed_kwargs(min_socket_timeout="min_socket_timeout_s")
    def new_blocking_client(self, min_socket_timeout_s: float) -> Any:
        """A dedicated asyncio client for blocking commands (``BZPOPMIN``, ``XREAD BLOCK``).

        Its socket timeout is raised to at least ``min_socket_timeout_s`` seconds, so a block
        that legitimately lasts that long is not cut off by a client default (redis-py 8 reads
        with a 5 s timeout) and reported as a connection error.
        """
        if self.url is None:
            # A client handed in without a URL: share its pool on one dedicated connection.
            return self.new_async_client().client()
        timeout_s = self.options.get("socket_timeout")
        if timeout_s is None or timeout_s < min_socket_timeout_s:
            timeout_s = min_socket_timeout_s
        return self._build(asyncio_=True, kind="blocking", socket_timeout=timeout_s)

    def _build(self, *, asyncio_: bool, kind: str = "", **overrides: Any) -> Any:
        if self.url is None:
            raise ConnectionConfigError(
                "this Connection has no URL to build an asyncio client from"
            )
        opts = {**CLIENT_DEFAULTS, **self.options, **overrides}
        if self.client_factory is not None:
            kind = kind or ("async" if asyncio_ else "sync")
            built = self.client_factory(self.url, opts, kind)
            if built is None:
                raise ConnectionConfigError(f"client_factory {self.client_factory!r} gave None")
            gaps = client_gaps(built)
            if gaps and kind not in self._gaps_said:  # once per kind: asyncio ones, per loop
                self._gaps_said.add(kind)
                logger.warning(
                    "the %s client %s built for %s cannot %s",
                    kind,
                    type(built).__qualname__,
                    self.describe(),
                    "; nor ".join(gaps),
                )
            return use_hiredis_packing(built) if asyncio_ and library_of(built) else built
        library = self.library()
        if self.scheme == "redis+sentinel":
            return _sentinel_master(library, self.url, opts, asyncio_=asyncio_)
        if self.scheme == "redis+cluster":
            if library.name == "valkey":
                raise ConnectionConfigError(VALKEY_CLUSTER_REFUSED)
            url = "redis" + self.url[len("redis+cluster") :]
            return library.cluster_class(asyncio_=asyncio_).from_url(url, **opts)
        if asyncio_:
            cls = self.async_client_class or library.client_class(asyncio_=True)
            return use_hiredis_packing(cls.from_url(self.url, **opts))
        return (self.client_class or library.client_class(asyncio_=False)).from_url(
            self.url, **opts
        )

    def address(self) -> str:
        """Where this connection points, as ``host:port`` (several ``host:port`` joined by
        ``,`` for Sentinel, the socket path for ``unix://``), for log lines; no credentials."""
        if not self.url:
            return self.describe()
        if self.scheme == "unix":
            return urlsplit(self.url).path or self.describe()
        if self.scheme == "redis+sentinel":
            return ",".join(f"{host}:{port}" for host, port in _sentinel_parts(self.url)[0])
        try:
            parts = urlsplit(self.url)
            host, port = parts.hostname or "127.0.0.1", parts.port or 6379
        except ValueError:
            return self.describe()
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def database_error(self, exc: BaseException) -> ConnectionConfigError | None:
        """A readable error for ``exc`` when it is Redis refusing this URL's database index
        (``ERR DB index is out of range``); None for any other error.

        The message names the index, the address and the server's ``databases`` setting when
        ``CONFIG GET databases`` answers on database 0 (a short-lived sync connection).
        """
        if "DB index is out of range" not in str(exc) or not self.url:
            return None
        if self.scheme == "redis+sentinel":
            index = _sentinel_parts(self.url)[2]
            return ConnectionConfigError(
                f"Redis database {self.options.get('db', 0) if index is None else index} "
                f"does not exist on the master of {self.address()}; use a database index "
                "the server has (redis+sentinel://host:port,.../<service>/<db>)"
            )
        try:
            index = int(urlsplit(self.url).path.strip("/") or 0)
        except ValueError:
            index = -1
        count = ""
        try:
            url = urlsplit(self.url)._replace(path="/0").geturl()
            probe_class = self.client_class or self.library().client_class(asyncio_=False)
            probe = probe_class.from_url(url, **{**CLIENT_DEFAULTS, **self.options})
            try:
                reply: Any = probe.config_get("databases")
                count = f" (databases = {int(reply['databases'])})"
            finally:
                probe.close()
        except _PROBE_ERRORS:
            pass
        return ConnectionConfigError(
            f"Redis database {index} does not exist on {self.address()}{count}; "
            "use a database index below that number in the URL (redis://host:port/<db>)"
        )

    def describe(self) -> str:
        """The URL with its password hidden, for logs and the admin."""
        if not self.url:
            return repr(self.client or self.async_client)
        return redact_url(self.url)


def as_connection(value: Any) -> Connection:
    """A :class:`Connection` from a URL string, a redis-py or valkey-py client, or a
    Connection.

    Raises:
        ConnectionConfigError: anything else.
    """
    if isinstance(value, Connection):
        return value
    if isinstance(value, str):
        return Connection(url=value)
    if isinstance(value, redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster):
        return Connection(async_client=value, url=_url_of(value))
    if isinstance(value, redis.Redis | redis.cluster.RedisCluster):
        return Connection(client=value, url=_url_of(value))
    library = library_of(value)
    if library is not None and hasattr(value, "execute_command"):  # a valkey-py client
        is_async = type(value).__module__.startswith(f"{library.name}.asyncio")
        url = _url_of(value)
        if is_async:
            return Connection(async_client=value, url=url, async_client_class=type(value))
        return Connection(client=value, url=url, client_class=type(value))
    raise ConnectionConfigError(f"cannot use {value!r} as a Redis connection")


def _url_of(client: Any) -> str | None:
    """Best-effort URL of a plain client so asyncio twins can be built for it."""
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if not kwargs or "host" not in kwargs:
        return None
    user = quote(str(kwargs.get("username") or ""), safe="")
    auth = f"{user}:{quote(str(kwargs['password']), safe='')}@" if kwargs.get("password") else ""
    connection_class = getattr(pool, "connection_class", None)
    scheme = "rediss" if "ssl" in getattr(connection_class, "__name__", "").lower() else "redis"
    return f"{scheme}://{auth}{kwargs['host']}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"
