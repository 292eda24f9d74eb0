"""``GET /challenges/<slug>/ctftime.json``: the public board in CTFtime's scoreboard-feed
format, ``{"standings": [{"pos", "team", "score"}, ...]}``, every ranked player in rank
order. Always the public's board (the frozen one during a freeze), whoever asks: it is
read by CTFtime, not by a person signed in."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.http import require_safe

from challenges.leaderboards import freeze, precision, selectors


def _standings(board_id: int | None) -> Iterator[str]:
    yield '{"standings": ['
    if board_id is not None:
        first = True
        for row in selectors.leaderboard_stream(version_id=board_id):
            item = json.dumps(
                {"pos": row.rank, "team": row.display_name, "score": precision.served(row.score)}
            )
            yield item if first else ", " + item
            first = False
    yield "]}"


@require_safe
def ctftime_feed(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = selectors.challenge_public(slug=slug)
    if challenge is None:
        return HttpResponse(
            json.dumps({"detail": "Not found."}), status=404, content_type="application/json"
        )
    board_id = freeze.board_id(challenge=challenge, user=AnonymousUser())
    response = StreamingHttpResponse(_standings(board_id), content_type="application/json")
    response["Access-Control-Allow-Origin"] = "*"  # a public feed, read from anywhere
    return response
