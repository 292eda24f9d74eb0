"""The event stream (``GET /challenges/<slug>/events/``, docs/events.md): headers and a
first comment at once, ``id:`` lines, heartbeats, and a resume with ``Last-Event-ID``
that gets exactly the missed events of the last 10 minutes, then the live ones, none
twice. Driven through Django's async test client against the async view and the
process's hub (a real poller reading the log)."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.test import AsyncClient
from django.urls import reverse
from django.utils import timezone

from challenges.events import hub as events_hub
from challenges.events import log
from challenges.models import Event
from tests.factories import make_challenge

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _hub_connection_closed():
    # The hub's thread keeps its database connection (one per process, by design):
    # closed after each test, or PostgreSQL could not drop the test database.
    yield
    events_hub.hub.db_close()


def write(challenge, n: int = 1, type_: str = "board.changed") -> list[Event]:
    with transaction.atomic():
        log.live_locked(challenge=challenge)
        written = [
            log.event_write(challenge=challenge, type=type_, data={"n": i}) for i in range(n)
        ]
    if threading.current_thread() is not threading.main_thread():
        connection.close()  # asgiref's thread outlives the test: not its connection
    return written


def events_url(challenge) -> str:
    return reverse("challenges:events", args=[challenge.slug])


def parse(text: str) -> list[dict]:
    """The events of a stream's text (comments and retry lines left out)."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1)
            for line in block.split("\n")
            if line and not line.startswith(":") and ": " in line
        )
        if "id" in fields:
            found.append(
                {
                    "id": int(fields["id"]),
                    "event": fields["event"],
                    "data": json.loads(fields["data"]),
                }
            )
    return found


async def read(response, *, until, timeout: float = 5.0) -> str:
    """Read the stream until ``until(text)`` holds (or fail after ``timeout``)."""
    text = ""
    chunks = response.streaming_content
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not until(text):
        left = deadline - loop.time()
        assert left > 0, f"stream stalled; got so far: {text!r}"
        try:
            text += (await asyncio.wait_for(anext(chunks), timeout=left)).decode()
        except TimeoutError:
            raise AssertionError(f"stream stalled; got so far: {text!r}") from None
    return text


async def close(response) -> None:
    """Disconnect as the ASGI handler does when the browser goes: the task reading the
    stream is cancelled while the stream waits."""
    reading = asyncio.ensure_future(anext(response.streaming_content))
    await asyncio.sleep(0.05)
    reading.cancel()
    try:
        await reading
    except (asyncio.CancelledError, StopAsyncIteration):
        pass


def test_headers_and_a_first_comment_at_once():
    challenge = make_challenge()

    async def run():
        response = await AsyncClient().get(events_url(challenge))
        assert response.status_code == 200
        assert response["Content-Type"] == "text/event-stream"
        assert response["Cache-Control"] == "no-cache"
        first = await read(response, until=lambda t: ": connected" in t, timeout=2)
        assert first.startswith("retry: 3000\n")
        await close(response)

    asyncio.run(run())


def test_unknown_and_inactive_challenges_are_404():
    hidden = make_challenge(is_active=False)

    async def run():
        client = AsyncClient()
        assert (await client.get("/challenges/no-such-thing/events/")).status_code == 404
        assert (await client.get(events_url(hidden))).status_code == 404
        assert (await client.post(events_url(hidden))).status_code == 405

    asyncio.run(run())


def test_a_live_event_reaches_the_stream_with_its_id():
    challenge = make_challenge()
    other = make_challenge()

    async def run():
        response = await AsyncClient().get(events_url(challenge))
        await read(response, until=lambda t: ": connected" in t)
        await sync_to_async(write)(other)  # another challenge's: not on this stream
        [event] = await sync_to_async(write)(challenge, type_="record.beaten")
        text = await read(response, until=lambda t: "id: " in t)
        await close(response)
        return event, text

    event, text = asyncio.run(run())
    [got] = parse(text)
    assert got == {"id": event.pk, "event": "record.beaten", "data": log.event_json(event)}
    assert text.startswith(f"id: {event.pk}\nevent: record.beaten\ndata: {{")


