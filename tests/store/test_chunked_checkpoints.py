"""Chunked checkpoints: a blob goes to Redis as several commands, and is committed atomically.

The layout under test (docs/store-contract.md): ``acog:{m}:<gen>:ckpt_index`` lists one
``"<applied id> <token> <chunks> <bytes>"`` manifest per retained checkpoint, newest first;
``acog:{m}:<gen>:ckpt:<token>`` is a hash of the blob's chunks, with a TTL until committed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import cast

import pytest
import redis
import redis.asyncio as aioredis

from model_store import CodecError, ConnectionSettings, RedisModelStore, StoreError, decode_state

from ..support.private_redis import PrivateRedis
from .factories import example

pytestmark = pytest.mark.anyio

CHUNK = 16
ROOT = Path(__file__).resolve().parents[2]
StageChunk = Callable[[str, int, memoryview], Awaitable[None]]


@pytest.fixture
async def small(redis_client: redis.Redis, redis_url: str) -> AsyncIterator[RedisModelStore]:
    """A store on the test database that sends checkpoints in 16-byte chunks."""
    store = RedisModelStore.from_url(redis_url, ConnectionSettings(checkpoint_chunk_bytes=CHUNK))
    yield store
    await store.close()


@pytest.fixture
async def private(private_redis: PrivateRedis) -> AsyncIterator[tuple[RedisModelStore, redis.Redis]]:
    """The same store, and a client, on a Redis of the test's own (for its command statistics)."""
    store = RedisModelStore.from_url(private_redis.url, ConnectionSettings(checkpoint_chunk_bytes=CHUNK))
    client = redis.Redis.from_url(private_redis.url)
    yield store, client
    await store.close()
    client.close()


async def append(store: RedisModelStore, n: int) -> list[str]:
    _, backlog = await store.append_examples("m", 1, [(example(i), 1) for i in range(n)], time.time(), "0-0")
    return [entry.stream_id for entry in backlog[-n:]]


def chunk_keys(client: redis.Redis) -> dict[str, int]:
    """Every chunk hash of model m generation 1 -> its PTTL (-1: committed, no TTL)."""
    keys = cast(list[bytes], client.keys("acog:{m}:1:ckpt:*"))  # a test database: small
    return {key.decode(): client.pttl(key) for key in keys}


def index_tokens(client: redis.Redis) -> list[str]:
    index = cast(list[bytes], client.lrange("acog:{m}:1:ckpt_index", 0, -1))
    return [entry.decode().split(" ")[1] for entry in index]


def hook_after_chunk(store: RedisModelStore, after: Callable[[str, int], Awaitable[None]]) -> None:
    """Run ``after(chunk key, chunk number)`` once each chunk command of ``store`` has been answered."""
    stage: StageChunk = store._stage_chunk

    async def staged(key: str, number: int, chunk: memoryview) -> None:
        await stage(key, number, chunk)
        await after(key, number)

    store._stage_chunk = staged  # type: ignore[method-assign, assignment]


