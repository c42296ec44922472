"""The Python client of acog-service, as the server's package has always offered it: every name
of :mod:`acog_client` (its own small distribution, ``pip install ./client``), re-exported.

>>> from service.client import Client
>>> Client("http://127.0.0.1:8000", model="cards")  # doctest: +SKIP

Its modules answer under their old names too (``service.client.retry`` is
:mod:`acog_client.retry`), so code written against them keeps working.
"""

import sys

from acog_client import (
    AcogError,
    ApiError,
    AsyncClient,
    AsyncStream,
    Checkpoint,
    Client,
    Conflict,
    ConnectionFailed,
    ErrorDetail,
    FeedbackResult,
    Forbidden,
    Gone,
    Health,
    InvalidRequest,
    LabelConflict,
    ModelInfo,
    ModelSummary,
    NotFound,
    Prediction,
    RateLimited,
    RetryEvent,
    RetryPolicy,
    ServerError,
    Sparse,
    Stream,
    TooLarge,
    Unauthorized,
    Unavailable,
    async_client,
    calls,
    errors,
    payloads,
    retry,
    stream,
    sync_client,
    types,
)

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
    "RetryEvent",
    "RetryPolicy",
    "ServerError",
    "Sparse",
    "Stream",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
]

for _module in (async_client, calls, errors, payloads, retry, stream, sync_client, types):
    sys.modules[f"{__name__}.{_module.__name__.rpartition('.')[2]}"] = _module
del _module
