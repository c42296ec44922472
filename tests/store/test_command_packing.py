"""The store's Redis connections pack commands with hiredis: the same bytes as redis-py's packer,
redis-py's refusals for what it refuses, and real commands through a real Redis."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
import redis.asyncio as aioredis
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import DataError

from model_store.connection import HiredisPacking, connect, packed_by_hiredis

from ..support.private_redis import PrivateRedis

Packed = packed_by_hiredis(aioredis.Connection)
ARGUMENT = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False),
)
COMMAND = st.one_of(
    st.sampled_from(["SET", "EVALSHA", "CLIENT SETNAME", b"HSET", b"CONFIG GET"]),
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ ", min_size=1).filter(str.strip),
)


def wire(connection: Any, args: tuple[Any, ...]) -> bytes:
    return b"".join(connection.pack_command(*args))


@given(COMMAND, st.lists(ARGUMENT, max_size=40))
def test_hiredis_packs_the_bytes_redis_py_packs(command: str | bytes, arguments: list[Any]) -> None:
    args = (command, *arguments)
    assert wire(Packed(), args) == wire(aioredis.Connection(), args)


def test_large_and_memoryview_arguments_pack_the_same() -> None:
    blob = bytes(range(256)) * 40_000  # above redis-py's buffer cut-off, which it sends as its own chunk
    args = ("SETRANGE", "key", 0, memoryview(blob), blob)
    assert wire(Packed(), args) == wire(aioredis.Connection(), args)


@pytest.mark.parametrize("value", [True, None, [1], {"a": 1}, math.nan])
def test_what_redis_py_refuses_is_refused_by_redis_py(value: Any) -> None:
    if isinstance(value, float):  # redis-py packs NaN as "nan"; hiredis packs it the same way
        assert wire(Packed(), ("SET", "k", value)) == wire(aioredis.Connection(), ("SET", "k", value))
        return
    with pytest.raises(DataError):
        Packed().pack_command("SET", "k", value)


def test_every_client_of_a_single_redis_packs_with_hiredis(private_redis: PrivateRedis) -> None:
    async def scenario() -> list[Any]:
        client = connect(private_redis.url)
        assert isinstance(client, aioredis.Redis)
        assert issubclass(client.connection_pool.connection_class, HiredisPacking)
        try:
            await client.execute_command("CLIENT SETNAME", "packed")
            async with client.pipeline(transaction=True) as pipe:
                pipe.hset("h", mapping={"x": b"\x00\xff", "y": 1.5, "z": 7})
                pipe.hgetall("h")
                pipe.client_getname()
                return list(await pipe.execute())
        finally:
            await client.aclose()

    _, fields, name = asyncio.run(scenario())
    assert fields == {b"x": b"\x00\xff", b"y": b"1.5", b"z": b"7"}
    assert name in ("packed", b"packed")  # redis-py decodes CLIENT GETNAME itself
