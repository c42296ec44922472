"""Benchmarks of acog-service against peer libraries (river, Vowpal Wabbit, scikit-learn).

Every ``python -m bench.<name>`` is a process entry point, so this package configures the
kernels' disk cache (:func:`service.jit_cache.configure`) before any of its modules imports
the learners; nothing else is imported here, so ``import bench`` stays cheap. The peer
adapters live in :mod:`bench.peers` and need the ``[bench]`` extras (river, vowpalwabbit,
scikit-learn).
"""

from service import jit_cache

jit_cache.configure()
