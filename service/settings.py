"""Service settings, read from the environment (prefix ``ACOG_``) by pydantic-settings.

Every knob an operator may turn lives here, with its default and its unit; nothing else in
the service reads the environment. Lists (API keys) are comma-separated; the default model
is JSON, e.g. ``ACOG_DEFAULT_MODEL='{"name": "default", "n_features": 30}'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ACOG_", extra="ignore", hide_input_in_errors=True)
    """``hide_input_in_errors``: a refused setting is named, its value (an API key, say) never printed."""

    # --- where things are -----------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=0, le=65535)
    redis_url: str | None = None
    """``redis://``, ``rediss://`` or ``unix://``; unset starts an embedded Redis in ``data_dir``."""
    redis_timeout_seconds: float = Field(5.0, gt=0, le=600)
    """Socket timeout of every Redis command: a Redis that does not answer in time is unavailable
    (503). It must also cover moving the largest checkpoint (the whole learner state) both ways."""
    redis_connect_timeout_seconds: float = Field(2.0, gt=0, le=60)
    store_epoch: str | None = Field(None, pattern=r"^[0-9a-f]{16}$")
    """The store epoch this deployment expects (``/readyz`` shows it as ``store_epoch``). Set, the
    service refuses to start on a store with another epoch or none: one that lost its data (a Redis
    restarted without persistence, flushed, or another server) instead of serving into it."""
    redis_cluster: bool = False
    """The Redis URL names a node of a Redis Cluster (also chosen by a ``redis+cluster://`` URL)."""
    redis_wait_replicas: int = Field(0, ge=0, le=16)
    """Acknowledge an append only once this many replicas have it (``WAIT``); 0: once the primary has it."""
    redis_wait_aof: bool = False
    """Acknowledge an append only once it is fsynced to the primary's append-only file (``WAITAOF``,
    Redis 7.2+), and to ``redis_wait_replicas`` replicas' files."""
    redis_wait_timeout_seconds: float = Field(1.0, gt=0, le=60)
    """How long an append waits for those confirmations; past it, the answer is 503 (the label is in
    the log, unconfirmed: a retry answers its outcome)."""
    redis_retries: int = Field(1, ge=0, le=10)
    """Retries of a command that failed on a connection error or timeout (the scripts are idempotent).
    A request waits for the store at most ``(1 + redis_retries) * redis_timeout_seconds``, plus
    up to 0.5 s of back-off per retry, before it is answered 503."""
    data_dir: Path = Path(".acog-data")
    """Where the embedded Redis keeps its append-only file."""

    # --- labels, checkpoints ----------------------------------------------------------------
    label_ttl_seconds: float = Field(86_400.0, gt=0)
    """The label window: how long a prediction waits for its label."""
    duplicate_ttl_seconds: float | None = Field(None, gt=0)
    """How long a labelled prediction id answers ``duplicate``; default: twice the label window."""
    checkpoint_every_events: int = Field(1000, ge=1)
    checkpoint_every_seconds: float = Field(30.0, gt=0)
    checkpoints_kept: int = Field(3, ge=1)
    max_challengers: int = Field(2, ge=0, le=16)
    """Challengers a model may have at once (each costs about one model per label and per prediction)."""
    log_retain_entries: int = Field(0, ge=0)
    """Log entries (labels) each model keeps behind its oldest retained checkpoint, to be replayed:
    at least the newest this many (0: none beyond the checkpoints). Costs about the bytes of one
    log entry each in Redis (docs/benchmarks.md#log-retention)."""
    log_retain_seconds: float = Field(0.0, ge=0)
    """Or: every log entry of the last this many seconds (0: none); not both."""
    checkpoint_lease_seconds: float = Field(10.0, ge=1, le=3600)
    """How long a replica holds a model's checkpoint-writer lease unless it renews it (every third
    of this). When the holder dies, another replica takes over at most this long after."""
    predict_when_store_down: bool = True
    """Keep answering /predict from memory while Redis is down (replies say ``stored: false``)."""
    fault_checkpoint_delay_seconds: float = Field(0.0, ge=0, le=60)
    """Fault injection for crash tests: pause between encoding a checkpoint and writing it."""
    opentelemetry: bool = False
    """FastAPI's native OpenTelemetry (spans, HTTP metrics and logs sent to the globally
    configured providers). Off by default: the service's metrics are its own Prometheus ones,
    and while it is on FastAPI looks the providers up on every request, which costs about 7 %
    of a minimal FastAPI app's throughput (10,300 to 11,000 req/s on the benchmark machine)."""
    metrics_window: int = Field(1000, ge=1)
    """Labels in the windowed measures (``window`` label of the ``acog_window_*`` gauges)."""
    maintenance_interval_seconds: float = Field(5.0, gt=0)
    """How often pending predictions are counted and expired ones swept."""

    # --- models -----------------------------------------------------------------------------
    default_model: dict[str, Any] | None = None
    """A model created at start-up when absent: a model config plus its ``name``."""
    warm_up: Literal["all", "models"] = "models"
    """Kernels compiled (or loaded from the disk cache) before ``/readyz`` says ready (the port
    listens from the start, ``/healthz`` answers, ``/readyz`` says what is left): ``models``, only
    those of the stored models and ``default_model``; a model of another algorithm is compiled
    while it is created (``PUT /models/{name}`` answers once it is), never on the label path.
    ``all``: every algorithm's, so that no model created later waits for numba (a compile on a
    cold kernel cache, once; a load from the cache afterwards)."""
    blas_core_type: str = Field("auto", min_length=1)
    """The OpenBLAS core type of ``acog serve`` and its workers (:mod:`service.blas`): ``auto``
    (AVX2 + FMA kernels where the CPU has them, so that replicas on different x86-64 CPUs hold the
    same bits), ``native`` (OpenBLAS's own choice) or a core type name (``Sandybridge``, ...)."""
    memory_budget_bytes: int = Field(512 * 2**20, ge=2**20)
    """Upper bound on one model's covariance matrices (full ACOG, AROW)."""

    # --- access control and limits ----------------------------------------------------------
    api_keys: Annotated[list[str], NoDecode] = []
    admin_keys: Annotated[list[str], NoDecode] = []
    max_body_bytes: int = Field(8 * 2**20, ge=1024)
    max_batch: int = Field(1000, ge=1)
    max_n_features: int = Field(10_000_000, ge=1)
    max_models: int = Field(100, ge=1)
    max_pending_per_model: int = Field(1_000_000, ge=1)
    ws_max_message_bytes: int = Field(2**20, ge=1024)
    ws_max_messages_per_second: float = Field(5000.0, gt=0)
    ws_queue_size: int = Field(256, ge=1)
    ws_compression: bool = False
    """WebSocket permessage-deflate (RFC 7692), under uvicorn: off by default, as the messages are
    small JSON objects whose compression costs both ends more CPU per message than it saves on a
    local network; turn it on for clients behind slow links."""
    max_feature_value: float = Field(1e9, gt=0)
    """Largest absolute feature value of a model with ``normalize: "none"`` (an L2-normalised
    model takes any finite value): larger ones overflow the learners' second-order updates."""

    @field_validator("api_keys", "admin_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [key.strip() for key in value.split(",") if key.strip()]
        return value

    @field_validator("api_keys", "admin_keys")
    @classmethod
    def _printable_keys(cls, keys: list[str]) -> list[str]:
        """A key travels in an HTTP header, which carries ASCII: any other character could never
        match what a client sends. The key itself is never echoed (it is a secret)."""
        for number, key in enumerate(keys, 1):
            if not key or not all("!" <= char <= "~" and char != "," for char in key):
                raise ValueError(
                    f"key {number} of {len(keys)} is not printable ASCII without spaces or commas"
                )
        return keys

    @model_validator(mode="after")
    def _one_retention(self) -> Settings:
        if self.log_retain_entries and self.log_retain_seconds:
            raise ValueError("set ACOG_LOG_RETAIN_ENTRIES or ACOG_LOG_RETAIN_SECONDS, not both")
        return self

    @property
    def done_ttl_seconds(self) -> float:
        return self.duplicate_ttl_seconds or 2.0 * self.label_ttl_seconds
