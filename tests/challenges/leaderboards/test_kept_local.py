"""The process's copies of kept builds (``kept._Local``): served again without asking
the cache only when exactly what the read would build; bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.core.cache import cache
from django.utils import timezone

from challenges.leaderboards import kept
from challenges.leaderboards.selectors import Settled

MINUTE = datetime(2026, 11, 26, 7, 0, tzinfo=UTC)


def _settled(ranking: str = "t1", *, lagging: bool = False, lineage: str = "l1") -> Settled:
    return Settled(1, "2026-11-26", 7, ranking, lagging, timezone.now(), lineage)


def _read(settled: Settled, builds: list[str], *, activity="a1", minute=MINUTE, parts=("p",)):
    def build() -> str:
        builds.append(settled.token)
        return f"built from {settled.token} at {activity} for {minute}"

    return kept.kept_board("page", settled, parts, build, activity=activity, minute=minute)


def test_a_repeated_read_is_served_from_the_process_without_the_cache(monkeypatch):
    builds: list[str] = []
    first = _read(_settled(), builds)
    gets = []
    monkeypatch.setattr(kept.cache, "get", lambda *a, **k: gets.append(a) or None)
    assert _read(_settled(), builds) == first
    assert builds == ["t1"] and gets == []


def test_what_is_not_exactly_the_same_read_asks_the_cache():
    builds: list[str] = []
    _read(_settled(), builds)
    cache.clear()  # the process copy alone could serve these; none may
    _read(_settled("t2"), builds)  # a new ranking
    _read(_settled("t2"), builds, activity="a2")  # newer activity
    _read(_settled("t2"), builds, activity="a2", minute=MINUTE + timedelta(minutes=1))
    assert builds == ["t1", "t2", "t2", "t2"]


def test_a_lagging_boards_previous_build_follows_the_caches_rules(settings, monkeypatch):
    settings.PODIUM_RANKING_MAX_AGE_MS = 10_000  # rankings may lag (tests run without)
    clock = [100.0]
    monkeypatch.setattr(kept.time, "monotonic", lambda: clock[0])
    builds: list[str] = []
    kept_from_t1 = _read(_settled(), builds)
    # A new ranking of the same lineage, entries changed since: the cache's rules serve
    # the previous build (recent, same lineage), and so does the process for a second,
    # newer activity included; then the cache is asked again (cleared here: rebuilt).
    assert _read(_settled("t2", lagging=True), builds) == kept_from_t1
    cache.clear()
    assert _read(_settled("t2", lagging=True), builds, activity="a2") == kept_from_t1
    # Not across a new lineage (a hide, a deletion), even within the second.
    assert _read(_settled("t3", lagging=True, lineage="l2"), builds) != kept_from_t1
    assert builds == ["t1", "t3"]
    clock[0] += kept.LOCAL_RECHECK_S
    cache.clear()
    kept.local_clear()
    _read(_settled("t2", lagging=True), builds)
    assert builds == ["t1", "t3", "t2"]


def test_a_lagging_boards_process_copy_is_asked_of_the_cache_again_after_a_second(
    settings, monkeypatch
):
    settings.PODIUM_RANKING_MAX_AGE_MS = 10_000
    clock = [100.0]
    monkeypatch.setattr(kept.time, "monotonic", lambda: clock[0])
    builds: list[str] = []
    _read(_settled(), builds)
    _read(_settled("t2", lagging=True), builds)  # served by the cache's rules
    gets = []
    real_get = kept.cache.get
    monkeypatch.setattr(kept.cache, "get", lambda *a, **k: gets.append(a) or real_get(*a, **k))
    _read(_settled("t2", lagging=True), builds, activity="a2")
    assert gets == []
    clock[0] += kept.LOCAL_RECHECK_S
    _read(_settled("t2", lagging=True), builds, activity="a3")
    assert len(gets) == 1 and builds == ["t1"]


def test_the_process_keeps_at_most_its_bound(monkeypatch):
    monkeypatch.setattr(kept._local, "size", 3)
    builds: list[str] = []
    for n in range(5):
        _read(_settled(), builds, parts=(n,))
    assert len(kept._local.builds) == 3
    cache.clear()
    _read(_settled(), builds, parts=(4,))  # among the last three: not built again
    _read(_settled(), builds, parts=(0,))  # pushed out: built again
    assert len(builds) == 6


def test_a_previous_minutes_build_is_served_from_the_process_while_its_refresh_is_asked(
    monkeypatch,
):
    builds: list[str] = []
    asked: list[datetime] = []
    clock = [100.0]
    monkeypatch.setattr(kept.time, "monotonic", lambda: clock[0])
    settled = _settled()

    def read(minute: datetime) -> str:
        return kept.kept_board(
            "page",
            settled,
            ("p",),
            lambda: builds.append("built") or f"for {minute}",
            activity="a1",
            minute=minute,
            refresh=lambda: asked.append(minute) or True,
        )

    assert read(MINUTE) == f"for {MINUTE}"
    later = MINUTE + timedelta(minutes=1)
    assert read(later) == f"for {MINUTE}"  # asked a worker for the new minute's
    gets = []
    real_get = kept.cache.get
    monkeypatch.setattr(kept.cache, "get", lambda *a, **k: gets.append(a) or real_get(*a, **k))
    assert read(later) == f"for {MINUTE}"
    assert gets == [], "the cache was asked again within LOCAL_RECHECK_S"
    clock[0] += kept.LOCAL_RECHECK_S + 0.01
    assert read(later) == f"for {MINUTE}"  # asked for already: still the previous one
    assert len(gets) == 1, "the cache was not asked again after LOCAL_RECHECK_S"
    assert builds == ["built"] and asked == [later]
