"""The OpenAPI document, generated from the app (``acog export-openapi``; checked for drift in tests)."""

from __future__ import annotations

from .api import create_app
from .settings import Settings


def document() -> dict[str, object]:
    return create_app(Settings(redis_url="redis://unused")).openapi()
