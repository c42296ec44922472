"""service/allocator.py: with glibc's mmap threshold pinned, freed large buffers leave the process.

Each case runs in a fresh interpreter (the allocator's state is per process): short-lived
8 MiB buffers beside small long-lived ones (the pattern of checkpoint chunks next to model
state), then 200 MiB of 4 MiB buffers, touched and freed. With glibc's default (dynamic)
threshold those pages stay in the process; pinned, they go back to the system.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from service.allocator import mallopt

PROBE = """
import sys
from service.allocator import pin_mmap_threshold

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024

if sys.argv[1] == "pinned":
    assert pin_mmap_threshold()
keep = []
for _ in range(40):
    chunk = bytearray(8 << 20)
    keep.append(bytearray(64 << 10))
    del chunk
base = rss()
buffers = [bytearray(4 << 20) for _ in range(50)]
for b in buffers:
    b[::4096] = b"x" * len(b[::4096])
keep.append(bytearray(64 << 10))
del buffers
print(rss() - base)
"""


def retained_after_free(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc and glibc")
def test_pinned_threshold_returns_freed_buffers_to_the_system() -> None:
    if mallopt() is None:
        pytest.skip("this C library has no mallopt (not glibc)")
    mib = 1 << 20
    assert retained_after_free("default") > 100 * mib  # glibc's dynamic threshold keeps them
    assert retained_after_free("pinned") < 20 * mib
