"""The app factory that ``acog serve --workers N`` hands uvicorn, which imports it by name in each
worker process: like every process entry point, it configures the kernel cache
(:func:`service.jit_cache.configure`) before anything imports the learners, so each worker loads
the compiled kernels from disk instead of compiling them again."""

from . import jit_cache

jit_cache.configure()

from fastapi import FastAPI  # noqa: E402

from .api import create_app as create_service_app  # noqa: E402  (the cache must be configured first)


def create_app() -> FastAPI:
    """A worker's app: it accepts connections from the shared socket only once it is ready, so a
    request never lands on a worker that is still starting while another one serves."""
    return create_service_app(listen_while_starting=False)


__all__ = ["create_app"]
