"""The Redis broker transport: kombu's, with one narrow guard so that a worker survives a
broker outage.

What it guards against: when the broker goes away, the Celery consumer collects its
connection (``Connection.collect``): each channel is closed and gives its unacknowledged
messages back to their queue. With Redis unreachable the first of those restores fails,
the remaining channels stay open, and the connection then detaches from its transport
(``transport.client = None``). When such a channel is closed or acknowledges a message
later, kombu builds a new Redis connection pool from ``transport.client`` and fails with
``AttributeError: 'NoneType' object has no attribute 'hostname'`` (in
``kombu/transport/redis.py``, ``Channel._connparams``). An ``AttributeError`` is not a
connection error, so the worker stops: "Unrecoverable error". The same class of fault is
reported upstream as celery/kombu#582 and celery/kombu#970.

The guard: a channel remembers the connection it was opened for, and builds its pool from
it when the transport has been detached. The restore then succeeds once Redis answers
again, the messages go back to their queue at once (not after the visibility timeout),
and the worker carries on. Remove this module (and ``CELERY_BROKER_TRANSPORT`` in
settings) when kombu builds the pool of a detached channel itself;
``tests/config/test_broker.py`` reproduces the fault without the guard and says when it
is no longer needed.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class _Detached:
    """The channel's transport as ``_connparams`` reads it, with the connection the
    channel was opened for in place of the one the transport has let go."""

    def __init__(self, transport: Any, client: Any):
        self._transport = transport
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class Channel(kombu_redis.Channel):
    def __init__(self, connection: Any, *args: Any, **kwargs: Any):
        self._opened_for = connection.client  # read before kombu's __init__ connects
        super().__init__(connection, *args, **kwargs)

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        transport = self.connection
        if transport is None or transport.client is not None or self._opened_for is None:
            return super()._connparams(asynchronous)
        self.connection = _Detached(transport, self._opened_for)
        try:
            return super()._connparams(asynchronous)
        finally:
            self.connection = transport


class Transport(kombu_redis.Transport):
    Channel = Channel
