"""Every public and admin page in a real browser, at 1280 and 390 px (issue 15): no
horizontal scroll, no console error, no text reading 1970, None, nan or a Python repr,
and the numbers the pages show equal the API's. Long unbroken names and slugs are part
of the data. Screenshots of each page at both widths go to var/artifacts/pages/."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from challenges.models import Attempt, Challenge, ScoringVersion
from scoring import sandbox
from tests.browser.conftest import ARTIFACTS, ranked_players
from tests.factories import WEIGHTED_SEED, attempt_input, make_challenge, record
from tests.urls import admin_url, change_url, leaderboard_url, metrics_url, page_url, player_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
LONG = "x" * 200  # an unbroken 200-character word
# Text a person should never read: an epoch-zero date, Python's None/nan, a repr.
BAD_TEXT = [
    (re.compile(r"\b1970\b"), "1970"),
    (re.compile(r"\bNone\b"), "None"),
    (re.compile(r"\b(nan|NaN)\b"), "nan"),
    (re.compile(r"\{'[^']*':|\[\{'|<[\w.]+ object at 0x"), "a Python repr"),
]
SNIPPET = """def compute_scores(sample):
    ok = sample.get("answer") not in (None, "")
    return {"is_complete": ok, "length": len(sample.get("answer") or "")}
