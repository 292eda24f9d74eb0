"""The Redis cache keeps one client per connection pool (config/cache.py) instead of
building one per call; it must stay correct when threads share it."""

from __future__ import annotations

import threading

import pytest
from django.conf import settings

from config.cache import RedisCache


@pytest.fixture
def cache():
    broker = settings.CELERY_BROKER_URL
    if not broker.startswith("redis://"):
        pytest.skip("needs Redis: run with CELERY_BROKER_URL=redis://…, as .ci/run does")
    server = broker.rsplit("/", 1)[0] + "/11"
    cache = RedisCache(server, {"KEY_PREFIX": "podium-test-cache"})
    yield cache
    cache.delete_many([f"t{n}" for n in range(8)] + ["k"])


def test_one_client_serves_every_call(cache):
    cache.set("k", {"a": 1})
    assert cache.get("k") == {"a": 1}
    client = cache._cache.get_client()
    assert cache._cache.get_client(write=True) is client
    assert cache.get("missing", "default") == "default"


def test_threads_sharing_the_client_each_read_their_own_writes(cache):
    failures: list[str] = []

    def work(n: int) -> None:
        for i in range(200):
            cache.set(f"t{n}", (n, i))
            found = cache.get(f"t{n}")
            if found != (n, i):
                failures.append(f"thread {n}: wrote {(n, i)}, read {found}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
