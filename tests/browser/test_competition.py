"""Running a competition in a real browser: the schedule banner on the cards and the
challenge page, and moderation through the admin (hide an attempt, hide a player, undo)
with the public leaderboard following at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from challenges.models import Attempt, Challenge, PlayerHide
from challenges.setup import services as setup_services
from tests.browser.test_admin_scoring import log_in
from tests.factories import attempt_input, make_challenge, record
from tests.urls import admin_url, page_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def race():
    challenge = make_challenge(name="Race", slug="race", scoring_strategy="fastest")
    record(
        challenge,
        *[
            attempt_input(f"u{i}", player_name=f"Runner {i}", elapsed_ms=1000 * i, created_at=i)
            for i in range(1, 5)
        ],
        attempt_input("u1", player_name="Runner 1", elapsed_ms=9000, created_at=9),
    )
    return challenge


def names(page) -> list[str]:
    return page.locator("table.leaderboard tbody th").all_inner_texts()


def test_schedule_banner_on_the_cards_and_the_page(page, live_server, race):
    now = timezone.now().replace(second=0, microsecond=0)
    Challenge.objects.filter(pk=race.pk).update(
        opens_at=now - timedelta(days=1),
        closes_at=now + timedelta(hours=5, minutes=10),  # margin for a slow page load
    )
    later = make_challenge(name="Later", slug="later")
    Challenge.objects.filter(pk=later.pk).update(
        opens_at=now + timedelta(days=2, hours=3, minutes=10), late_attempts="practice"
    )
    page.goto(live_server.url + reverse("challenges:list"))
    race_card = page.locator("li.card", has_text="Race")
    assert race_card.locator(".schedule").inner_text().startswith("Open · closes in 5 hours")
    later = page.locator("li.card", has_text="Later").locator(".schedule")
    assert later.get_attribute("data-phase") == "upcoming"
    assert "Opens in 2 days 3 hours" in later.inner_text()
    assert "practice" in later.inner_text()
    page.goto(live_server.url + page_url("race"))
    banner = page.locator("p.schedule")
    assert banner.is_visible() and "closes in 5 hours" in banner.inner_text()
    # Through the service, as the admin and the API do (the page's cache follows the save).
    setup_services.challenge_update(
        challenge=race,
        data={"opens_at": now - timedelta(days=1), "closes_at": now - timedelta(hours=1)},
    )
    page.reload()
    assert page.locator("p.schedule").get_attribute("data-phase") == "ended"
    assert "Ended 1 hour ago" in page.locator("p.schedule").inner_text()
    assert page.errors == []


def test_admin_hides_an_attempt_and_a_player_the_board_follows(page, live_server, race, admin):
    public = live_server.url + page_url("race")
    page.goto(public)
    assert names(page)[:4] == ["Runner 1", "Runner 2", "Runner 3", "Runner 4"]

    log_in(page, live_server, username="admin", password="pw")
    best = Attempt.objects.get(player__external_id="u1", elapsed_ms=1000)
    page.goto(live_server.url + admin_url("attempt"))
    page.check(f"input[name=_selected_action][value='{best.pk}']")
    page.select_option("select[name=action]", "hide_attempts")
    page.click("button[name=index]")
    page.fill("input[name=reason]", "answer leaked")
    page.click("input[type=submit][value='Hide attempts']")
    assert "Hide attempts: 1 done." in page.locator("ul.messagelist").inner_text()
    row = page.locator("#result_list tbody tr", has=page.locator(f"input[value='{best.pk}']"))
    assert row.locator("td.field-hidden img").get_attribute("alt") == "True"  # marked hidden

    page.goto(public)
    # Runner 1's next-best attempt (9 s) takes the place of the hidden one: last now.
    assert names(page) == ["Runner 2", "Runner 3", "Runner 4", "Runner 1"]

    page.goto(live_server.url + admin_url("playerhide", "add"))
    page.fill("input[name=player]", str(best.player_id))
    page.select_option("select[name=challenge]", str(race.pk))
    page.fill("input[name=reason]", "second account")
    page.click("input[name=_save]")
    assert PlayerHide.objects.filter(player_id=best.player_id).exists()
    page.goto(public)
    assert names(page) == ["Runner 2", "Runner 3", "Runner 4"]

    # Undo both: the board is exactly what it was.
    page.goto(live_server.url + admin_url("playerhide"))
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", "unhide_players")
    page.click("button[name=index]")
    page.fill("input[name=reason]", "appeal upheld")
    page.click("input[type=submit][value='Unhide players']")
    page.goto(live_server.url + admin_url("attempt") + "?hidden__exact=1")
    page.check(f"input[name=_selected_action][value='{best.pk}']")
    page.select_option("select[name=action]", "unhide_attempts")
    page.click("button[name=index]")
    page.fill("input[name=reason]", "not a leak after all")
    page.click("input[type=submit][value='Unhide attempts']")
    page.goto(public)
    assert names(page)[:4] == ["Runner 1", "Runner 2", "Runner 3", "Runner 4"]
    assert page.errors == []


def test_frozen_board_for_the_public_live_for_staff_then_revealed(
    browser, page, live_server, race, admin
):
    import time

    setup_services.challenge_update(challenge=race, data={"freeze_at": timezone.now()})
    time.sleep(0.01)
    record(race, attempt_input("late", player_name="Late Sprinter", elapsed_ms=1, created_at=0))
    public = live_server.url + page_url("race")
    page.goto(public)
    notice = page.locator("[data-frozen='1']")
    assert notice.is_visible() and "frozen" in notice.inner_text()
    assert names(page) == ["Runner 1", "Runner 2", "Runner 3", "Runner 4"]
    page.goto(live_server.url + reverse("challenges:list"))
    assert "Late Sprinter" not in page.locator("li.card", has_text="Race").inner_text()

    staff_view = browser.new_context().new_page()
    log_in(staff_view, live_server, username="admin", password="pw")
    staff_view.goto(public)
    assert staff_view.locator("[data-frozen-live='1']").is_visible()
    assert staff_view.locator("table.leaderboard tbody th").all_inner_texts()[0] == "Late Sprinter"

    staff_view.goto(live_server.url + admin_url("challenge"))
    staff_view.check(f"input[name=_selected_action][value='{race.pk}']")
    staff_view.select_option("select[name=action]", "reveal_selected")
    staff_view.click("button[name=index]")
    assert "the board is revealed" in staff_view.locator("ul.messagelist").inner_text()
    page.goto(public)
    assert page.locator("[data-frozen='1']").count() == 0
    assert names(page)[0] == "Late Sprinter"
    assert page.errors == []