"""


@pytest.fixture
def data(admin):
    """A weighted board with a long-named player, a fastest board, a snippet board with
    metrics, an empty board, and a challenge with a 200-character name and slug."""
    weighted = make_challenge(**WEIGHTED_SEED, slug="prompting")
    record(
        weighted,
        *ranked_players(12),
        attempt_input("long", player_name=LONG, rating=10, elapsed_ms=1000, tokens_total=896),
    )
    speed = make_challenge(name="Speed run", slug="speed", scoring_strategy="fastest")
    record(speed, attempt_input("a", elapsed_ms=1200), attempt_input("b", elapsed_ms=1200))
    make_challenge(name="Nobody yet", slug="empty", scoring_strategy="highest_rating")
    make_challenge(name=LONG, slug=LONG, scoring_strategy="first", description=LONG)
    made = {"weighted": weighted, "speed": speed}
    if sandbox.availability().available:
        snippet = make_challenge(
            name="Field completeness",
            slug="fields",
            scoring_strategy="python",
            scoring_code=SNIPPET,
            score_key="is_complete",
            metrics=[
                {"type": "mean", "field": "is_complete", "name": "Field completeness"},
                {"type": "frequency", "field": "is_complete", "name": "Answers"},
            ],
        )
        record(
            snippet,
            attempt_input("s1", sample={"answer": "Paris"}),
            attempt_input("s2", sample={"answer": ""}),
            attempt_input("s3", sample={}),
        )
        made["snippet"] = snippet
    return made


SHOW_ALL = """() => { for (const e of document.querySelectorAll("*")) {
    if (getComputedStyle(e).contentVisibility === "auto") e.style.contentVisibility = "visible";
} }"""


def check(page, url: str, name: str, status: int = 200) -> dict[str, str]:
    """Open ``url`` at both widths and assert the page is sound; return its text."""
    texts = {}
    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.errors.clear()
        response = page.goto(url)
        assert response is not None and response.status == status, (url, response.status)
        page.wait_for_load_state("networkidle")
        # Sections off screen may skip their layout (content-visibility: auto) until they
        # come near the viewport, where they look as they would have: lay out all of them,
        # so that the whole page is measured, read and photographed.
        page.evaluate(SHOW_ALL)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pages" / f"{name}-{width}.png"), full_page=True)
        assert overflow <= 0, f"{url} scrolls by {overflow}px at {width}: {widest(page)}"
        # A 404 page logs its own status; nothing else may be logged.
        own = f"the server responded with a status of {status}" if status != 200 else None
        errors = [e for e in page.errors if not (own and own in e)]
        assert not errors, (url, width, errors)
        text = page.evaluate("() => document.body.innerText")
        for pattern, label in BAD_TEXT:
            found = pattern.search(text)
            if found:
                around = text[max(0, found.start() - 60) : found.end() + 60]
                pytest.fail(f"{url} at {width} reads {label}: …{around}…")
        texts[width] = text
    return texts


def test_public_pages(page, live_server, data, client):
    base = live_server.url
    check(page, base + reverse("challenges:home"), "home")
    check(page, base + reverse("challenges:list"), "list")
    for key, challenge in data.items():
        check(page, base + page_url(challenge.slug), f"challenge-{key}")
    check(page, base + page_url("empty"), "challenge-empty")
    check(page, base + page_url(LONG), "challenge-long")
    check(page, base + player_url("prompting", "long"), "player-long")
    check(page, base + player_url("prompting", "user-03"), "player")
    check(page, base + page_url("prompting") + "?player=user-05", "challenge-player-param")
    check(page, base + page_url("no-such"), "not-found", status=404)
    check(page, base + player_url("prompting", "nobody"), "player-not-found", status=404)
    check(page, base + reverse("api-docs"), "api-docs")
    check(page, base + reverse("api-explorer"), "api-explorer")


def test_numbers_on_the_pages_equal_the_api(page, live_server, data, client):
    base = live_server.url
    weighted = data["weighted"]
    api = client.get(leaderboard_url(weighted.pk) + "?limit=50").json()
    page.set_viewport_size(WIDTHS["desktop"])
    page.goto(base + page_url("prompting"))
    rows = page.locator("#board tbody tr")
    shown = [
        (
            rows.nth(i).locator(".col-rank").inner_text().strip().lstrip("="),
            rows.nth(i).locator(".col-name").inner_text().strip(),
            rows.nth(i).locator(".col-value summary").inner_text().strip(),
        )
        for i in range(rows.count())
    ]
    expected = [
        (str(r["rank"]), r["display_name"], f"{r['score']:,.2f} pts") for r in api["results"]
    ]
    assert shown == expected
    # The card's ranked players and leader.
    page.goto(base + reverse("challenges:home"))
    card = page.locator("li.card", has=page.locator(f"a[href='{page_url('prompting')}']"))
    facts = card.locator("dl.facts").inner_text()
    assert re.search(rf"Ranked players\s+{api['count']}\b", facts), facts
    assert api["results"][0]["display_name"] in facts
    # A player's page: rank and best value as the API's row for that player.
    mine = client.get(leaderboard_url(weighted.pk) + "?player=user-03").json()
    [row] = mine["results"]
    page.goto(base + player_url("prompting", "user-03"))
    assert page.locator(".player-rank").inner_text().split()[0] == str(row["rank"])
    assert page.locator(".player-best").inner_text().strip() == f"{row['score']:,.2f} pts"
    # The snippet's metrics panel equals the metrics API.
    if "snippet" in data:
        metrics = client.get(metrics_url(data["snippet"].pk)).json()
        page.goto(base + page_url("fields"))
        panel = page.locator(".metrics").inner_text()
        mean = next(m for m in metrics if m["type"] == "mean")["value"]
        assert f"{mean:.4g}"[:4] in panel, panel


def test_admin_pages(page, live_server, data, admin):
    admin.set_password("pw")
    admin.save()
    base = live_server.url
    page.goto(base + reverse("admin:login"))
    check(page, base + reverse("admin:login"), "admin-login")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    weighted = data["weighted"]
    check(page, base + reverse("admin:index"), "admin-dashboard")
    check(page, base + admin_url("challenge"), "admin-challenges")
    check(page, base + change_url(weighted), "admin-challenge")
    long = Challenge.objects.get(slug=LONG)
    check(page, base + change_url(long), "admin-challenge-long")
    check(page, base + admin_url("challenge", "versions", weighted.pk), "admin-versions")
    check(page, base + admin_url("attempt"), "admin-attempts")
    attempt = Attempt.objects.filter(challenge=weighted).first()
    check(page, base + admin_url("attempt", "change", attempt.pk), "admin-attempt")
    check(page, base + admin_url("player"), "admin-players")
    check(page, base + admin_url("scoringversion"), "admin-scoringversions")
    version = ScoringVersion.objects.filter(challenge=weighted).first()
    check(page, base + admin_url("scoringversion", "change", version.pk), "admin-version")
    check(page, base + admin_url("attemptscore"), "admin-scores")
    check(page, base + admin_url("rescorejob"), "admin-jobs")
    if "snippet" in data:
        snippet = data["snippet"]
        check(page, base + change_url(snippet), "admin-snippet")


def widest(page) -> str:
    """For a failing overflow: the elements sticking out of the viewport (debugging aid)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
            .slice(0, 6)
            .map(e => `${e.tagName}#${e.id}.${e.className} ${e.getBoundingClientRect().right}`)
            .join(' | ')"""
    )


def test_charts_empty_state_and_time_axis(page, live_server):
    """No counted attempt: a sentence, no chart frames. Attempts within one minute: time
    ticks that do not repeat, and an axis that ends at the newest attempt."""
    from datetime import UTC, datetime, timedelta

    make_challenge(name="Nobody", slug="nobody", scoring_strategy="fastest")
    quick = make_challenge(name="Quick", slug="quick", scoring_strategy="fastest")
    start = datetime(2026, 3, 1, 10, 0, 0, tzinfo=UTC)
    record(
        quick,
        *[
            attempt_input(
                f"p{i}", elapsed_ms=1000 - 10 * i, created_at=start + timedelta(seconds=5 * i)
            )
            for i in range(8)
        ],
    )
    for size in WIDTHS.values():
        page.set_viewport_size(size)
        page.goto(live_server.url + page_url("nobody"))
        page.wait_for_selector("section.charts[data-drawn=true]")
        assert page.locator("#chart-status").inner_text().startswith("No charts yet")
        assert not page.locator("#chart-top").is_visible()
        page.goto(live_server.url + page_url("quick"))
        page.wait_for_selector("section.charts[data-drawn=true]")
        axis = page.evaluate(
            """() => { const x = Chart.getChart(document.getElementById('chart-top')).scales.x;
                       return {labels: x.ticks.map(t => t.label).filter(l => l), max: x.max}; }"""
        )
        assert len(axis["labels"]) == len(set(axis["labels"])) >= 2, axis
        newest = (start + timedelta(seconds=35)).timestamp() * 1000
        assert axis["max"] == newest, axis
        assert not page.errors, page.errors


def test_the_top_chart_names_its_lines_at_both_widths(page, live_server, data, client):
    """Ten lines need their names: in the chart's own legend on a desk, in a list under
    the chart on a phone, each beside its line's colour, in the chart's order."""
    weighted = data["weighted"]
    for name, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.goto(live_server.url + page_url(weighted.slug))
        page.wait_for_selector("section.charts[data-drawn=true]")
        chart = page.evaluate(
            """() => { const c = Chart.getChart(document.getElementById('chart-top'));
                       return {shown: c.options.plugins.legend.display,
                               lines: c.data.datasets.map(d => [d.label, d.borderColor])}; }"""
        )
        assert len(chart["lines"]) == 10
        listed = page.evaluate(
            """() => [...document.querySelectorAll('.chart-legend li')].map(li =>
                 [li.textContent, getComputedStyle(li.querySelector('.swatch')).backgroundColor])"""
        )
        if size["width"] < 640:
            assert not chart["shown"]
            assert [label for label, _ in listed] == [label for label, _ in chart["lines"]]
            assert all(colour not in ("", "rgba(0, 0, 0, 0)") for _, colour in listed)
            assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
        else:
            assert chart["shown"] and listed == []
        (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pages" / f"chart-legend-{name}.png"), full_page=True)
        assert not page.errors, page.errors


def test_try_it_results_are_readable_at_both_widths(page, live_server, data, admin):
    """Try it on a snippet challenge: scores as a table, the sample shown, no repr, no
    sideways scroll of the page."""
    if "snippet" not in data:
        pytest.skip(sandbox.availability().message)
    admin.set_password("pw")
    admin.save()
    page.goto(live_server.url + reverse("admin:login"))
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    url = live_server.url + change_url(data["snippet"])
    for width, size in WIDTHS.items():
        page.set_viewport_size(size)
        page.goto(url)
        page.click("#scoring-try-button")
        page.locator("#scoring-try table.scoring-scores").first.wait_for()
        text = page.locator("#scoring-try").inner_text()
        assert "is_complete" in text and "Sample" in text
        assert "{'" not in text
        page.locator("#scoring-try details.scoring-sample").last.click()  # s1: Paris
        assert '"answer"' in page.locator("#scoring-try").inner_text()
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        page.screenshot(path=str(ARTIFACTS / "pages" / f"admin-try-{width}.png"), full_page=True)
        assert overflow <= 0, widest(page)
        assert not page.errors, page.errors
