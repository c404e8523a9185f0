"""Facts about each configured Redis server for the overview: server and version, memory,
eviction policy, clients, uptime (``INFO server``, ``memory``, ``clients``).

One ``INFO`` pipeline per ``BULLQ["CONNECTIONS"]`` alias; a server that cannot be reached (or a
connection that cannot be built) is a row saying so, never an error page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..conf import get_config, get_connection

#: The eviction policy BullMQ asks for; any other one can evict job keys (BullMQ warns too).
SAFE_POLICY = "noeviction"


@dataclass(frozen=True)
class ServerFacts:
    """One connection's server as ``INFO`` reports it.

    Attributes:
        alias: the ``BULLQ["CONNECTIONS"]`` key. where: ``host:port/db`` of its URL (no
            credentials). reachable: False when INFO failed; ``error`` then says why.
        server: ``Redis`` or ``Valkey``. version: ``valkey_version`` or ``redis_version``
            (Valkey reports ``redis_version`` 7.2.4 for compatibility).
        used_memory / maxmemory: bytes (``maxmemory`` 0 = no limit). policy:
            ``maxmemory_policy``. clients: ``connected_clients``. uptime_s: seconds.
    """

    alias: str
    where: str
    reachable: bool
    error: str = ""
    server: str = ""
    version: str = ""
    used_memory: int | None = None
    used_memory_human: str = ""
    maxmemory: int | None = None
    maxmemory_human: str = ""
    policy: str = ""
    clients: int | None = None
    uptime_s: int | None = None

    @property
    def policy_warning(self) -> bool:
        """True when the policy is known and not ``noeviction`` (jobs may be evicted)."""
        return bool(self.policy) and self.policy != SAFE_POLICY

    @property
    def uptime_ms(self) -> int | None:
        """Uptime in ms (for ``display.duration_html``), None when unknown."""
        return None if self.uptime_s is None else self.uptime_s * 1000


def where(url: str) -> str:
    """``scheme://host:port/db`` of a Redis URL without user or password; ``""`` if unreadable."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _flat(info: Any) -> dict[str, Any]:
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


def facts(alias: str, url: str) -> ServerFacts:
    """The facts of connection ``alias`` (``url`` only names it), reading its sync client."""
    try:
        client = get_connection(alias).client
        info: dict[str, Any] = {}
        for section in ("server", "memory", "clients"):
            info.update(_flat(client.info(section)))
    except Exception as exc:  # noqa: BLE001 - any failure is "unreachable", shown as such
        return ServerFacts(alias, where(url), reachable=False, error=f"{type(exc).__name__}: {exc}")
    return from_info(alias, url, info)


def from_info(alias: str, url: str, info: dict[str, Any]) -> ServerFacts:
    """The facts in one server's parsed ``INFO`` fields (``{"redis_version": "7.0.15", ...}``)."""
    valkey = info.get("valkey_version")
    server_name = str(info.get("server_name") or ("valkey" if valkey else "redis"))
    return ServerFacts(
        alias,
        where(url),
        reachable=True,
        server="Valkey" if server_name.lower() == "valkey" else server_name.capitalize(),
        version=str(valkey or info.get("redis_version") or ""),
        used_memory=_int(info.get("used_memory")),
        used_memory_human=str(info.get("used_memory_human") or ""),
        maxmemory=_int(info.get("maxmemory")),
        maxmemory_human=str(info.get("maxmemory_human") or ""),
        policy=str(info.get("maxmemory_policy") or ""),
        clients=_int(info.get("connected_clients")),
        uptime_s=_int(info.get("uptime_in_seconds")),
    )


def all_facts() -> list[ServerFacts]:
    """:func:`facts` of every ``BULLQ["CONNECTIONS"]`` alias, in settings order."""
    return [facts(alias, entry["URL"]) for alias, entry in get_config()["CONNECTIONS"].items()]
