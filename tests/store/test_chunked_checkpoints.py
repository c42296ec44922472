"""Chunked checkpoints: a blob goes to Redis as several commands, and is committed atomically.

The layout under test (docs/store-contract.md): ``acog:{m}:<gen>:ckpt_index`` lists one
``"<applied id> <token> <chunks> <bytes> <seq> <state time ms>"`` manifest per retained checkpoint,
newest first; ``acog:{m}:<gen>:ckpt:<token>`` is a hash of the blob's chunks, with a TTL until
committed. Every checkpoint here is written by the lease holder ``HOLDER`` of model m generation 1.
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
from typing import Any, cast

import pytest
import redis
import redis.asyncio as aioredis

from model_store import Appended, CodecError, ConnectionSettings, RedisModelStore, StoreError, decode_state
from model_store.redis_values import COMMIT_ATTEMPTS

from ..support.private_redis import PrivateRedis
from .factories import HOLDER, append, new_model

pytestmark = pytest.mark.anyio

CHUNK = 16
ROOT = Path(__file__).resolve().parents[2]


async def start(store: RedisModelStore, n: int) -> list[Appended]:
    """Create model m, take its writer lease for HOLDER, append ``n`` entries; their positions."""
    await new_model(store)
    assert await store.lease("m", 1, HOLDER, 60) == HOLDER
    return await append(store, n)


async def checkpoint(
    store: RedisModelStore, blob: bytes, at: Appended, keep: int = 2, holder: str = HOLDER
) -> bool:
    assert at.seq is not None
    return await store.write_checkpoint("m", 1, blob, at.stream_id, at.seq, time.time(), keep, holder)


def stored(at: Appended, blob: bytes) -> tuple[str, int | None, bytes]:
    """A checkpoint as load_checkpoints gives it."""
    return (at.stream_id, at.seq, blob)


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


def chunk_keys(client: redis.Redis) -> dict[str, int]:
    """Every chunk hash of model m generation 1 -> its PTTL (-1: committed, no TTL)."""
    keys = cast(list[bytes], client.keys("acog:{m}:1:ckpt:*"))  # a test database: small
    return {key.decode(): client.pttl(key) for key in keys}


def index_tokens(client: redis.Redis) -> list[str]:
    index = cast(list[bytes], client.lrange("acog:{m}:1:ckpt_index", 0, -1))
    return [entry.decode().split(" ")[1] for entry in index]


def hook_after_chunk(store: RedisModelStore, after: Callable[[str, int], Awaitable[None]]) -> None:
    """Run ``after(chunk key, chunk number)`` once each chunk command of ``store`` has been answered."""
    stage = store._stage_chunk_script

    async def staged(keys: list[str], args: list[Any], client: Any = None) -> Any:
        answer = await stage(keys=keys, args=args)
        await after(keys[0], int(args[0]))
        return answer

    store._stage_chunk_script = staged  # type: ignore[assignment]


@pytest.mark.parametrize("size", [0, 1, CHUNK, CHUNK + 1, 10 * CHUNK + 3])
async def test_blobs_of_any_size_round_trip(
    small: RedisModelStore, redis_client: redis.Redis, size: int
) -> None:
    entries = await start(small, 2)
    old = bytes(range(7)) * 5
    assert await checkpoint(small, old, entries[0])
    blob = bytes((i * 37 + 11) % 256 for i in range(size))
    assert await checkpoint(small, blob, entries[1])
    assert await small.load_checkpoints("m", 1) == [stored(entries[1], blob), stored(entries[0], old)]
    newest = f"acog:{{m}}:1:ckpt:{index_tokens(redis_client)[0]}"
    assert redis_client.hlen(newest) == -(-size // CHUNK)  # ceil: no chunk at all for an empty blob
    assert all(ttl == -1 for ttl in chunk_keys(redis_client).values())  # committed: nothing expires


async def test_the_default_chunk_size_is_8_mib(store: RedisModelStore, redis_client: redis.Redis) -> None:
    (entry,) = await start(store, 1)
    blob = os.urandom(8 * 1024 * 1024 + 1)
    assert await checkpoint(store, blob, entry, keep=1)
    key = f"acog:{{m}}:1:ckpt:{index_tokens(redis_client)[0]}"
    assert [redis_client.hstrlen(key, i) for i in range(redis_client.hlen(key))] == [8 * 1024 * 1024, 1]
    assert await store.load_checkpoints("m", 1) == [stored(entry, blob)]


async def test_chunks_are_separate_commands_that_other_clients_interleave_with(
    private_redis: PrivateRedis,
) -> None:
    """Between two chunk commands of a write in progress, another client is served, and sees only
    the checkpoints committed before; Redis counted one small command per chunk."""
    client = redis.Redis.from_url(private_redis.url)
    writer = RedisModelStore.from_url(private_redis.url, ConnectionSettings(checkpoint_chunk_bytes=1024))
    reader = RedisModelStore.from_url(private_redis.url)
    try:
        entries = await start(writer, 2)
        assert await checkpoint(writer, b"old", entries[0])
        seen: list[tuple[int, int, bool]] = []

        async def between(key: str, number: int) -> None:
            client.set("other", number)  # another connection's write, served mid-checkpoint
            visible = await reader.load_checkpoints("m", 1)
            seen.append((number, client.hlen(key), visible == [stored(entries[0], b"old")]))

        hook_after_chunk(writer, between)
        client.config_resetstat()
        blob = os.urandom(64 * 1024)
        assert await checkpoint(writer, blob, entries[1])
        assert seen == [(n, n + 1, True) for n in range(64)]
        assert client.get("other") == b"63"
        stats = client.info("commandstats")
        assert stats["cmdstat_hset"]["calls"] == 64  # one chunk each, none carries the blob
        assert stats["cmdstat_evalsha"]["calls"] == 64 + 2  # the chunks, the check, then the commit
        assert await reader.load_checkpoints("m", 1) == [stored(entries[1], blob), stored(entries[0], b"old")]
    finally:
        await writer.close()
        await reader.close()
        client.close()


CRASHING_WRITER = """
import asyncio, sys, time
from model_store import ConnectionSettings, RedisModelStore

