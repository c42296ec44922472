"""Exceptions of the client: one per kind of refusal, each carrying the server's field and message.

Every refusal of the service has FastAPI's shape, ``{"detail": [{"loc", "msg", "type"}]}``
(WebSocket error replies carry the same ``detail``). :func:`error_from` turns one into the
exception for its status: the first detail gives :attr:`ApiError.field` (the ``loc``
without its ``body``/``path``/... prefix, joined by dots: ``features.dense.2``),
:attr:`ApiError.message` and :attr:`ApiError.kind`. A 409 whose type is ``label_conflict``
is a :class:`LabelConflict`: a different label for a prediction that was already labelled,
which the client never retries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

LOCATIONS = frozenset({"body", "path", "query", "header", "server", "cookie"})
"""First ``loc`` parts that say where a field was, not which field it was."""


@dataclass(frozen=True)
class ErrorDetail:
    """One entry of a refusal's ``detail``."""

    loc: tuple[str | int, ...]
    msg: str
    type: str

    @property
    def field(self) -> str:
        parts = list(self.loc)
        if parts and parts[0] in LOCATIONS:
            parts = parts[1:]
        return ".".join(str(p) for p in parts)


class AcogError(Exception):
    """Base of every exception the client raises."""


class ConnectionFailed(AcogError):
    """The service could not be reached (or the connection dropped) and retrying did not help,
    or the call was not safe to retry after its outcome became unknown."""


class ApiError(AcogError):
    """The service refused a request. ``status`` is the HTTP status (or the status a WebSocket
    reply carries), ``detail`` the server's list of problems, ``retry_after`` its
    ``Retry-After`` in seconds, if any."""

    def __init__(
        self, status: int, detail: tuple[ErrorDetail, ...], retry_after: float | None = None
    ) -> None:
        self.status = status
        self.detail = detail
        self.retry_after = retry_after
        first = detail[0] if detail else ErrorDetail((), f"HTTP {status}", "http")
        super().__init__(f"{status} {first.field or '(request)'}: {first.msg}")

    @property
    def field(self) -> str:
        """The field the first problem is about, e.g. ``features.dense.2`` or ``prediction_id``."""
        return self.detail[0].field if self.detail else ""

    @property
    def message(self) -> str:
        return self.detail[0].msg if self.detail else ""

    @property
    def kind(self) -> str:
        """The problem's ``type``: ``unknown``, ``expired``, ``store_unavailable``, ..."""
        return self.detail[0].type if self.detail else ""


class InvalidRequest(ApiError):
    """400 or 422: the request (a field of it) is not valid; nothing was changed."""


class Unauthorized(ApiError):
    """401: no API key, or an unknown one."""


class Forbidden(ApiError):
    """403: the key may not do this (managing models takes an admin key)."""


class NotFound(ApiError):
    """404: no such model, or a prediction id that is unknown or expired (see :attr:`kind`)."""


class Conflict(ApiError):
    """409: the request contradicts the model's current state."""


class LabelConflict(Conflict):
    """409 ``label_conflict``: this prediction was already labelled with a different label."""


class Gone(ApiError):
    """410: the prediction's model was replaced or deleted since it was made."""


class TooLarge(ApiError):
    """413: a body, batch or message over one of the service's limits (named in the message)."""


class RateLimited(ApiError):
    """429: more messages a second than the connection may send."""


class Unavailable(ApiError):
    """503 that outlasted the retries (the store is down, or the model cannot serve)."""


class ServerError(ApiError):
    """Any other 5xx."""


BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    413: TooLarge,
    422: InvalidRequest,
    429: RateLimited,
    503: Unavailable,
}


def details_of(body: Any) -> tuple[ErrorDetail, ...]:
    """The ``detail`` entries of an error body (a string ``detail`` becomes one entry)."""
    raw = body.get("detail") if isinstance(body, dict) else None
    if isinstance(raw, str):
        return (ErrorDetail((), raw, "error"),)
    if not isinstance(raw, list):
        return ()
    out = []
    for item in raw:
        if isinstance(item, dict):
            loc = tuple(p if isinstance(p, int | str) else str(p) for p in item.get("loc") or ())
            out.append(ErrorDetail(loc, str(item.get("msg", "")), str(item.get("type", ""))))
    return tuple(out)


def error_from(status: int, body: Any, retry_after: float | None = None) -> ApiError:
    """The exception for a refusal with this status and (decoded) body."""
    detail = details_of(body)
    cls = BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    if status == 409 and any(d.type == "label_conflict" for d in detail):
        cls = LabelConflict
    return cls(status, detail, retry_after)


def error_from_text(status: int, text: str, retry_after: float | None = None) -> ApiError:
    """Like :func:`error_from` for a body that may not be JSON (a proxy's error page)."""
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = None
    if not details_of(body):
        body = {"detail": [{"loc": [], "msg": text[:200] or f"HTTP {status}", "type": "http"}]}
    return error_from(status, body, retry_after)