@pytest.mark.parametrize("size", [0, 1, CHUNK, CHUNK + 1, 10 * CHUNK + 3])
async def test_blobs_of_any_size_round_trip(
    small: RedisModelStore, redis_client: redis.Redis, size: int
) -> None:
    ids = await append(small, 2)
    old = bytes(range(7)) * 5
    assert await small.write_checkpoint("m", 1, old, ids[0], keep=2)
    blob = bytes((i * 37 + 11) % 256 for i in range(size))
    assert await small.write_checkpoint("m", 1, blob, ids[1], keep=2)
    assert await small.load_checkpoints("m", 1) == [(ids[1], blob), (ids[0], old)]
    newest = f"acog:{{m}}:1:ckpt:{index_tokens(redis_client)[0]}"
    assert redis_client.hlen(newest) == -(-size // CHUNK)  # ceil: no chunk at all for an empty blob
    assert all(ttl == -1 for ttl in chunk_keys(redis_client).values())  # committed: nothing expires


async def test_the_default_chunk_size_is_8_mib(store: RedisModelStore, redis_client: redis.Redis) -> None:
    ids = await append(store, 1)
    blob = os.urandom(8 * 1024 * 1024 + 1)
    assert await store.write_checkpoint("m", 1, blob, ids[0], keep=1)
    key = f"acog:{{m}}:1:ckpt:{index_tokens(redis_client)[0]}"
    assert [redis_client.hstrlen(key, i) for i in range(redis_client.hlen(key))] == [8 * 1024 * 1024, 1]
    assert await store.load_checkpoints("m", 1) == [(ids[0], blob)]


async def test_chunks_are_separate_commands_that_other_clients_interleave_with(
    private_redis: PrivateRedis,
) -> None:
    """Between two chunk commands of a write in progress, another client is served, and sees only
    the checkpoints committed before; Redis counted one small command per chunk."""
    client = redis.Redis.from_url(private_redis.url)
    writer = RedisModelStore.from_url(private_redis.url, ConnectionSettings(checkpoint_chunk_bytes=1024))
    reader = RedisModelStore.from_url(private_redis.url)
    try:
        ids = await append(writer, 2)
        assert await writer.write_checkpoint("m", 1, b"old", ids[0], keep=2)
        seen: list[tuple[int, int, bool]] = []

        async def between(key: str, number: int) -> None:
            client.set("other", number)  # another connection's write, served mid-checkpoint
            visible = await reader.load_checkpoints("m", 1)
            seen.append((number, client.hlen(key), visible == [(ids[0], b"old")]))

        hook_after_chunk(writer, between)
        client.config_resetstat()
        blob = os.urandom(64 * 1024)
        assert await writer.write_checkpoint("m", 1, blob, ids[1], keep=2)
        assert seen == [(n, n + 1, True) for n in range(64)]
        assert client.get("other") == b"63"
        stats = client.info("commandstats")
        assert stats["cmdstat_hset"]["calls"] == 64  # one chunk each, none carries the blob
        assert stats["cmdstat_evalsha"]["calls"] == 2  # the check, then the commit
        assert await reader.load_checkpoints("m", 1) == [(ids[1], blob), (ids[0], b"old")]
    finally:
        await writer.close()
        await reader.close()
        client.close()


CRASHING_WRITER = """
import asyncio, sys, time
from model_store import ConnectionSettings, RedisModelStore

async def main(url, applied):
    store = RedisModelStore.from_url(url, ConnectionSettings(checkpoint_chunk_bytes=100))
    stage = store._stage_chunk
    async def staged(key, number, chunk):
        await stage(key, number, chunk)
        if number == 2:
            print("staged", flush=True)
            await asyncio.sleep(3600)  # killed here
    store._stage_chunk = staged
    await store.write_checkpoint("m", 1, b"x" * 1000, applied, keep=2)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_writer_killed_mid_checkpoint_leaves_the_previous_ones_and_its_chunks_expire(
    private_redis: PrivateRedis,
) -> None:
    client = redis.Redis.from_url(private_redis.url)
    store = RedisModelStore.from_url(private_redis.url, ConnectionSettings(checkpoint_chunk_bytes=100))
    try:
        ids = await append(store, 3)
        assert await store.write_checkpoint("m", 1, b"first", ids[0], keep=2)
        assert await store.write_checkpoint("m", 1, b"second", ids[1], keep=2)
        before = await store.load_checkpoints("m", 1)
        writer = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(CRASHING_WRITER), private_redis.url, ids[2]],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
        )
        try:
            assert writer.stdout is not None and writer.stdout.readline() == b"staged\n"
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(10)
        staged = [key for key in client.keys("acog:{m}:1:ckpt:*") if client.pttl(key) > 0]
        assert len(staged) == 1 and client.hlen(staged[0]) == 3  # three chunks, never committed
        assert await store.load_checkpoints("m", 1) == before
        assert client.llen("acog:{m}:1:ckpt_index") == 2

        # Redis drops the orphan when its TTL runs out (300 s by default; shortened here)
        client.pexpire(staged[0], 50)
        await asyncio.sleep(0.2)
        assert not client.exists(staged[0])
        assert await store.write_checkpoint("m", 1, b"third", ids[2], keep=2)
        assert await store.load_checkpoints("m", 1) == [(ids[2], b"third"), before[0]]
    finally:
        await store.close()
        client.close()


async def test_staged_chunks_have_a_ttl_and_a_failed_write_drops_them(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    ids = await append(small, 2)
    assert await small.write_checkpoint("m", 1, b"kept", ids[0], keep=2)
    ttls: list[int] = []

    async def fail_after_two(key: str, number: int) -> None:
        ttls.append(redis_client.pttl(key))
        if number == 1:
            raise ConnectionError("the connection broke")

    hook_after_chunk(small, fail_after_two)
    with pytest.raises(ConnectionError):
        await small.write_checkpoint("m", 1, b"y" * 100, ids[1], keep=2)
    assert len(ttls) == 2 and all(0 < ttl <= 300_000 for ttl in ttls)
    assert await small.load_checkpoints("m", 1) == [(ids[0], b"kept")]
    assert list(chunk_keys(redis_client).values()) == [-1]  # the staged chunks were dropped


async def test_chunks_expired_before_the_commit_are_refused(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = RedisModelStore.from_url(redis_url)
    short = RedisModelStore(
        aioredis.Redis.from_url(redis_url), checkpoint_chunk_bytes=4, checkpoint_staging_ttl_seconds=0.05
    )
    try:
        ids = await append(store, 2)
        assert await store.write_checkpoint("m", 1, b"kept", ids[0], keep=2)

        async def stall(key: str, number: int) -> None:
            if number == 2:
                await asyncio.sleep(0.2)  # the staging TTL (50 ms) runs out

        hook_after_chunk(short, stall)
        with pytest.raises(StoreError, match="expired"):
            await short.write_checkpoint("m", 1, b"z" * 12, ids[1], keep=2)
        assert await store.load_checkpoints("m", 1) == [(ids[0], b"kept")]
        assert list(chunk_keys(redis_client).values()) == [-1]
    finally:
        await store.close()
        await short.close()


async def test_keep_drops_the_chunks_of_dropped_checkpoints(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    ids = await append(small, 6)
    for i, applied in enumerate(ids):
        assert await small.write_checkpoint("m", 1, f"state {i} ".encode() * 5, applied, keep=2)
    assert [c.applied_id for c in await small.load_checkpoints("m", 1)] == [ids[5], ids[4]]
    tokens = index_tokens(redis_client)
    assert chunk_keys(redis_client) == {f"acog:{{m}}:1:ckpt:{token}": -1 for token in tokens}
    assert (await small.log_info("m", 1)).first_id == ids[4]


async def test_a_refused_checkpoint_sends_no_chunk(private: tuple[RedisModelStore, redis.Redis]) -> None:
    small, redis_client = private
    ids = await append(small, 2)
    assert await small.write_checkpoint("m", 1, b"a" * 40, ids[1], keep=2)
    redis_client.config_resetstat()
    assert not await small.write_checkpoint("m", 1, b"b" * 40, ids[0], keep=2)
    assert not await small.write_checkpoint("m", 1, b"c" * 40, ids[1], keep=2)
    assert "cmdstat_hset" not in redis_client.info("commandstats")
    assert len(chunk_keys(redis_client)) == 1


async def test_a_replica_getting_further_during_the_upload_wins(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str
) -> None:
    """Another writer commits a newer checkpoint while this one uploads: this one is refused at
    commit, changes nothing, and its staged chunks are dropped."""
    other = RedisModelStore.from_url(redis_url)
    try:
        ids = await append(small, 3)
        assert await small.write_checkpoint("m", 1, b"base", ids[0], keep=2)

        async def replica_commits(key: str, number: int) -> None:
            if number == 0:
                assert await other.write_checkpoint("m", 1, b"replica", ids[2], keep=2)

        hook_after_chunk(small, replica_commits)
        assert not await small.write_checkpoint("m", 1, b"s" * 50, ids[1], keep=2)
        assert await small.load_checkpoints("m", 1) == [(ids[2], b"replica"), (ids[0], b"base")]
        tokens = index_tokens(redis_client)
        assert chunk_keys(redis_client) == {f"acog:{{m}}:1:ckpt:{token}": -1 for token in tokens}
    finally:
        await other.close()


async def test_a_commit_retries_when_another_writer_changed_the_index(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str
) -> None:
    other = RedisModelStore.from_url(redis_url)
    try:
        ids = await append(small, 3)
        assert await small.write_checkpoint("m", 1, b"base", ids[0], keep=2)

        async def replica_commits(key: str, number: int) -> None:
            if number == 0:  # an older (but new) checkpoint lands while this one uploads
                assert await other.write_checkpoint("m", 1, b"replica", ids[1], keep=2)

        hook_after_chunk(small, replica_commits)
        blob = b"u" * 50
        assert await small.write_checkpoint("m", 1, blob, ids[2], keep=2)
        assert await small.load_checkpoints("m", 1) == [(ids[2], blob), (ids[1], b"replica")]
        tokens = index_tokens(redis_client)
        assert chunk_keys(redis_client) == {f"acog:{{m}}:1:ckpt:{token}": -1 for token in tokens}
        assert (await small.log_info("m", 1)).first_id == ids[1]
    finally:
        await other.close()


async def test_missing_chunks_make_a_checkpoint_unusable_not_silently_short(
    small: RedisModelStore, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    ids = await append(small, 2)
    assert await small.write_checkpoint("m", 1, b"o" * 40, ids[0], keep=2)
    assert await small.write_checkpoint("m", 1, b"n" * 40, ids[1], keep=2)
    redis_client.hdel(f"acog:{{m}}:1:ckpt:{index_tokens(redis_client)[0]}", "1")
    with caplog.at_level(logging.WARNING, logger="model_store.redis_store"):
        assert await small.load_checkpoints("m", 1) == [(ids[1], b""), (ids[0], b"o" * 40)]
    assert "incomplete" in caplog.text
    with pytest.raises(CodecError):  # the engine's decoder refuses it and falls back to the older one
        decode_state(b"")


async def test_iteration_fetches_a_blob_only_when_reached(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    ids = await append(small, 2)
    assert await small.write_checkpoint("m", 1, b"o" * 40, ids[0], keep=2)
    assert await small.write_checkpoint("m", 1, b"n" * 40, ids[1], keep=2)
    redis_client.config_resetstat()
    checkpoints = small.iter_checkpoints("m", 1)
    assert await anext(checkpoints) == (ids[1], b"n" * 40)
    assert redis_client.info("commandstats")["cmdstat_hget"]["calls"] == 3  # the newest's chunks only
    await checkpoints.aclose()  # type: ignore[attr-defined]


async def test_checkpoints_of_the_layout_before_chunks_still_load_and_are_replaced(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    ids = await append(small, 3)
    redis_client.rpush("acog:{m}:1:ckpt", b"legacy 1", b"legacy 0")  # newest first, like LPUSH made them
    redis_client.rpush("acog:{m}:1:ckpt_ids", ids[1], ids[0])
    assert await small.load_checkpoints("m", 1) == [(ids[1], b"legacy 1"), (ids[0], b"legacy 0")]
    assert not await small.write_checkpoint("m", 1, b"stale", ids[1], keep=2)
    assert await small.write_checkpoint("m", 1, b"chunked", ids[2], keep=2)
    assert await small.load_checkpoints("m", 1) == [(ids[2], b"chunked")]
    assert not redis_client.exists("acog:{m}:1:ckpt", "acog:{m}:1:ckpt_ids")


async def test_commits_survive_a_script_flush(small: RedisModelStore, redis_client: redis.Redis) -> None:
    ids = await append(small, 2)
    redis_client.script_flush()
    assert await small.write_checkpoint("m", 1, b"v" * 40, ids[0], keep=2)
    redis_client.script_flush()
    assert await small.write_checkpoint("m", 1, b"w" * 40, ids[1], keep=2)
    assert [c.blob for c in await small.load_checkpoints("m", 1)] == [b"w" * 40, b"v" * 40]
