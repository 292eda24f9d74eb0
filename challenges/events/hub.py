"""The event stream's one feed per web process: a poller reads the event log for the
challenges that have subscribers and hands each new event to their queues.

One place feeds every stream: the log (``Event``), which every writer goes through, so
the embedded default needs no Redis and a stream resumed after an id misses nothing.
One query every ``POLL_S`` per process serves all its streams, however many; every read
of the streams runs in one thread of the hub's own (``Hub.db``), so a process's streams
hold one database connection between them. Within a
challenge ids follow commit order (``log``), so a cursor per challenge is exact. A
subscriber too slow to take its events (its queue full) is dropped: its stream ends
and the browser resumes with ``Last-Event-ID`` from the log.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from django.db import close_old_connections, connections
from django.db.models import Max, Q

from challenges.events import log
from challenges.models import Event

logger = logging.getLogger(__name__)
T = TypeVar("T")

POLL_S = 0.1
QUEUE_MAX = 500  # events waiting for one subscriber before it is dropped
READ_AT_MOST = 2000  # events read in one poll


@dataclass(eq=False)
class Subscriber:
    challenge_id: int
    queue: asyncio.Queue[tuple[int, bytes] | None] = field(
        default_factory=lambda: asyncio.Queue(maxsize=QUEUE_MAX)
    )
    dropped: bool = False


def frame(event: Event, slug: str) -> bytes:
    """One Server-Sent Events message: ``id:``, ``event:`` (the type) and ``data:``."""
    data = json.dumps(log.event_json(event, slug=slug), separators=(",", ":"))
    return f"id: {event.pk}\nevent: {event.type}\ndata: {data}\n\n".encode()


def _read(cursors: dict[int, int]) -> list[Event]:
    close_old_connections()
    where = Q()
    for challenge_id, after in cursors.items():
        where |= Q(challenge_id=challenge_id, pk__gt=after)
    found = list(Event.objects.filter(where).order_by("pk")[:READ_AT_MOST])
    close_old_connections()
    return found


def _latest(challenge_id: int) -> int:
    close_old_connections()
    return Event.objects.filter(challenge_id=challenge_id).aggregate(m=Max("pk"))["m"] or 0


class Hub:
    """The subscribers of one process, by challenge, and the poller that feeds them."""

    def __init__(self) -> None:
        self.subscribers: dict[int, set[Subscriber]] = {}
        self.cursors: dict[int, int] = {}
        self.slugs: dict[int, str] = {}
        self.task: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.executor: ThreadPoolExecutor | None = None

    async def db(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a database read in the hub's one thread (its one connection)."""
        if self.executor is None:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix="podium-events")
        return await asyncio.get_running_loop().run_in_executor(self.executor, partial(fn, *args))

    def db_close(self) -> None:
        """Close the hub thread's database connection (tests, and a process's end)."""
        if self.executor is not None:
            self.executor.submit(connections.close_all).result()

    async def subscribe(self, *, challenge_id: int, slug: str) -> Subscriber:
        """Register before reading any backlog: from here on nothing is missed."""
        subscriber = Subscriber(challenge_id)
        if challenge_id not in self.cursors:
            self.cursors[challenge_id] = await self.db(_latest, challenge_id)
        self.slugs[challenge_id] = slug
        self.subscribers.setdefault(challenge_id, set()).add(subscriber)
        self._ensure_running()
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        found = self.subscribers.get(subscriber.challenge_id)
        if found is None:
            return
        found.discard(subscriber)
        if not found:
            del self.subscribers[subscriber.challenge_id]
            self.cursors.pop(subscriber.challenge_id, None)

    def _ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.loop is not loop:
            self.loop = loop
            self.task = loop.create_task(self._run())

    async def _run(self) -> None:
        while self.subscribers:
            try:
                await self.poll()
            except Exception:  # the database away: try again at the next poll
                logger.exception("event stream poll failed")
            await asyncio.sleep(POLL_S)

    async def poll(self) -> int:
        """Read new events and hand them out; how many were read."""
        cursors = {c: self.cursors[c] for c in list(self.subscribers) if c in self.cursors}
        if not cursors:
            return 0
        events = await self.db(_read, cursors)
        for event in events:
            challenge_id = event.challenge_id
            if event.pk <= self.cursors.get(challenge_id, 0):
                continue
            self.cursors[challenge_id] = event.pk
            message = (event.pk, frame(event, self.slugs.get(challenge_id, "")))
            for subscriber in list(self.subscribers.get(challenge_id, ())):
                try:
                    subscriber.queue.put_nowait(message)
                except asyncio.QueueFull:
                    subscriber.dropped = True
                    self.unsubscribe(subscriber)
                    subscriber.queue = asyncio.Queue(maxsize=1)
                    subscriber.queue.put_nowait(None)  # ends its stream: it resumes
        return len(events)


hub = Hub()
