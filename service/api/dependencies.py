"""Shared handles for the routers: the engine and the settings live on ``app.state``.

Every dependency is ``async def``: FastAPI runs a plain ``def`` dependency in a thread pool,
and that hand-off cost more than the whole prediction (measured: 1.3k -> see docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..engine import Engine
from ..settings import Settings
from .hot import engine_of


async def get_engine(request: Request) -> Engine:
    return engine_of(request.scope)


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


EngineDep = Annotated[Engine, Depends(get_engine)]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def tag_model(request: Request, model: str | None) -> None:
    """Name the model a request is about, for the ``model`` label of the request histogram."""
    request.state.model = model or ""
