"""The checkpoint writer's snapshot borrows the learner's arrays instead of copying them.

It encodes to the same bytes as a copying snapshot, and while it is held the model refuses to
learn (the guard the old single-writer comment only promised).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from service.engine.runtime import ModelRuntime
from service.learners import StateBorrowed
from service.model_config import ModelConfig

from .test_checkpoint_roundtrip import entries


@pytest.mark.parametrize("algorithm", ["acog", "ssacog"])  # both default learners: eta and loss "auto"
def test_a_borrowed_snapshot_encodes_like_a_copy_and_blocks_updates_until_released(algorithm: str) -> None:
    config = ModelConfig(n_features=6, algorithm=algorithm, sketch_size=2).pinned()
    runtime = ModelRuntime("m", 1, config, 2**29, window=25)
    log = entries(30, seed=3)
    for entry in log[:20]:
        runtime.apply(entry)
    copied = replace(runtime.snapshot(), written_at=0.0).encode()
    with runtime.borrowed_snapshot() as snapshot:
        assert replace(snapshot, written_at=0.0).encode() == copied
        member = snapshot.learner["members"]["0"]
        assert not any(a.flags.writeable for a in member.values() if isinstance(a, np.ndarray))
        with pytest.raises(StateBorrowed):
            runtime.apply(log[20])
        assert runtime.version == 20
    for entry in log[20:]:
        runtime.apply(entry)
    assert runtime.version == 30
