"""Facts about each configured Redis server for the overview: server and version, memory,
eviction policy, persistence, I/O threads, clients, uptime.

The facts are read by :func:`django_bullq.core.server_info.read_server_info` (``INFO``, and
``CONFIG GET`` where allowed: a managed server refusing it shows "unknown"), once per
``BULLQ["CONNECTIONS"]`` alias; a server that cannot be reached (or a connection that cannot be
built) is a row saying so, never an error page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..conf import get_config, get_connection
from ..core import server_info
from ..core.server_info import SAFE_POLICY as SAFE_POLICY  # re-exported: its old path
from ..core.server_info import UNKNOWN, ServerInfo


@dataclass(frozen=True)
class ServerFacts:
    """One connection's server as ``INFO`` (and ``CONFIG GET``) report it.

    Attributes:
        alias: the ``BULLQ["CONNECTIONS"]`` key. where: ``host:port/db`` of its URL (no
            credentials). reachable: False when INFO failed; ``error`` then says why.
        info: what was read (:class:`~django_bullq.core.server_info.ServerInfo`: server and
            version, memory in bytes, policy, clients, uptime, persistence, I/O threads);
            None when unreachable. The properties below are its text for the page.
    """

    alias: str
    where: str
    reachable: bool
    error: str = ""
    info: ServerInfo | None = None

    @property
    def uptime_ms(self) -> int | None:
        """Uptime in ms (for ``display.duration_html``), None when unknown."""
        uptime_s = None if self.info is None else self.info.uptime_s
        return None if uptime_s is None else uptime_s * 1000

    @property
    def persistence(self) -> str:
        """``AOF on (appendfsync everysec), RDB save 3600 1`` ("unknown" parts where CONFIG
        GET was refused); ``""`` when unreachable."""
        return self.info.persistence.describe() if self.info is not None else ""

    @property
    def io_threads(self) -> str:
        """The ``io-threads`` setting and whether they are active, e.g. ``4 (active)``."""
        if self.info is None:
            return ""
        return self.info.describe_io_threads().removeprefix("io-threads ")

    @property
    def config_unknown(self) -> bool:
        """True when CONFIG GET was refused (settings it alone knows show "unknown")."""
        return self.info is not None and not self.info.config_readable


def where(url: str) -> str:
    """``scheme://host:port/db`` of a Redis URL without user or password (every
    ``host:port`` of a Sentinel URL, and its ``/<service>/<db>``); ``""`` if unreadable."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def facts(alias: str, url: str) -> ServerFacts:
    """The facts of connection ``alias`` (``url`` only names it), reading its sync client."""
    try:
        found = server_info.read_server_info(get_connection(alias).sync_client())
    except Exception as exc:  # noqa: BLE001 - any failure is "unreachable", shown as such
        return ServerFacts(alias, where(url), reachable=False, error=f"{type(exc).__name__}: {exc}")
    return _facts(alias, url, found)


def from_info(
    alias: str, url: str, info: dict[str, Any], config: dict[str, str] | None = None
) -> ServerFacts:
    """The facts in one server's parsed ``INFO`` fields (``{"redis_version": "7.0.15", ...}``)
    and ``CONFIG GET`` values (None: CONFIG refused, those settings "unknown")."""
    return _facts(alias, url, server_info.from_info(info, config))


def _facts(alias: str, url: str, found: ServerInfo) -> ServerFacts:
    return ServerFacts(alias, where(url), reachable=True, info=found)


def all_facts() -> list[ServerFacts]:
    """:func:`facts` of every ``BULLQ["CONNECTIONS"]`` alias, in settings order."""
    return [facts(alias, entry["URL"]) for alias, entry in get_config()["CONNECTIONS"].items()]


__all__ = ["SAFE_POLICY", "UNKNOWN", "ServerFacts", "all_facts", "facts", "from_info", "where"]
