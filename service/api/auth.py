"""API keys: ``Authorization: Bearer <key>``, compared in constant time.

``ACOG_API_KEYS`` may predict, send feedback and read; ``ACOG_ADMIN_KEYS`` may also create,
replace and delete models and force checkpoints. With no keys configured the service is
open (for local use): it logs a warning at start and ``/readyz`` reports ``"auth": "open"``.

A supplied key is compared with every configured key, with no early exit, through
``hmac.compare_digest`` over SHA-256 digests: the time taken depends neither on which key
matched nor on how much of a key was right, nor on the keys' lengths. Keys are printable
ASCII without spaces or commas (checked at start, see :mod:`service.settings`).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..settings import Settings

bearer = HTTPBearer(auto_error=False, description="an API key (ACOG_API_KEYS) or admin key (ACOG_ADMIN_KEYS)")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def is_open(settings: Settings) -> bool:
    return not settings.api_keys and not settings.admin_keys


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", errors="surrogateescape")).digest()


def _matches(key: str, allowed: list[str]) -> bool:
    supplied = _digest(key.strip())
    found = False
    for candidate in allowed:  # no early exit: the time taken does not depend on which key matched
        found |= hmac.compare_digest(supplied, _digest(candidate))
    return found


def key_allowed(settings: Settings, authorization: str | None, admin: bool) -> bool:
    """Whether an ``Authorization`` header value carries a key allowed to do this."""
    scheme, _, key = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not key:
        return False
    return _matches(key, settings.admin_keys if admin else [*settings.api_keys, *settings.admin_keys])


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
        if admin and _matches(credentials.credentials, settings.api_keys):
            raise HTTPException(
                403,
                "this API key may not do that: managing models takes an admin key (ACOG_ADMIN_KEYS)",
                headers={"WWW-Authenticate": "Bearer"},
            )
        raise HTTPException(401, "unknown API key", headers={"WWW-Authenticate": "Bearer"})


async def require_key(request: Request, credentials: Credentials) -> None:
    """Predict, feedback and reads."""
    _check(request, credentials, admin=False)


async def require_admin(request: Request, credentials: Credentials) -> None:
    """Model management and forced checkpoints."""
    _check(request, credentials, admin=True)
