"""What a Redis or Valkey server is and how it is set up: name and version, memory policy,
persistence and I/O threads, from ``INFO`` and, where allowed, ``CONFIG GET``.

One reader for the capacity probe (``manage.py bullq capacity``) and the admin's overview.
Managed services often refuse ``CONFIG`` (or rename it): every setting only ``CONFIG GET``
knows is then :data:`UNKNOWN`, never an error; ``INFO`` alone still names the server, its
memory policy, whether AOF is on and whether I/O threads are active.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .serialization import to_str

#: A setting ``CONFIG GET`` was not allowed to read.
UNKNOWN = "unknown"
#: The eviction policy BullMQ asks for; any other one can evict job keys (BullMQ warns too).
SAFE_POLICY = "noeviction"
#: The ``INFO`` sections read.
SECTIONS = ("server", "memory", "clients", "persistence", "stats")
#: The settings read with ``CONFIG GET`` when allowed.
CONFIG_NAMES = ("appendfsync", "save", "io-threads")


@dataclass(frozen=True, slots=True)
class Persistence:
    """What the server persists while it works.

    Attributes:
        aof_enabled: the append-only file is on. appendfsync: ``always`` | ``everysec`` |
            ``no``, or ``"unknown"`` when CONFIG GET is not allowed.
        rdb_save: the ``save`` rules (``""`` = no snapshots; ``"unknown"`` as above).
        busy: an AOF rewrite or RDB save ran at the end of the run.
    """

    aof_enabled: bool
    appendfsync: str
    rdb_save: str
    busy: bool

    @property
    def fsync_per_write(self) -> bool:
        return self.aof_enabled and self.appendfsync == "always"

    def describe(self) -> str:
        """One line: ``AOF on (appendfsync always), RDB save 3600 1 300 100``."""
        aof = f"AOF {'on' if self.aof_enabled else 'off'}"
        if self.aof_enabled:
            aof += f" (appendfsync {self.appendfsync})"
        rdb = "off" if self.rdb_save == "" else self.rdb_save
        return f"{aof}, RDB save {rdb}"


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """One server's facts.

    Attributes:
        server: ``Redis`` or ``Valkey`` (``server_name``). version: ``valkey_version`` or
            ``redis_version`` (Valkey reports ``redis_version`` 7.2.4 for compatibility).
        mode: ``standalone`` | ``cluster`` | ``sentinel`` (``redis_mode`` / ``server_mode``).
        used_memory / maxmemory: bytes (``maxmemory`` 0 = no limit), None when unknown.
        policy: ``maxmemory_policy``. clients: ``connected_clients``. uptime_s: seconds.
        persistence: see :class:`Persistence`.
        io_threads: the ``io-threads`` setting (1 = the main thread alone), ``"unknown"``
            when CONFIG GET is not allowed. io_threads_active: ``INFO``'s
            ``io_threads_active`` (1 while the I/O threads run), None when not reported.
        config_readable: CONFIG GET answered.
    """

    server: str
    version: str
    mode: str = ""
    used_memory: int | None = None
    used_memory_human: str = ""
    maxmemory: int | None = None
    maxmemory_human: str = ""
    policy: str = ""
    clients: int | None = None
    uptime_s: int | None = None
    persistence: Persistence = Persistence(
        aof_enabled=False, appendfsync=UNKNOWN, rdb_save=UNKNOWN, busy=False
    )
    io_threads: str = UNKNOWN
    io_threads_active: int | None = None
    config_readable: bool = False

    @property
    def policy_warning(self) -> bool:
        """True when the policy is known and not ``noeviction`` (jobs may be evicted)."""
        return bool(self.policy) and self.policy != SAFE_POLICY

    def describe_io_threads(self) -> str:
        """``io-threads 4 (active)``, ``io-threads 1``, ``io-threads unknown (inactive)``."""
        state = {0: " (inactive)", 1: " (active)"}.get(self.io_threads_active or 0, "")
        if self.io_threads_active is None:
            state = ""
        return f"io-threads {self.io_threads}{state}"

    def warnings(self) -> list[str]:
        """What an operator should change or know, one sentence each."""
        said = []
        if self.policy_warning:
            said.append(
                f"maxmemory-policy is {self.policy}: keys may be evicted under memory "
                "pressure; BullMQ needs noeviction"
            )
        if not self.config_readable:
            said.append("CONFIG GET is not allowed: appendfsync, save rules and io-threads unknown")
        return said


def flat_info(info: Any) -> dict[str, Any]:
    """An ``INFO`` reply as one dict (a Cluster client answers per node: the first node's)."""
    nodes = isinstance(info, dict) and info and all(isinstance(v, dict) for v in info.values())
    if nodes and "redis_version" not in info:
        return dict(next(iter(info.values())))
    return dict(info) if isinstance(info, dict) else {}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def read_config(client: Any, names: tuple[str, ...] = CONFIG_NAMES) -> dict[str, str] | None:
    """``CONFIG GET`` of each of ``names`` as ``{name: value}``; None when CONFIG is refused
    (an ACL, a renamed command, a managed service) or fails."""
    values: dict[str, str] = {}
    try:
        for name in names:
            reply = flat_info(client.config_get(name))
            value = next((v for k, v in reply.items() if to_str(k) == name), None)
            if value is not None:
                values[name] = str(to_str(value))
    except Exception:  # noqa: BLE001 - any refusal means "unknown", never an error
        return None
    return values


def from_info(info: dict[str, Any], config: dict[str, str] | None = None) -> ServerInfo:
    """The facts in one server's parsed ``INFO`` fields and ``CONFIG GET`` values (None:
    CONFIG refused)."""
    valkey = info.get("valkey_version")
    name = str(info.get("server_name") or ("valkey" if valkey else "redis"))
    settings = config or {}

    def setting(key: str) -> str:
        return settings.get(key, UNKNOWN) if config is not None else UNKNOWN

    busy = bool(
        _int(info.get("aof_rewrite_in_progress")) or _int(info.get("rdb_bgsave_in_progress"))
    )
    return ServerInfo(
        server="Valkey" if name.lower() == "valkey" else name.capitalize(),
        version=str(valkey or info.get("redis_version") or ""),
        mode=str(info.get("server_mode") or info.get("redis_mode") or ""),
        used_memory=_int(info.get("used_memory")),
        used_memory_human=str(info.get("used_memory_human") or ""),
        maxmemory=_int(info.get("maxmemory")),
        maxmemory_human=str(info.get("maxmemory_human") or ""),
        policy=str(info.get("maxmemory_policy") or ""),
        clients=_int(info.get("connected_clients")),
        uptime_s=_int(info.get("uptime_in_seconds")),
        persistence=Persistence(
            aof_enabled=bool(_int(info.get("aof_enabled"))),
            appendfsync=setting("appendfsync"),
            rdb_save=setting("save"),
            busy=busy,
        ),
        io_threads=setting("io-threads"),
        io_threads_active=_int(info.get("io_threads_active")),
        config_readable=config is not None,
    )


def read_server_info(client: Any) -> ServerInfo:
    """Read ``INFO`` (the sections of ``SECTIONS``) and, when allowed, ``CONFIG GET``, with a
    sync client.

    Raises:
        redis.RedisError / valkey.exceptions.ValkeyError: ``INFO`` itself failed (the server
            cannot be reached, or INFO is refused).
    """
    info: dict[str, Any] = {}
    for section in SECTIONS:
        info.update(flat_info(client.info(section)))
    return from_info(info, read_config(client))


__all__ = [
    "SAFE_POLICY",
    "UNKNOWN",
    "Persistence",
    "ServerInfo",
    "flat_info",
    "from_info",
    "read_config",
    "read_server_info",
]
