"""API keys: ``Authorization: Bearer <key>``, compared in constant time.

``ACOG_API_KEYS`` may predict, send feedback and read; ``ACOG_ADMIN_KEYS`` may also create,
replace and delete models and force checkpoints. With no keys configured the service is
open (for local use): it logs a warning at start and ``/readyz`` reports ``"auth": "open"``.

A supplied key is hashed once and compared with every configured key's digest (computed once,
at start: :class:`Keys`), with no early exit, through ``hmac.compare_digest`` over SHA-256
digests: the time taken depends neither on which key matched nor on how much of a key was
right, nor on the keys' lengths. Keys are printable ASCII without spaces or commas (checked at
start, see :mod:`service.settings`).
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


MISSING = "missing Authorization: Bearer <key>"
UNKNOWN = "unknown API key"
NOT_ADMIN = "this API key may not do that: managing models takes an admin key (ACOG_ADMIN_KEYS)"


class Keys:
    """The configured keys as SHA-256 digests, computed once at start.

    :meth:`refusal` hashes the supplied key once and compares its digest with every configured
    one, API and admin keys alike, with no early exit (``hmac.compare_digest``): the time taken
    depends neither on which key matched, nor on how much of a key was right, nor on the keys'
    lengths.
    """

    def __init__(self, api_keys: list[str], admin_keys: list[str]) -> None:
        self.open = not api_keys and not admin_keys
        self._digests = [(_digest(key), False) for key in api_keys] + [
            (_digest(key), True) for key in admin_keys
        ]

    @classmethod
    def of(cls, settings: Settings) -> Keys:
        return cls(settings.api_keys, settings.admin_keys)

    def refusal(self, authorization: str | None, admin: bool) -> tuple[int, str] | None:
        """Why an ``Authorization`` header value may not do this (``(401 | 403, message)``), or
        None when it may (or when the service is open)."""
        if self.open:
            return None
        scheme, _, key = (authorization or "").partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            return 401, MISSING
        supplied = _digest(key)
        api = found_admin = False
        for candidate, is_admin in self._digests:  # no early exit
            match = hmac.compare_digest(supplied, candidate)
            found_admin |= match and is_admin
            api |= match and not is_admin
        if found_admin or (api and not admin):
            return None
        return (403, NOT_ADMIN) if api else (401, UNKNOWN)


def key_allowed(keys: Keys, authorization: str | None, admin: bool) -> bool:
    """Whether an ``Authorization`` header value carries a key allowed to do this."""
    return keys.refusal(authorization, admin) is None


def _check(request: Request, credentials: HTTPAuthorizationCredentials | None, admin: bool) -> None:
    keys: Keys = request.app.state.keys
    if keys.open:
        return
    header = None if credentials is None else f"{credentials.scheme} {credentials.credentials}"
    refusal = keys.refusal(header, admin)
    if refusal is not None:
        raise HTTPException(refusal[0], refusal[1], headers={"WWW-Authenticate": "Bearer"})


async def require_key(request: Request, credentials: Credentials) -> None:
    """Reads (the hot routes check keys in :mod:`service.api.hot` instead)."""
    _check(request, credentials, admin=False)


async def require_admin(request: Request, credentials: Credentials) -> None:
    """Model management and forced checkpoints."""
    _check(request, credentials, admin=True)
