"""asyncio clients pack commands with hiredis, byte-for-byte as redis-py's Python packer."""

from __future__ import annotations

import pytest
import redis.asyncio
import redis.asyncio.connection as aconn
from redis.exceptions import DataError

from django_bullq.core.connection import Connection

ARGS = (
    "EVALSHA",
    "abc",
    3,
    b"k1",
    "k2",
    1.5,
    0.1,
    -7,
    10**20,
    "ünï",
    b"\x00\xff",
    1e-7,
    bytearray(b"ba"),
    memoryview(b"mv"),
)


def test_async_clients_use_the_hiredis_packer(redis_url: str) -> None:
    client = Connection(url=redis_url).new_async_client()
    cls = client.connection_pool.connection_class
    assert cls.__name__ == "HiredisConnection"
    fast = b"".join(cls().pack_command(*ARGS))
    plain = b"".join(aconn.Connection().pack_command(*ARGS))
    assert fast == plain


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}])
def test_bad_arguments_raise_the_same_error(redis_url: str, bad: object) -> None:
    cls = Connection(url=redis_url).new_async_client().connection_pool.connection_class
    with pytest.raises(DataError):
        cls().pack_command("SET", "k", bad)


def test_other_encodings_keep_the_python_packer(redis_url: str) -> None:
    client = Connection(url=redis_url, options={"encoding": "latin-1"}).new_async_client()
    assert client.connection_pool.connection_class is aconn.Connection


async def test_round_trip_through_the_fast_packer(redis_url: str, queue_name: str) -> None:
    client: redis.asyncio.Redis = Connection(url=redis_url).new_async_client()
    try:
        await client.set(queue_name, "ünï")
        assert (await client.get(queue_name)).decode() == "ünï"
        pipe = client.pipeline(transaction=False)
        pipe.incrbyfloat(f"{queue_name}:f", 1.5).get(queue_name)
        assert await pipe.execute() == [1.5, "ünï".encode()]
    finally:
        await client.delete(queue_name, f"{queue_name}:f")
        await client.aclose()
