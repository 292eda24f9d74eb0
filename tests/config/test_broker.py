"""The Redis transport's guard (config/broker.py): a channel left open when the broker
went away is closed, and its unacknowledged messages go back to their queue, once the
broker is back; kombu's own transport fails there with an AttributeError that stops a
Celery worker.

The tests reach a real Redis through a relay they cut (tests/relay.py); without a Redis
server they are skipped.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection

from config import broker
from tests.relay import Relay

REDIS = ("127.0.0.1", 6379)
ROOT = Path(__file__).resolve().parents[2]


def _redis_reason() -> str | None:
    try:
        socket.create_connection(REDIS, timeout=0.5).close()
    except OSError:
        return "needs a Redis server on 127.0.0.1:6379 (the CI run has one)"
    return None


pytestmark = pytest.mark.skipif(_redis_reason() is not None, reason=_redis_reason() or "")


@pytest.fixture
def relay() -> Iterator[Relay]:
    relay = Relay(REDIS)
    relay.up()
    yield relay
    relay.close()


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue of the test's own, removed afterwards with everything kombu kept for it."""
    name = f"podium-broker-test-{uuid.uuid4().hex[:8]}"
    yield name
    with Connection(f"redis://{REDIS[0]}:{REDIS[1]}/15") as conn:
        client = conn.default_channel.client
        for key in client.scan_iter(match=f"*{name}*"):
            client.delete(key)
        for tag, raw in client.hscan_iter("unacked"):
            if name in raw.decode():
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)


def _outage_with_two_channels_holding_messages(
    relay: Relay, transport: Any, queue: str
) -> list[Any]:
    """Two channels each take one message without acknowledging it; the broker goes
    away and the connection is collected, as Celery's consumer does on a connection
    error; the broker comes back. Returns the channels."""
    url = f"redis://127.0.0.1:{relay.port}/15"
    with Connection(url) as producer:
        simple = producer.SimpleQueue(queue)
        simple.put({"n": 1})
        simple.put({"n": 2})
        simple.close()
    conn = Connection(url, transport=transport)
    channels = [conn.channel(), conn.channel()]
    for channel in channels:
        assert channel.basic_get(queue, no_ack=False) is not None
    relay.down()
    conn.collect(socket_timeout=1)  # the first restore fails: Redis is away
    relay.up()
    return channels


def _waiting(relay: Relay, queue: str) -> int:
    with Connection(f"redis://127.0.0.1:{relay.port}/15") as conn:
        return conn.default_channel.client.llen(queue)


def _unacked(relay: Relay, queue: str) -> int:
    with Connection(f"redis://127.0.0.1:{relay.port}/15") as conn:
        client = conn.default_channel.client
        return sum(queue in raw.decode() for raw in client.hvals("unacked"))


def test_kombus_own_transport_still_has_the_fault(relay, queue):
    """Without the guard, closing the channel left open raises the AttributeError that
    stops a worker. When this fails, kombu handles a detached channel itself: remove
    config/broker.py and CELERY_BROKER_TRANSPORT from settings."""
    channels = _outage_with_two_channels_holding_messages(relay, "redis", queue)
    raised = []
    for channel in channels:
        try:
            channel.close()
        except AttributeError as exc:
            raised.append(str(exc))
    assert raised == ["'NoneType' object has no attribute 'hostname'"]


def test_the_guard_closes_the_channel_and_gives_its_messages_back(relay, queue):
    channels = _outage_with_two_channels_holding_messages(relay, broker.Transport, queue)
    for channel in channels:
        channel.close()  # no AttributeError
    # The channel left open gives its message back at once; the one whose restore
    # failed during the outage keeps its message in Redis's unacknowledged set, from
    # which kombu restores it after the visibility timeout: none is lost.
    assert _waiting(relay, queue) == 1
    assert _unacked(relay, queue) == 1


def test_the_guard_acknowledges_on_a_channel_left_open(relay, queue):
    """A task that finishes after the outage acknowledges its message on the channel
    it came from: that works too, and the message is not given back."""
    url = f"redis://127.0.0.1:{relay.port}/15"
    with Connection(url) as producer:
        simple = producer.SimpleQueue(queue)
        simple.put({"n": 1})
        simple.close()
    conn = Connection(url, transport=broker.Transport)
    channel = conn.channel()
    message = channel.basic_get(queue, no_ack=False)
    conn._do_close_transport()  # what collect() leaves behind for this channel
    channel.basic_ack(message.delivery_tag)
    channel.close()
    assert _waiting(relay, queue) == 0


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://127.0.0.1:6379/0", "config.broker:Transport"),
        ("rediss://example.org:6380/0", "config.broker:Transport"),
        ("filesystem://localhost//", None),
        ("amqp://guest@localhost//", None),
    ],
)
def test_settings_use_the_guard_for_redis_only(url, expected):
    env = {**os.environ, "CELERY_BROKER_URL": url, "DJANGO_SETTINGS_MODULE": "config.settings"}
    shown = subprocess.run(
        [sys.executable, "-c", "import config.settings as s; "
         "print(getattr(s, 'CELERY_BROKER_TRANSPORT', None))"],
        env=env, cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert shown == str(expected)


def test_the_health_check_reuses_its_connection_and_sees_an_outage(relay, monkeypatch):
    """/healthz's broker check takes a pooled connection and pings Redis: checks made one
    after another open no new connection, a cut broker fails the check (503), and the
    check passes again once the broker is back."""
    from celery import Celery

    from config import health

    # Celery reads CELERY_BROKER_URL before the app's own setting: a run with the
    # variable set (the CI's Redis pass) would check the real Redis, not the relay.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    # Not made Celery's current app: tests after this one queue through Podium's.
    app = Celery("health-test", broker=f"redis://127.0.0.1:{relay.port}/15", set_as_current=False)
    monkeypatch.setattr(health, "celery_app", app)
    health.broker_check()
    opened = len(relay.conns)
    assert opened > 0  # the check went through the relay
    for _ in range(5):
        health.broker_check()
    assert len(relay.conns) == opened  # no connection per check
    relay.down()
    with pytest.raises(Exception):  # noqa: B017 - whatever the transport raises
        health.broker_check()
    relay.up()
    health.broker_check()
    app.close()


def test_a_cut_relay_refuses_at_once_and_keeps_its_port(relay):
    """What the outage tests stand on: while the relay is down a connect is refused (the
    listener really stopped, not only closed beside a thread blocked in accept) and the
    port cannot be taken by another socket, which could then answer for the broker."""
    socket.create_connection(("127.0.0.1", relay.port), timeout=2).close()
    relay.down()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", relay.port), timeout=2)
    squatter = socket.socket()
    try:
        with pytest.raises(OSError):
            squatter.bind(("127.0.0.1", relay.port))
    finally:
        squatter.close()
    relay.up()
    socket.create_connection(("127.0.0.1", relay.port), timeout=2).close()
