"""Query parameters a board does not read make no new cache entry (issue 28, finding 8):
60 reads with `?utm_source=N` stored 120 full pages for 300 s. A board is kept under
the parameters it reads (page, q, player), as it reads them."""

from __future__ import annotations

import pytest

from challenges.leaderboards import kept
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import page_url

pytestmark = pytest.mark.django_db


class Spy:
    """The cache, recording the keys stored."""

    def __init__(self, cache):
        self.cache, self.keys = cache, set()

    def __getattr__(self, name):
        return getattr(self.cache, name)

    def set(self, key, *args, **kwargs):
        self.keys.add(key)
        return self.cache.set(key, *args, **kwargs)


@pytest.fixture
def stored(monkeypatch):
    spy = Spy(kept.cache)
    monkeypatch.setattr(kept, "cache", spy)
    kept.local_clear()
    return spy.keys


@pytest.mark.parametrize("view", ["detail", "board"])
def test_unknown_parameters_share_the_board_entry(client, stored, view):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a"), attempt_input("b"))
    for _ in range(2):  # the first read, then the read of the settled ranking
        assert client.get(page_url(challenge.slug, view)).status_code == 200
    baseline = len(stored)
    assert baseline >= 1
    for n in range(60):
        response = client.get(page_url(challenge.slug, view), {"utm_source": n, "page": "1"})
        assert response.status_code == 200
    assert len(stored) == baseline
    # The refresh link repeats only what the board reads.
    assert b"utm_source" not in response.content


def test_parameters_the_board_reads_still_make_their_own_page(client, stored):
    challenge = make_challenge(**WEIGHTED_SEED)
    record(challenge, attempt_input("a"), attempt_input("b"))
    client.get(page_url(challenge.slug))
    client.get(page_url(challenge.slug))
    baseline = len(stored)
    html = client.get(page_url(challenge.slug), {"q": "b"}).content.decode()
    assert len(stored) > baseline
    assert "q=b" in html