@pytest.mark.parametrize("how", ["header", "query"])
def test_a_resume_gets_exactly_the_missed_events_then_the_live_ones(how):
    challenge = make_challenge()
    old = write(challenge, 1)[0]
    Event.objects.filter(pk=old.pk).update(occurred_at=timezone.now() - timedelta(minutes=11))
    seen = write(challenge, 2)
    missed = write(challenge, 3)

    async def run():
        client = AsyncClient()
        url = events_url(challenge)
        if how == "header":
            response = await client.get(url, headers={"Last-Event-ID": str(old.pk)})
        else:
            response = await client.get(url, {"last_event_id": str(seen[-1].pk)})
        expect = 5 if how == "header" else 3
        text = await read(response, until=lambda t: len(parse(t)) >= expect)
        live = await sync_to_async(write)(challenge, 2)
        text += await read(response, until=lambda t: len(parse(t)) >= 2)
        # Anything more would be a duplicate: read on for a few polls.
        try:
            text += await read(response, until=lambda t: "id: " in t, timeout=4 * events_hub.POLL_S)
        except AssertionError:
            pass
        await close(response)
        return text, live

    text, live = asyncio.run(run())
    ids = [e["id"] for e in parse(text)]
    if how == "header":
        # Resumed after the event of 11 minutes ago: every later one (within 10 minutes).
        assert ids == [e.pk for e in (*seen, *missed, *live)]
    else:
        assert ids == [e.pk for e in (*missed, *live)]
    assert len(ids) == len(set(ids))


def test_events_older_than_ten_minutes_are_not_replayed():
    challenge = make_challenge()
    first, stale = write(challenge, 2)
    Event.objects.filter(pk=stale.pk).update(occurred_at=timezone.now() - timedelta(minutes=11))
    fresh = write(challenge, 1)

    async def run():
        response = await AsyncClient().get(
            events_url(challenge), headers={"Last-Event-ID": str(first.pk)}
        )
        text = await read(response, until=lambda t: len(parse(t)) >= 1)
        await asyncio.sleep(2 * events_hub.POLL_S)
        await close(response)
        return text

    assert [e["id"] for e in parse(asyncio.run(run()))] == [fresh[0].pk]


@pytest.mark.parametrize("bad", ["abc", "9" * 30, "-3", "²"])
def test_a_bad_last_event_id_is_a_fresh_start(bad):
    challenge = make_challenge()
    write(challenge, 2)

    async def run():
        response = await AsyncClient().get(events_url(challenge), headers={"Last-Event-ID": bad})
        text = await read(response, until=lambda t: ": connected" in t)
        await asyncio.sleep(2 * events_hub.POLL_S)
        await close(response)
        return text

    assert parse(asyncio.run(run())) == []


def test_a_quiet_stream_sends_heartbeats(settings):
    settings.PODIUM_SSE_HEARTBEAT_S = 0.1
    challenge = make_challenge()

    async def run():
        response = await AsyncClient().get(events_url(challenge))
        text = await read(response, until=lambda t: t.count(": heartbeat\n\n") >= 2)
        await close(response)
        return text

    assert parse(asyncio.run(run())) == []


def test_a_closed_stream_leaves_the_hub(monkeypatch):
    challenge = make_challenge()

    async def run():
        response = await AsyncClient().get(events_url(challenge))
        await read(response, until=lambda t: ": connected" in t)
        assert challenge.pk in events_hub.hub.subscribers
        await close(response)
        assert challenge.pk not in events_hub.hub.subscribers

    asyncio.run(run())


def test_a_subscriber_too_slow_is_dropped_and_resumes_from_the_log(monkeypatch):
    monkeypatch.setattr(events_hub, "QUEUE_MAX", 3)
    challenge = make_challenge()

    async def run():
        hub = events_hub.Hub()
        subscriber = await hub.subscribe(challenge_id=challenge.pk, slug=challenge.slug)
        await sync_to_async(write)(challenge, 5)
        await hub.poll()
        assert subscriber.dropped
        assert challenge.pk not in hub.subscribers
        assert await subscriber.queue.get() is None  # its stream ends
        if hub.task:
            hub.task.cancel()
        hub.db_close()

    asyncio.run(run())


def test_a_wsgi_server_does_not_hold_streams(client):
    # Served by WSGI (gunicorn's web process), a stream would hold a thread for ever:
    # it is refused, and the page keeps polling.
    challenge = make_challenge()
    response = client.get(events_url(challenge))
    assert response.status_code == 204  # an EventSource stops reconnecting
    assert "ASGI" in response["X-Podium-Streams"]
