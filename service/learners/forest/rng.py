"""SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators", 2014): the
random stream of the forest, one 64-bit counter per tree kept in the learner's state.

Draw ``k`` of a stream whose counter is ``c`` is ``mix(c + k * GAMMA)`` (mod 2^64), with ``mix`` the
MurmurHash3 finaliser variant below, so the stream after ``load_state`` continues exactly where it
stopped: the counter *is* the position. A uniform in ``[0, 1)`` is the top 53 bits times 2^-53.
Tree ``t`` of a forest seeded ``s`` starts at ``mix(s + (t + 1) * GAMMA)``, so the trees' streams
are far apart.
"""

from __future__ import annotations

import numpy as np

from ...jit_cache import kernel

GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_MASK = (1 << 64) - 1
_TWO_M53 = 2.0**-53


def mix_int(z: int) -> int:
    """The SplitMix64 finaliser on a Python int (for seeding and for the reference)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def initial_counters(seed: int, n_trees: int) -> np.ndarray:
    """The counter of each tree's stream for a forest seeded ``seed``."""
    return np.array([mix_int((seed + (t + 1) * int(GAMMA)) & _MASK) for t in range(n_trees)], dtype=np.uint64)


def uniform_int(counter: int) -> tuple[float, int]:
    """``(u, counter')``: the next uniform of a stream, in pure Python (the reference's draw)."""
    counter = (counter + int(GAMMA)) & _MASK
    return (mix_int(counter) >> 11) * _TWO_M53, counter


@kernel
def uniform(rng: np.ndarray, t: int) -> float:
    """The next uniform in ``[0, 1)`` of stream ``t``; advances ``rng[t]``."""
    z = rng[t] + GAMMA
    rng[t] = z
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    z = z ^ (z >> _S31)
    return float(z >> _S11) * _TWO_M53
