"""The test suite talks to a real Redis server, on its own database."""

import redis


def test_real_redis_roundtrip(redis_client: redis.Redis) -> None:
    redis_client.set("acog:test:key", b"value")
    assert redis_client.get("acog:test:key") == b"value"
    info = redis_client.info("server")
    assert "redis_version" in info  # a real server answers INFO, a mock would not


def test_flushes_only_its_own_database(redis_client: redis.Redis, redis_url: str) -> None:
    db = redis_client.connection_pool.connection_kwargs.get("db")
    assert db == int(redis_url.rsplit("/", 1)[1])
