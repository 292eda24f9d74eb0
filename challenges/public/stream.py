"""``GET /challenges/<slug>/events/``: the challenge's events as Server-Sent Events
(docs/events.md). An async view: under the ASGI server a stream holds no thread and no
database connection while it waits.

A stream sends its headers and a first comment at once, then each event as ``id:``,
``event:`` and ``data:`` lines, and a comment every ``PODIUM_SSE_HEARTBEAT_S`` (15 s)
when there is nothing to say. A reconnect with ``Last-Event-ID`` (the header browsers
send; ``?last_event_id=`` too) gets exactly the events after that id from the last 10
minutes, read from the log, then the live ones, none twice. A fresh connection starts
from now (the page it serves has the board already)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_safe

from challenges.events import hub as events_hub
from challenges.events import log
from challenges.leaderboards import selectors
from challenges.models import Challenge, Event
from challenges.text import row_id

RETRY_MS = 3000  # how soon a browser reconnects after the stream ends


def _last_event_id(request: HttpRequest) -> int | None:
    raw = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id") or ""
    return row_id(raw.strip()) if raw.strip() else None


# Every read of a stream runs in the hub's one thread (``Hub.db``), never in the
# request's own thread: a request's thread keeps its database connection until the
# response ends, which for a stream is hours, and a thousand streams would hold a
# thousand connections.
def _challenge(slug: str) -> Challenge | None:
    close_old_connections()
    return selectors.challenge_public(slug=slug)


def _backlog(challenge_id: int, after: int) -> list[Event]:
    close_old_connections()
    return log.events_after(challenge_id=challenge_id, after_id=after)


async def _stream(*, challenge_id: int, slug: str, after: int | None) -> AsyncIterator[bytes]:
    hub = events_hub.hub
    subscriber = await hub.subscribe(challenge_id=challenge_id, slug=slug)
    try:
        yield f"retry: {RETRY_MS}\n: connected\n\n".encode()
        sent = 0
        if after is not None:
            backlog = await hub.db(_backlog, challenge_id, after)
            for event in backlog:
                yield events_hub.frame(event, slug)
            sent = backlog[-1].pk if backlog else after
        heartbeat = settings.PODIUM_SSE_HEARTBEAT_S
        while not subscriber.dropped:
            try:
                message = await asyncio.wait_for(subscriber.queue.get(), timeout=heartbeat)
            except TimeoutError:
                yield b": heartbeat\n\n"
                continue
            if message is None:
                break  # dropped (too slow): the browser resumes from the log
            event_id, data = message
            if event_id <= sent:
                continue  # already sent from the backlog
            sent = event_id
            yield data
    finally:
        hub.unsubscribe(subscriber)


@require_safe
async def challenge_events(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = await events_hub.hub.db(_challenge, slug)
    if challenge is None:
        return HttpResponse("Not found.", status=404, content_type="text/plain")
    if not isinstance(request, ASGIRequest):
        # A WSGI server would hold a thread per stream, for ever: the ASGI server (the
        # stream process) serves streams. 204 tells a browser not to reconnect (the
        # HTML standard's way to stop an EventSource); the page keeps polling.
        response = HttpResponse(status=204)
        response["X-Podium-Streams"] = "served by the ASGI server (docs/events.md)"
        return response
    response = StreamingHttpResponse(
        _stream(challenge_id=challenge.pk, slug=challenge.slug, after=_last_event_id(request)),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy must pass each event on at once
    return response
