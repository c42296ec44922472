"""What ``acog serve`` checks before it starts uvicorn, so that a mistake in the environment is one
line naming the setting (:class:`service.cli_options.UsageError`, exit code 2) rather than a failed
application start-up and its log: the settings themselves, ``ACOG_DEFAULT_MODEL``, whether the
Redis of ``ACOG_REDIS_URL`` answers, and whether the port is free.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import sys
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from .cli_options import UsageError
from .settings import Settings

ENV_PREFIX = "ACOG_"
DEFAULT_MODEL_HINT = ' (a JSON object, e.g. {"name": "default", "n_features": 30})'


def describe_validation(error: ValidationError, prefix: str = "") -> str:
    """A pydantic error as one line: ``where: problem`` for each refused field, joined by ``; ``."""
    parts = []
    for detail in error.errors():
        where = ".".join(str(part) for part in detail["loc"])
        parts.append(f"{prefix}{where}: {detail['msg']}" if where else f"{prefix}{detail['msg']}")
    return "; ".join(parts).replace("\n", " ")


def load_settings() -> Settings:
    """The settings from the environment; a refused one is a :class:`UsageError` naming its variable
    (never its value: it may be a key)."""
    try:
        return Settings()
    except ValidationError as exc:
        parts = []
        for detail in exc.errors():
            field, *rest = [str(part) for part in detail["loc"]] or ["?"]
            inner = f" ({'.'.join(rest)})" if rest else ""
            hint = DEFAULT_MODEL_HINT if field == "default_model" else ""
            parts.append(f"{ENV_PREFIX}{field.upper()}{inner}: {detail['msg']}{hint}")
        raise UsageError("; ".join(parts).replace("\n", " ")) from None
    except SettingsError as exc:  # a value that is not even JSON, e.g. ACOG_DEFAULT_MODEL='{'
        cause = exc.__cause__
        field = str(exc).split('"')[1] if str(exc).count('"') >= 2 else "?"
        reason = f": {cause}" if cause is not None else ""
        raise UsageError(f"{ENV_PREFIX}{field.upper()} is not valid JSON{reason}") from None


def check_default_model(settings: Settings) -> None:
    """``ACOG_DEFAULT_MODEL`` as the engine will check it at start: a valid name, a configuration the
    schema takes, no parameter its algorithm does not take, within ``ACOG_MAX_N_FEATURES``, and a
    learner that builds."""
    if settings.default_model is None:
        return
    from model_store.ids import InvalidModelName, validate_model_name

    from .model_config import ModelConfig

    where = f"{ENV_PREFIX}DEFAULT_MODEL"
    spec: dict[str, Any] = dict(settings.default_model)
    try:
        validate_model_name(str(spec.pop("name", "default")))
    except InvalidModelName as exc:
        raise UsageError(f"{where}: name: {exc}") from None
    try:
        config = ModelConfig.model_validate(spec)
    except ValidationError as exc:
        raise UsageError(describe_validation(exc, f"{where}: ")) from None
    budget = settings.memory_budget_bytes
    refused = config.inapplicable(budget)
    if refused:
        raise UsageError(f"{where}: {refused[0]}: is not a parameter of {config.resolved_algorithm(budget)}")
    if config.dimension > settings.max_n_features:
        raise UsageError(
            f"{where}: {config.dimension} features is over ACOG_MAX_N_FEATURES ({settings.max_n_features})"
        )
    try:
        config.build_learner(budget)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}") from None


def check_redis(settings: Settings) -> None:
    """The Redis of ``ACOG_REDIS_URL`` answers a ping within the connect timeout, can honour the
    durability asked (``ACOG_REDIS_WAIT_*``), is not a store that lost its data
    (:func:`service.engine.lifecycle.check_store_identity`), and accepts writes: while it refuses them
    (NOREPLICAS, READONLY, OOM, MISCONF...) the start waits, with a line on stderr per try and a
    growing pause (:func:`wait_until_writable`). No URL: the embedded one is started later, and the
    engine checks it then."""
    if not settings.redis_url:
        return
    from model_store import ConnectionSettings, Durability, RedisModelStore, StoreError, StoreUnavailable

    from .engine.lifecycle import check_store_identity

    connection = ConnectionSettings(
        socket_timeout=settings.redis_connect_timeout_seconds,
        connect_timeout=settings.redis_connect_timeout_seconds,
        retries=0,
        cluster=settings.redis_cluster,
        durability=Durability(
            replicas=settings.redis_wait_replicas,
            aof_local=settings.redis_wait_aof,
            timeout_seconds=settings.redis_wait_timeout_seconds,
        ),
    )

    async def ping() -> None:
        store = RedisModelStore.from_url(settings.redis_url or "", connection)
        try:
            await store.ping()
            try:
                await store.check_durability()
            except StoreUnavailable:
                raise
            except StoreError as exc:
                raise UsageError(f"{ENV_PREFIX}REDIS_WAIT_AOF: {exc}") from None
            await check_store_identity(store, settings.store_epoch)
            await wait_until_writable(store)
        finally:
            await store.close()

    try:
        asyncio.run(ping())
    except StoreUnavailable as exc:
        raise UsageError(f"{ENV_PREFIX}REDIS_URL: Redis does not answer: {exc}") from None
    except StoreError as exc:
        raise UsageError(f"{ENV_PREFIX}REDIS_URL: {exc}") from None
    except ValueError as exc:  # a URL redis-py cannot parse
        raise UsageError(f"{ENV_PREFIX}REDIS_URL: {exc}") from None


WRITABLE_FIRST_PAUSE = 0.5
WRITABLE_MAX_PAUSE = 10.0


async def wait_until_writable(store: Any) -> None:
    """Return once the store takes a write (``check_writable``); meanwhile, while it answers but
    refuses writes, one line on stderr per try and pauses doubling from 0.5 s up to 10 s. A store
    that does not answer at all is not waited for (that is a mistake in ``ACOG_REDIS_URL`` more
    often than an outage)."""
    from model_store import StoreUnavailable

    pause = WRITABLE_FIRST_PAUSE
    while True:
        try:
            await store.check_writable()
            return
        except StoreUnavailable as exc:
            if not _refuses_writes(exc):
                raise
            print(
                f"acog serve: the store refuses writes ({exc}); trying again in {pause:g} s",
                file=sys.stderr,
            )
            await asyncio.sleep(pause)
            pause = min(WRITABLE_MAX_PAUSE, pause * 2)


def _refuses_writes(error: Exception) -> bool:
    """Whether Redis answered, with a refusal of writes (not a broken connection or a timeout)."""
    from redis.exceptions import ConnectionError, TimeoutError

    return not isinstance(error.__cause__, ConnectionError | TimeoutError)


def check_port(host: str, port: int) -> None:
    """Nothing else listens on ``host:port`` (binding the way uvicorn will, with SO_REUSEADDR)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(f"port {port} on {host} is in use (--port, ACOG_PORT)") from None
            raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
