"""The Redis cache, with one client per connection pool.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every cache
call; building one (its response callbacks and parsers) is about a fifth of the CPU of a
kept page read. A ``redis.Redis`` is safe to share between threads (each command takes
a connection from the pool), so one per pool is kept.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends import redis


class _SharedClients(redis.RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients.setdefault(id(pool), self._client(connection_pool=pool))
        return client


class RedisCache(redis.RedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with one client per pool."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _SharedClients