async def main(url, applied, seq, holder):
    store = RedisModelStore.from_url(url, ConnectionSettings(checkpoint_chunk_bytes=100))
    stage = store._stage_chunk_script
    async def staged(keys, args, client=None):
        answer = await stage(keys=keys, args=args)
        if int(args[0]) == 2:
            print("staged", flush=True)
            await asyncio.sleep(3600)  # killed here
        return answer
    store._stage_chunk_script = staged
    await store.write_checkpoint("m", 1, b"x" * 1000, applied, int(seq), time.time(), 2, holder)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_a_writer_killed_mid_checkpoint_leaves_the_previous_ones_and_its_chunks_expire(
    private_redis: PrivateRedis,
) -> None:
    client = redis.Redis.from_url(private_redis.url)
    store = RedisModelStore.from_url(private_redis.url, ConnectionSettings(checkpoint_chunk_bytes=100))
    try:
        entries = await start(store, 3)
        assert await checkpoint(store, b"first", entries[0])
        assert await checkpoint(store, b"second", entries[1])
        before = await store.load_checkpoints("m", 1)
        writer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(CRASHING_WRITER),
                private_redis.url,
                entries[2].stream_id,
                str(entries[2].seq),
                HOLDER,
            ],
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
        assert await checkpoint(store, b"third", entries[2])
        assert await store.load_checkpoints("m", 1) == [stored(entries[2], b"third"), before[0]]
    finally:
        await store.close()
        client.close()


