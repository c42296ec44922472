"""Two replicas starting together on an empty store: the one that read no identity before the
other created it must not take the new identity key for lost data."""

from __future__ import annotations

import pytest

from model_store import MemoryModelStore
from model_store.protocol import StoreError, StoreIdentity
from service.engine.lifecycle import check_store_identity

pytestmark = pytest.mark.anyio


class RacedStore(MemoryModelStore):
    """A store whose identity another replica creates right after this one's first read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def identity(self, create: bool) -> StoreIdentity | None:
        self.reads += 1
        if self.reads == 1:
            found = await super().identity(create=False)
            await super().identity(create=True)  # the other replica, between the two reads
            return found
        return await super().identity(create)

    async def leftover_key(self) -> str | None:
        return "acog:{acog}:identity" if await super().identity(create=False) else None


async def test_an_identity_created_by_a_replica_starting_beside_is_not_lost_data() -> None:
    store = RacedStore()
    identity = await check_store_identity(store, expected_epoch=None)
    assert identity is not None and identity == await store.identity(create=False)


async def test_keys_without_any_identity_are_still_refused() -> None:
    class Leftovers(MemoryModelStore):
        async def leftover_key(self) -> str | None:
            return "acog:{cards}:gen"

    with pytest.raises(StoreError, match="lost part of its data"):
        await check_store_identity(Leftovers(), expected_epoch=None)
