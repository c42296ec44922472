"""The HTTP and WebSocket API: thin routers over the engine."""

from .app import create_app

__all__ = ["create_app"]
