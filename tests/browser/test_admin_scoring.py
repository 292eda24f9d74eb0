"""The scoring admin in a real browser, on the demo data: an admin switches a challenge
to the weighted scorer, tunes a weight, previews the rank changes, saves, and the public
leaderboard shows the new order once the rescore is done; staff see the code editor
without a save button.

Screenshots of the form and the preview are kept under ``var/artifacts/`` (git-ignored;
``PODIUM_ARTIFACTS_DIR`` moves them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from challenges.models import Attempt, Challenge, RescoreJob
from challenges.transfer.demo import seed_demo
from tests.browser.conftest import ARTIFACTS
from tests.urls import admin_url, change_url, page_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, live_server, *, username: str, password: str) -> None:
    page.goto(live_server.url + reverse("admin:login"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(live_server.url + reverse("admin:index"))


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


def expected_order(challenge: Challenge, weights: dict[str, float]) -> list[str]:
    """The weighted scorer's leaderboard by hand (the formula of docs/scorers.md): best attempt
    per player, higher first, then the earlier attempt."""
    best: dict[int, tuple[float, object, str]] = {}
    for a in Attempt.objects.filter(challenge=challenge).select_related("player"):
        score = (
            (weights["success_bonus"] if a.succeeded else 0.0)
            + (a.rating or 0) * weights["rating_weight"]
            - (a.elapsed_ms or 0) / 1000 * weights["time_penalty"]
            - (a.tokens_total or 0) * weights["token_penalty"]
        )
        key = (-max(score, 0.0), a.created_at, a.player.display_name)
        if a.player_id not in best or key < best[a.player_id]:
            best[a.player_id] = key
    return [name for _, _, name in sorted(best.values())]


def test_admin_switches_to_weighted_previews_saves_and_the_board_follows(page, live_server, admin):
    seed_demo()
    challenge = Challenge.objects.get(slug="speed-run")  # ranked by the fastest success
    log_in(page, live_server, username="admin", password="pw")
    # The dashboard lists the demo challenges.
    dashboard = page.locator("#podium-dashboard")
    assert "Speed Run: Regex Golf" in dashboard.inner_text()

    page.goto(live_server.url + change_url(challenge))
    plugin = page.locator("select[name=scoring_plugin_id]")
    weight = page.get_by_label("Rating weight")
    assert not plugin.is_visible()  # fastest uses no plugin: its rows are hidden
    page.select_option("select[name=scoring_strategy]", "custom")
    assert plugin.is_visible() and not weight.is_visible()
    assert not page.locator("textarea[name=scoring_code]").is_visible()
    page.select_option("select[name=scoring_plugin_id]", "builtin.weighted_scorer")
    entrypoint = page.locator("input[name=scoring_entrypoint]")
    assert entrypoint.input_value() == "scoring.scorers.weighted:WeightedScorer"
    assert entrypoint.get_attribute("readonly") is not None
    assert weight.is_visible() and weight.input_value() == "10.0"  # the schema's default
    assert "Points per rating point" in page.locator(".scoring-weights").inner_text()
    weight.fill("40")
    screenshot(page, "admin-scoring-form.png")

    # Preview: the new top 20 beside the current one, with rank changes.
    page.click("#scoring-preview-button")
    result = page.locator("#scoring-preview")
    result.wait_for()
    summary = result.locator(".scoring-preview__summary").inner_text()
    assert "would change rank" in summary
    changed = int(result.locator("[data-changed]").get_attribute("data-changed"))
    assert changed > 0
    changes = result.locator("table[data-board=new] .rank-change").all_inner_texts()
    assert any(c.startswith(("↑", "↓")) for c in changes), changes
    result.scroll_into_view_if_needed()
    screenshot(page, "admin-scoring-preview.png")
    new_top = [
        row.locator("td").nth(1).inner_text()
        for row in result.locator("table[data-board=new] tbody tr").all()
    ]

    # Try it: the latest attempts scored with the unsaved weights.
    page.click("#scoring-try-button")
    page.locator("#scoring-try").wait_for()
    assert "rating_contribution" in page.locator("#scoring-try").inner_text()
    challenge.refresh_from_db()
    assert challenge.scoring_strategy == "fastest"  # nothing saved yet

    page.click("input[name=_save]")
    page.wait_for_url(live_server.url + admin_url("challenge"))
    assert "Scoring version 2 made" in page.locator(".messagelist").inner_text()
    job = RescoreJob.objects.get(challenge=challenge)
    assert job.status == RescoreJob.Status.SUCCEEDED  # eager Celery ran it at commit
    challenge.refresh_from_db()
    assert challenge.active_version.number == 2

    weights = {
        "success_bonus": 100.0,
        "rating_weight": 40.0,
        "time_penalty": 1.0,
        "token_penalty": 0.01,
    }
    expected = expected_order(challenge, weights)
    page.goto(live_server.url + page_url("speed-run"))
    names = page.locator("table tbody tr .col-name").all_inner_texts()
    assert names[:10] == expected[:10]
    assert names[:20] == new_top  # what the preview showed
    assert "version 2" in page.locator("main").inner_text()
    assert page.errors == []


def scoring_staff_group() -> Group:
    """The group the data migration makes (a transactional test before this one may have
    flushed it: then it is made again the same way, view permissions only)."""
    group, created = Group.objects.get_or_create(name="Scoring staff")
    if created:
        group.permissions.add(
            *Permission.objects.filter(
                content_type__app_label="challenges", codename__startswith="view_"
            )
        )
    return group


def test_staff_see_the_code_editor_without_a_save_button(page, live_server, staff):
    staff.groups.add(scoring_staff_group())
    challenge = Challenge.objects.create(
        name="Snippet",
        slug="snippet",
        scoring_strategy="python",
        scoring_code="def compute_scores(sample):\n    return {'ok': sample['succeeded']}\n",
        score_key="ok",
    )
    log_in(page, live_server, username="staff", password="pw")
    page.goto(live_server.url + change_url(challenge))
    editor = page.locator("textarea[name=scoring_code]")
    assert editor.is_visible() and editor.is_disabled()
    assert page.locator("[data-code-gutter]").inner_text().split() == ["1", "2", "3"]
    assert page.locator("input[name=_save]").count() == 0
    assert page.locator("input[name=_continue]").count() == 0
    assert page.locator("#scoring-try-button").count() == 0
    assert page.get_by_role("button", name="Rescore now").is_visible()
    assert page.errors == []


def test_admin_code_editor_numbers_lines_and_adds_template_inputs(page, live_server, admin):
    challenge = Challenge.objects.create(name="Snippet", slug="snippet", scoring_strategy="python")
    log_in(page, live_server, username="admin", password="pw")
    page.goto(live_server.url + change_url(challenge))
    editor = page.locator("textarea[name=scoring_code]")
    editor.fill("def compute_scores(sample):\n    return {'x': << config.scale >>}\n")
    page.locator("input[name='template.scale']").wait_for()
    assert page.locator("[data-code-gutter]").inner_text().split() == ["1", "2", "3"]
    page.fill("input[name='template.scale']", "")
    page.click("input[name=_continue]")
    # The server reports the snippet errors on their inputs; nothing is saved.
    template = page.locator(".scoring-template").first.inner_text()
    assert "The code uses << config.scale >>: give it a value." in template
    assert page.locator(".scoring-code").inner_text().count("1\n2\n3") == 1  # still numbered
    assert page.locator("input[name=_save]").is_visible()  # admins may save
    challenge.refresh_from_db()
    assert challenge.scoring_code == ""
    from scoring import sandbox

    if sandbox.availability().available:  # with a value, the snippet saves
        assert page.locator(".field-scoring_strategy .errorlist").count() == 0
        page.fill("input[name='template.scale']", "3")
        page.click("input[name=_continue]")
        page.locator(".messagelist .success").wait_for()
        challenge.refresh_from_db()
        assert "<< config.scale >>" in challenge.scoring_code
        assert challenge.scoring_config == {"scale": 3}
    else:
        assert "sandbox" in page.locator(".field-scoring_strategy").inner_text()
    assert page.errors == []


CLIPPED = """() => {
  const out = [];
  for (const e of document.querySelectorAll('#content input[type=text], #content textarea')) {
    if (e.offsetParent && e.scrollWidth > e.clientWidth + 1) out.push('text of ' + e.id);
  }
  for (const e of document.querySelectorAll('#content .help')) {
    if (!e.offsetParent) continue;
    const right = e.getBoundingClientRect().right;
    for (let box = e.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible'
          && right > box.getBoundingClientRect().right + 1) { out.push('help ' + e.id); break; }
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_weighted_setup_shows_every_text_whole(page, live_server, admin, width):
    """The read-only entrypoint and every help text of a weighted challenge's form show
    whole: no input whose text is cut, no help clipped by its row."""
    seed_demo()
    challenge = Challenge.objects.get(slug="advanced-prompt-challenge")
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server, username="admin", password="pw")
    page.goto(live_server.url + change_url(challenge))
    assert page.get_by_label("Rating weight").is_visible()
    screenshot(page, f"admin-weighted-{width}.png")
    assert page.evaluate(CLIPPED) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
