"""Benchmarks of acog-service against peer libraries (river, Vowpal Wabbit, scikit-learn).

Nothing is imported here, so ``import bench`` stays cheap; the peer adapters live in
:mod:`bench.peers` and need the ``[bench]`` extras (river, vowpalwabbit, scikit-learn).
"""
