"""The app factory that ``acog serve --workers N`` hands uvicorn, which imports it by name in each
worker process: like every process entry point, it configures the kernel cache
(:func:`service.jit_cache.configure`) before anything imports the learners, so each worker loads
the compiled kernels from disk instead of compiling them again."""

from . import jit_cache

jit_cache.configure()

from .api import create_app  # noqa: E402  (the cache must be configured first)

__all__ = ["create_app"]