async def test_staged_chunks_have_a_ttl_and_a_failed_write_drops_them(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    entries = await start(small, 2)
    assert await checkpoint(small, b"kept", entries[0])
    ttls: list[int] = []

    async def fail_after_two(key: str, number: int) -> None:
        ttls.append(redis_client.pttl(key))
        if number == 1:
            raise ConnectionError("the connection broke")

    hook_after_chunk(small, fail_after_two)
    with pytest.raises(ConnectionError):
        await checkpoint(small, b"y" * 100, entries[1])
    assert len(ttls) == 2 and all(0 < ttl <= 300_000 for ttl in ttls)
    assert await small.load_checkpoints("m", 1) == [stored(entries[0], b"kept")]
    assert list(chunk_keys(redis_client).values()) == [-1]  # the staged chunks were dropped


async def test_chunks_expired_before_the_commit_are_refused(
    redis_client: redis.Redis, redis_url: str
) -> None:
    store = RedisModelStore.from_url(redis_url)
    short = RedisModelStore(
        aioredis.Redis.from_url(redis_url), checkpoint_chunk_bytes=4, checkpoint_staging_ttl_seconds=0.05
    )
    try:
        entries = await start(store, 2)
        assert await checkpoint(store, b"kept", entries[0])

        async def stall(key: str, number: int) -> None:
            if number == 2:
                await asyncio.sleep(0.2)  # the staging TTL (50 ms) runs out

        hook_after_chunk(short, stall)
        with pytest.raises(StoreError, match="expired"):
            await checkpoint(short, b"z" * 12, entries[1])
        assert await store.load_checkpoints("m", 1) == [stored(entries[0], b"kept")]
        assert list(chunk_keys(redis_client).values()) == [-1]
    finally:
        await store.close()
        await short.close()


async def test_keep_drops_the_chunks_of_dropped_checkpoints(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    entries = await start(small, 6)
    for i, at in enumerate(entries):
        assert await checkpoint(small, f"state {i} ".encode() * 5, at)
    assert [c.applied_id for c in await small.load_checkpoints("m", 1)] == [
        entries[5].stream_id,
        entries[4].stream_id,
    ]
    tokens = index_tokens(redis_client)
    assert chunk_keys(redis_client) == {f"acog:{{m}}:1:ckpt:{token}": -1 for token in tokens}
    assert [e.seq for e in await small.read_log("m", 1, "0-0", 10)] == [5, 6]


async def test_a_refused_checkpoint_sends_no_chunk(private: tuple[RedisModelStore, redis.Redis]) -> None:
    """Whatever refuses it (stale, not the lease holder, not the prefix it claims), nothing is
    uploaded first."""
    small, redis_client = private
    entries = await start(small, 2)
    assert await checkpoint(small, b"a" * 40, entries[1])
    redis_client.config_resetstat()
    assert not await checkpoint(small, b"b" * 40, entries[0])
    assert not await checkpoint(small, b"c" * 40, entries[1])
    await small.lease("m", 1, HOLDER, 60)
    more = await append(small, 1)
    with pytest.raises(StoreError, match="lease"):
        await checkpoint(small, b"d" * 40, more[0], holder="not the holder")
    with pytest.raises(StoreError, match="prefix"):
        await checkpoint(small, b"e" * 40, Appended(more[0].stream_id, 7))
    assert "cmdstat_hset" not in redis_client.info("commandstats")
    assert len(chunk_keys(redis_client)) == 1


async def test_a_replica_getting_further_during_the_upload_wins(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str
) -> None:
    """The lease lapses while this writer uploads, another replica takes it and commits a newer
    checkpoint: this one is refused at commit, changes nothing, and its staged chunks are dropped."""
    other = RedisModelStore.from_url(redis_url)
    try:
        entries = await start(small, 3)
        assert await checkpoint(small, b"base", entries[0])

        async def replica_commits(key: str, number: int) -> None:
            if number == 0:
                redis_client.delete("acog:{m}:1:writer")  # the lease lapsed
                assert await other.lease("m", 1, "replica-b", 60) == "replica-b"
                assert await checkpoint(other, b"replica", entries[2], holder="replica-b")

        hook_after_chunk(small, replica_commits)
        assert not await checkpoint(small, b"s" * 50, entries[1])
        assert await small.load_checkpoints("m", 1) == [
            stored(entries[2], b"replica"),
            stored(entries[0], b"base"),
        ]
        tokens = index_tokens(redis_client)
        assert chunk_keys(redis_client) == {f"acog:{{m}}:1:ckpt:{token}": -1 for token in tokens}
    finally:
        await other.close()


async def test_a_writer_that_lost_the_lease_during_the_upload_is_fenced_off(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str
) -> None:
    """The lease moves to another replica while this writer uploads: its commit is refused (the
    other one is the writer now), nothing changes, and its staged chunks are dropped."""
    other = RedisModelStore.from_url(redis_url)
    try:
        entries = await start(small, 2)
        assert await checkpoint(small, b"base", entries[0])

        async def lease_moves(key: str, number: int) -> None:
            if number == 0:
                redis_client.delete("acog:{m}:1:writer")
                assert await other.lease("m", 1, "replica-b", 60) == "replica-b"

        hook_after_chunk(small, lease_moves)
        with pytest.raises(StoreError, match="replica-b"):
            await checkpoint(small, b"s" * 50, entries[1])
        assert await small.load_checkpoints("m", 1) == [stored(entries[0], b"base")]
        assert list(chunk_keys(redis_client).values()) == [-1]
    finally:
        await other.close()


async def test_a_commit_retries_when_the_index_changed_meanwhile(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str
) -> None:
    """Another commit of the same lease holder (an older but new checkpoint) lands while this one
    uploads: the commit retries with the new index and drops the right chunks."""
    other = RedisModelStore.from_url(redis_url)
    try:
        entries = await start(small, 3)
        assert await checkpoint(small, b"base", entries[0])

        async def replica_commits(key: str, number: int) -> None:
            if number == 0:
                assert await checkpoint(other, b"replica", entries[1])

        hook_after_chunk(small, replica_commits)
        blob = b"u" * 50
        assert await checkpoint(small, blob, entries[2])
        assert await small.load_checkpoints("m", 1) == [
            stored(entries[2], blob),
            stored(entries[1], b"replica"),
        ]
        tokens = index_tokens(redis_client)
        assert chunk_keys(redis_client) == {f"acog:{{m}}:1:ckpt:{token}": -1 for token in tokens}
        assert [e.seq for e in await small.read_log("m", 1, "0-0", 10)] == [2, 3]
    finally:
        await other.close()


async def test_missing_chunks_make_a_checkpoint_unusable_not_silently_short(
    small: RedisModelStore, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    entries = await start(small, 2)
    assert await checkpoint(small, b"o" * 40, entries[0])
    assert await checkpoint(small, b"n" * 40, entries[1])
    redis_client.hdel(f"acog:{{m}}:1:ckpt:{index_tokens(redis_client)[0]}", "1")
    with caplog.at_level(logging.WARNING, logger="model_store.redis_store"):
        assert await small.load_checkpoints("m", 1) == [
            stored(entries[1], b""),
            stored(entries[0], b"o" * 40),
        ]
    assert "incomplete" in caplog.text
    with pytest.raises(CodecError):  # the engine's decoder refuses it and falls back to the older one
        decode_state(b"")


async def test_iteration_fetches_a_blob_only_when_reached(
    small: RedisModelStore, redis_client: redis.Redis
) -> None:
    entries = await start(small, 2)
    assert await checkpoint(small, b"o" * 40, entries[0])
    assert await checkpoint(small, b"n" * 40, entries[1])
    redis_client.config_resetstat()
    checkpoints = small.iter_checkpoints("m", 1)
    assert await anext(checkpoints) == stored(entries[1], b"n" * 40)
    assert redis_client.info("commandstats")["cmdstat_hget"]["calls"] == 3  # the newest's chunks only
    await checkpoints.aclose()  # type: ignore[attr-defined]


async def test_commits_survive_a_script_flush(small: RedisModelStore, redis_client: redis.Redis) -> None:
    entries = await start(small, 2)
    redis_client.script_flush()
    assert await checkpoint(small, b"v" * 40, entries[0])
    redis_client.script_flush()
    assert await checkpoint(small, b"w" * 40, entries[1])
    assert [c.blob for c in await small.load_checkpoints("m", 1)] == [b"w" * 40, b"v" * 40]


async def test_a_checkpoint_replaced_while_it_is_read_gives_way_to_the_newer_one(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str
) -> None:
    """A recovering replica reads the index (one checkpoint kept), then the writer commits a newer
    one, which drops the chunks the reader is about to fetch: the reader gets the newer checkpoint,
    not an empty blob (with one checkpoint kept and the log trimmed, it would have nothing else)."""
    other = RedisModelStore.from_url(redis_url)
    try:
        entries = await start(small, 3)
        assert await checkpoint(small, b"o" * 40, entries[0], keep=1)
        fetch = small._redis.hget
        replaced = False

        async def hget_after_a_commit(key: str, field: str) -> Any:
            nonlocal replaced
            if not replaced:
                replaced = True
                assert await checkpoint(other, b"n" * 40, entries[1], keep=1)
            return await fetch(key, field)

        small._redis.hget = hget_after_a_commit  # type: ignore[method-assign]
        assert await small.load_checkpoints("m", 1) == [stored(entries[1], b"n" * 40)]
        assert replaced
    finally:
        await other.close()


async def test_a_checkpoint_replaced_at_every_read_is_given_up_after_a_bounded_number_of_rereads(
    small: RedisModelStore, redis_client: redis.Redis, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The re-reading has a bound: a writer that replaces the checkpoint before each read makes
    the iteration give up after COMMIT_ATTEMPTS re-reads, yielding the last one read as damaged
    (an empty blob the codec refuses), instead of following the writer for ever."""
    other = RedisModelStore.from_url(redis_url)
    try:
        entries = await start(small, COMMIT_ATTEMPTS + 3)
        assert await checkpoint(small, b"c" * 40, entries[0], keep=1)
        fetch = small._redis.hget
        commits = 0

        async def hget_after_a_commit(key: str, field: str) -> Any:
            nonlocal commits
            if field == "0":
                commits += 1
                assert await checkpoint(other, b"c" * 40, entries[commits], keep=1)
            return await fetch(key, field)

        small._redis.hget = hget_after_a_commit  # type: ignore[method-assign]
        with caplog.at_level(logging.WARNING, logger="model_store.redis_store"):
            assert await small.load_checkpoints("m", 1) == [stored(entries[COMMIT_ATTEMPTS], b"")]
        assert commits == COMMIT_ATTEMPTS + 1 and "incomplete" in caplog.text
    finally:
        await other.close()
