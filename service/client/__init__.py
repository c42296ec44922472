"""A Python client of acog-service: :class:`Client` (sync) and :class:`AsyncClient` (asyncio).

>>> from service.client import Client
>>> client = Client("http://127.0.0.1:8000", model="cards")      # doctest: +SKIP
>>> p = client.predict([0.2, 0.1, 0.0, 0.9])                    # doctest: +SKIP
>>> client.feedback(p, -1).applied                              # doctest: +SKIP
True

Predictions (one, a batch; dense, sparse or named), labels (one, a batch), models (put,
get, list, delete), and ``stream()``: the WebSocket with requests in flight, matched by
id. Retries on 503 and dropped connections honour ``Retry-After`` with bounded backoff
(:class:`RetryPolicy`); refusals raise an :class:`ApiError` subclass carrying the server's
field and message; a conflicting label raises :class:`LabelConflict` and is never retried.

This package imports httpx, websockets and pydantic only: none of the server, and not numpy (numpy
arrays are sent as they are when the caller has them). It is also its own small distribution:
``pip install ./client`` installs this package as ``acog_client`` (``from acog_client import
Client``), with those three dependencies and none of the server's.
"""

from .async_client import AsyncClient
from .errors import (
    AcogError,
    ApiError,
    Conflict,
    ConnectionFailed,
    ErrorDetail,
    Forbidden,
    Gone,
    InvalidRequest,
    LabelConflict,
    NotFound,
    RateLimited,
    ServerError,
    TooLarge,
    Unauthorized,
    Unavailable,
)
from .payloads import Sparse
from .retry import RetryEvent, RetryPolicy
from .stream import AsyncStream, Stream
from .sync_client import Client
from .types import Checkpoint, FeedbackResult, Health, ModelInfo, ModelSummary, Prediction, RetainedCheckpoint

__all__ = [
    "AcogError",
    "ApiError",
    "AsyncClient",
    "AsyncStream",
    "Checkpoint",
    "Client",
    "Conflict",
    "ConnectionFailed",
    "ErrorDetail",
    "FeedbackResult",
    "Forbidden",
    "Gone",
    "Health",
    "InvalidRequest",
    "LabelConflict",
    "ModelInfo",
    "ModelSummary",
    "NotFound",
    "Prediction",
    "RateLimited",
    "RetainedCheckpoint",
    "RetryEvent",
    "RetryPolicy",
    "ServerError",
    "Sparse",
    "Stream",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
]
