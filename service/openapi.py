"""The OpenAPI document, generated from the app (``acog export-openapi``; checked for drift in tests)."""

from __future__ import annotations

import yaml

from .api import create_app
from .settings import Settings


def document() -> dict[str, object]:
    return create_app(Settings(redis_url="redis://unused")).openapi()


def export() -> str:
    return yaml.safe_dump(document(), sort_keys=False, allow_unicode=True, width=100)
