"""API keys: ``Authorization: Bearer <key>``, compared in constant time.

``ACOG_API_KEYS`` may predict, send feedback and read; ``ACOG_ADMIN_KEYS`` may also create,
replace and delete models and force checkpoints. With no keys configured the service is
open (for local use): it logs a warning at start and ``/readyz`` reports ``"auth": "open"``.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..settings import Settings

bearer = HTTPBearer(auto_error=False, description="an API key (ACOG_API_KEYS) or admin key (ACOG_ADMIN_KEYS)")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def is_open(settings: Settings) -> bool:
    return not settings.api_keys and not settings.admin_keys


def _matches(key: str, allowed: list[str]) -> bool:
    supplied = key.encode()
    found = False
    for candidate in allowed:  # no early exit: the time taken does not depend on which key matched
        found |= hmac.compare_digest(supplied, candidate.encode())
    return found


def key_allowed(settings: Settings, authorization: str | None, admin: bool) -> bool:
    """Whether an ``Authorization`` header value carries a key allowed to do this."""
    scheme, _, key = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not key:
        return False
    return _matches(key.strip(), settings.admin_keys if admin else [*settings.api_keys, *settings.admin_keys])


def _check(request: Request, credentials: HTTPAuthorizationCredentials | None, admin: bool) -> None:
    settings: Settings = request.app.state.settings
    if is_open(settings):
        return
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            401, "missing Authorization: Bearer <key>", headers={"WWW-Authenticate": "Bearer"}
        )
    allowed = settings.admin_keys if admin else [*settings.api_keys, *settings.admin_keys]
    if not _matches(credentials.credentials, allowed):
        raise HTTPException(
            403 if _matches(credentials.credentials, settings.api_keys) else 401,
            "this key may not do that" if admin else "unknown API key",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def require_key(request: Request, credentials: Credentials) -> None:
    """Predict, feedback and reads."""
    _check(request, credentials, admin=False)


async def require_admin(request: Request, credentials: Credentials) -> None:
    """Model management and forced checkpoints."""
    _check(request, credentials, admin=True)
