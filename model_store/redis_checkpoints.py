"""The checkpoint-writer lease and the checkpoints, on Redis.

A part of :class:`~model_store.redis_store.RedisModelStore`, which sets the attributes it declares."""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any, cast

from .connection import (
    Client,
    translate_redis_errors,
)
from .keys import GenerationKeys
from .protocol import (
    NO_RETENTION,
    Checkpoint,
    LogRetention,
    Manifest,
    StoreError,
)
from .redis_layout import checkpoint_manifest
from .redis_values import (
    COMMIT_ATTEMPTS,
    checked_stream_id,
    milliseconds,
    text_of,
)

log = logging.getLogger("model_store.redis_store")


class RedisCheckpoints:
    _redis: Client
    _blocking: Client
    _lease: Any
    _commit_checkpoint: Any
    _stage_chunk_script: Any
    _chunk_bytes: int
    _staging_ttl_ms: int

    # -- checkpoints -----------------------------------------------------------------------

    async def lease(self, model: str, generation: int, holder: str, ttl_seconds: float) -> str:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("lease"):
            now = await self._lease(
                keys=[keys.writer_lease], args=[holder, milliseconds(ttl_seconds, "ttl"), "acquire"]
            )
        return text_of(now)

    async def release_lease(self, model: str, generation: int, holder: str) -> None:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("release_lease"):
            await self._lease(keys=[keys.writer_lease], args=[holder, 1, "release"])

    async def write_checkpoint(
        self,
        model: str,
        generation: int,
        blob: bytes,
        applied_id: str,
        seq: int,
        written_at: float,
        keep: int,
        holder: str,
        retain: LogRetention = NO_RETENTION,
    ) -> bool:
        """Stage ``blob`` in chunks, then commit it (see the module docstring and COMMIT_CHECKPOINT).

        The commit is refused up front, before any chunk is sent, when it would be anyway.
        """
        keys = GenerationKeys(model, generation)
        if keep < 1:
            raise ValueError(f"keep at least one checkpoint, got keep={keep}")
        applied_id = checked_stream_id(applied_id)
        token = secrets.token_hex(8)
        chunk_key = keys.checkpoint_chunks(token)
        view = memoryview(blob).cast("B")
        starts = range(0, len(view), self._chunk_bytes)

        async def commit(index: list[bytes], staged: str) -> tuple[int, Any]:
            """COMMIT_CHECKPOINT of the ``staged`` token ('' only checks), given the index last read."""
            dropped = [keys.checkpoint_chunks(checkpoint_manifest(entry)[1]) for entry in index[keep - 1 :]]
            written, detail = await self._commit_checkpoint(
                keys=[keys.checkpoint_index, keys.log, keys.writer_lease, chunk_key, *dropped],
                args=[
                    applied_id,
                    seq,
                    keep,
                    staged,
                    len(starts),
                    len(view),
                    holder,
                    round(written_at * 1000),
                    retain.entries,
                    f"{max(0, round((written_at - retain.seconds) * 1000))}-0" if retain.seconds else "",
                    *index,
                ],
            )
            return int(written), detail

        with translate_redis_errors("write_checkpoint"):
            written, detail = await commit([], "")  # only checks, and reads the index
            if written == 2:
                try:
                    for number, start in enumerate(starts):
                        await self._stage_chunk_script(
                            keys=[chunk_key],
                            args=[number, view[start : start + self._chunk_bytes], self._staging_ttl_ms],
                        )
                    for _ in range(COMMIT_ATTEMPTS):
                        written, detail = await commit(cast(list[bytes], detail), token)
                        if written != 2:
                            break
                except Exception:
                    await self._drop_staged(chunk_key)  # best effort; else the TTL drops it
                    raise
                if written == 2:
                    await self._drop_staged(chunk_key)
                    raise StoreError(
                        f"checkpoint of {model} generation {generation}: the checkpoint index kept "
                        f"changing under {COMMIT_ATTEMPTS} commits (other writers); nothing was written"
                    )
        where = f"checkpoint of {model} generation {generation} at entry {seq} ({applied_id})"
        if written == -1:
            raise StoreError(f"{where}: the log ends at {text_of(detail)}; nothing was written")
        if written == -2:
            raise StoreError(f"{where}: its staged chunks expired before the commit; nothing was written")
        if written == -3:
            raise StoreError(f"{where}: the writer lease is held by {text_of(detail)!r}, not {holder!r}")
        if written == -4:
            found = text_of(detail)
            raise StoreError(
                f"{where}: the log entry there is {'missing' if not found else f'entry {found}'}, so the "
                "state is not the log prefix it claims; nothing was written"
            )
        return written == 1

    async def _drop_staged(self, chunk_key: str) -> None:
        """Delete staged chunks that will not be committed, if Redis answers (they expire anyway)."""
        try:
            if await self._redis.pttl(chunk_key) > 0:  # never a committed checkpoint's (no TTL)
                await self._redis.unlink(chunk_key)
        except Exception as exc:  # cleanup only: the error that got us here is what matters
            log.warning("could not drop the staged checkpoint chunks %s (they expire): %s", chunk_key, exc)

    async def checkpoint_index(self, model: str, generation: int) -> list[Manifest]:
        keys = GenerationKeys(model, generation)
        with translate_redis_errors("checkpoint_index"):
            index = cast(list[bytes], await self._redis.lrange(keys.checkpoint_index, 0, -1))
        return [Manifest(applied, seq, at) for applied, _, _, _, seq, at in map(checkpoint_manifest, index)]

    async def iter_checkpoints(self, model: str, generation: int) -> AsyncIterator[Checkpoint]:
        """Retained checkpoints, newest first, each blob fetched (chunk by chunk) only when reached.

        A checkpoint that a concurrent commit dropped while this read it (its chunks are gone and
        it has left the index) is skipped, and the iteration goes on over the index as it is now:
        the commit that dropped it put a newer one first, which comes next (at most
        ``COMMIT_ATTEMPTS`` times a call; past that it is treated as damaged). A checkpoint that
        is still indexed but whose chunks are missing or do not add up to its recorded length
        comes with an empty blob, which the state codec refuses, and a warning is logged.
        """
        keys = GenerationKeys(model, generation)
        seen: set[bytes] = set()
        for reread in range(COMMIT_ATTEMPTS + 1):
            with translate_redis_errors("load_checkpoints"):
                index = cast(list[bytes], await self._redis.lrange(keys.checkpoint_index, 0, -1))
            dropped = False
            for entry in index:
                if entry in seen:
                    continue
                applied_id, token, chunks, size, seq, _ = checkpoint_manifest(entry)
                blob = await self._checkpoint_blob(keys.checkpoint_chunks(token), chunks)
                if len(blob) != size:
                    with translate_redis_errors("load_checkpoints"):
                        indexed = await self._redis.lpos(keys.checkpoint_index, text_of(entry)) is not None
                    if not indexed and reread < COMMIT_ATTEMPTS:
                        dropped = True  # replaced meanwhile: read the index again
                        break
                    log.warning(
                        "checkpoint of %s generation %d at %s is incomplete (%d of %d bytes in its "
                        "chunks); it cannot be used",
                        model,
                        generation,
                        applied_id,
                        len(blob),
                        size,
                    )
                    blob = b""
                seen.add(entry)
                yield Checkpoint(applied_id, seq, blob)
            if not dropped:
                return

    async def _checkpoint_blob(self, chunk_key: str, chunks: int) -> bytes:
        """The concatenated chunks ``"0"`` .. ``chunks - 1`` of ``chunk_key``, up to the first missing one."""
        parts: list[bytes] = []
        for number in range(chunks):
            with translate_redis_errors("load_checkpoints"):
                chunk = cast(bytes | None, await self._redis.hget(chunk_key, str(number)))
            if chunk is None:
                break
            parts.append(chunk)
        return b"".join(parts)

    async def load_checkpoints(self, model: str, generation: int) -> list[Checkpoint]:
        return [checkpoint async for checkpoint in self.iter_checkpoints(model, generation)]
