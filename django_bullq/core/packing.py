"""Pack asyncio commands with hiredis, as redis-py already does for its sync clients.

redis-py's asyncio connections build every command's bytes in Python, argument by argument;
a worker spends about a sixth of its CPU per job there (a fetch or finish call carries some
thirty arguments). ``hiredis.pack_command`` writes byte-for-byte the same RESP (and raises the
same ``DataError`` on a bad argument), so what reaches Redis is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from redis.connection import HiredisRespSerializer
    from redis.utils import HIREDIS_AVAILABLE
except ImportError:  # pragma: no cover - a redis-py without the serializer
    HIREDIS_AVAILABLE = False

_classes: dict[type, type] = {}


def _hiredis_class(base: type) -> type:
    """``base`` (an asyncio connection class) with hiredis's command packer."""
    cls = _classes.get(base)
    if cls is None:
        factory: Any = HiredisRespSerializer  # untyped in redis-py 8.2, typed before
        serializer = factory()

        def pack_command(self: Any, *args: Any) -> list[bytes]:
            packed: list[bytes] = serializer.pack(*args)
            return packed

        cls = type(f"Hiredis{base.__name__}", (base,), {"pack_command": pack_command})
        _classes[base] = cls
    return cls


def hiredis_pack(connection: Any) -> Callable[[tuple[Any, ...]], bytes] | None:
    """``hiredis.pack_command`` when ``connection`` packs with it (see
    :func:`use_hiredis_packing`), so a batch of commands can skip the per-command wrapper;
    else None (pack with ``connection.pack_command``)."""
    if type(connection) not in _classes.values():
        return None
    import hiredis

    pack: Callable[[tuple[Any, ...]], bytes] = hiredis.pack_command
    return pack


def hiredis_packer(pool: Any) -> Callable[[tuple[Any, ...]], bytes] | None:
    """``hiredis.pack_command`` when it packs commands for ``pool`` (a redis-py connection
    pool, sync or asyncio) byte for byte as the pool's connections would; else None.

    None when hiredis is missing, there is no pool (Cluster) or the pool's ``encoding`` is not
    strict UTF-8 (hiredis always writes str as UTF-8).
    """
    if not HIREDIS_AVAILABLE or pool is None:
        return None
    encoding = str(pool.connection_kwargs.get("encoding", "utf-8")).lower().replace("-", "")
    if encoding != "utf8" or pool.connection_kwargs.get("encoding_errors", "strict") != "strict":
        return None
    import hiredis

    pack: Callable[[tuple[Any, ...]], bytes] = hiredis.pack_command
    return pack


def use_hiredis_packing(client: Any) -> Any:
    """Make ``client`` (a redis-py asyncio client) pack commands with hiredis; returns it.

    Left as it is when :func:`hiredis_packer` finds hiredis unfit for its pool.
    """
    pool: Any = getattr(client, "connection_pool", None)
    if hiredis_packer(pool) is None:
        return client
    base = pool.connection_class
    if base.__name__.startswith("Hiredis"):
        return client
    pool.connection_class = _hiredis_class(base)
    return client


__all__ = ["hiredis_pack", "hiredis_packer", "use_hiredis_packing"]
