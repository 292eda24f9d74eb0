"""Accessibility and page quality, audited by the tools people use: axe-core on every
public page, the API reference and the admin pages the README's tour opens (no serious
or critical violation, at 1280 and 390 px), and Lighthouse on the API reference at
mobile settings (performance ≥ 90, accessibility ≥ 95, best practices ≥ 95; each the
median of three runs, as Lighthouse's own guidance on score variability advises: the
suite runs in parallel, and one run's performance score moves with the machine's load).

The tools come from npm (pinned below) into var/npm-tools on first use; without npm, or
when its registry cannot be reached, the tests are skipped with the reason. They run
once, in the suite's SQLite pass (the pages are the same on PostgreSQL).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest
from django.urls import reverse

from tests.browser.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
from tests.browser.test_every_page import LONG, data  # noqa: F401 - the fixture
from tests.browser.test_formats import formats  # noqa: F401 - the fixture
from tests.urls import (
    collection_page_url,
    history_page_url,
    page_url,
    player_url,
    version_page_url,
)

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "var" / "npm-tools"
PACKAGES = ["lighthouse@13.5.0", "axe-core@4.14.1"]
WIDTHS = (1280, 390)
SERIOUS = {"serious", "critical"}
LIGHTHOUSE_MIN = {"performance": 90, "accessibility": 95, "best-practices": 95}
LIGHTHOUSE_RUNS = 3  # the median of each category is judged

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="the page audit runs in the suite's SQLite pass (the pages are the same)",
    ),
]


@pytest.fixture(scope="module")
def tools() -> Path:
    """node_modules with lighthouse and axe-core, installed once per checkout."""
    modules = TOOLS / "node_modules"
    if (modules / "axe-core" / "axe.min.js").exists() and (
        modules / ".bin" / "lighthouse"
    ).exists():
        return modules
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("the page audit needs npm (Debian: apt-get install npm)")
    TOOLS.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [npm, "install", "--prefix", str(TOOLS), "--no-audit", "--no-fund", "--silent",
             *PACKAGES],
            check=True, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        tail = getattr(exc, "stderr", "") or ""
        pytest.skip(f"npm could not install {', '.join(PACKAGES)}: {str(tail)[-300:]}")
    return modules


def _tour_pages(base: str, data, formats, admin) -> list[tuple[str, str, bool]]:  # noqa: F811
    """(name, url, needs the admin login) of every page audited."""
    weighted = data["weighted"]
    pages = [
        ("list", base + reverse("challenges:list"), False),
        ("challenge", base + page_url(weighted.slug), False),
        ("challenge-fastest", base + page_url("speed"), False),
        ("challenge-empty", base + page_url("empty"), False),
        ("challenge-long", base + page_url(LONG), False),
        ("player", base + player_url(weighted.slug, "user-03"), False),
        ("history", base + history_page_url(weighted.slug), False),
        ("version", base + version_page_url(weighted.slug, 1), False),
        ("not-found", base + page_url("no-such"), False),
        ("api-docs", base + reverse("api-docs"), False),
        ("admin-login", base + reverse("admin:login"), False),
        ("admin-dashboard", base + reverse("admin:index"), True),
        (
            "admin-challenge",
            base + reverse("admin:challenges_challenge_change", args=[weighted.pk]),
            True,
        ),
    ]
    if "snippet" in data:
        pages.append(("challenge-snippet", base + page_url(data["snippet"].slug), False))
    league, season = formats
    pages.append(("red-blue", base + page_url(league.slug), False))
    pages.append(("collection", base + collection_page_url(season.slug), False))
    return pages


def test_axe_finds_no_serious_violation(browser, live_server, data, formats, admin, tools):  # noqa: F811
    axe = (tools / "axe-core" / "axe.min.js").read_text()
    admin.set_password("pw")
    admin.save()
    found: dict[str, list[str]] = {}
    counts: list[str] = []
    for width in WIDTHS:
        # bypass_csp: axe is injected into pages whose policy allows no such script.
        context = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(20_000)
        logged_in = False
        for name, url, needs_login in _tour_pages(live_server.url, data, formats, admin):
            if needs_login and not logged_in:
                page.goto(live_server.url + reverse("admin:login"))
                page.fill("#id_username", admin.username)
                page.fill("#id_password", "pw")
                page.click("input[type=submit]")
                page.wait_for_load_state()
                logged_in = True
            page.goto(url)
            page.evaluate(axe)
            result = page.evaluate(
                "axe.run(document, {resultTypes: ['violations']})"
                ".then(r => r.violations.map(v => ({id: v.id, impact: v.impact,"
                " nodes: v.nodes.length})))"
            )
            serious = [v for v in result if v["impact"] in SERIOUS]
            counts.append(f"{name}@{width}: {len(result)} ({len(serious)} serious)")
            if serious:
                found[f"{name}@{width}"] = [f"{v['id']} ×{v['nodes']}" for v in serious]
        context.close()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "axe.txt").write_text("\n".join(counts) + "\n")
    assert not found, found


def lighthouse_scores(url: str, tools: Path, report: Path) -> dict[str, int]:
    for _ in range(3):  # a trace Lighthouse failed to record itself asks to be run again
        run = _lighthouse(url, tools, report)
        if "Please run Lighthouse again" not in run.stderr:
            break
    assert run.returncode == 0, run.stderr[-2000:]
    categories = json.loads(report.read_text())["categories"]
    return {name: round(c["score"] * 100) for name, c in categories.items()}


def _lighthouse(url: str, tools: Path, report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tools / ".bin" / "lighthouse"), url,
         "--quiet", "--form-factor=mobile", "--output=json", f"--output-path={report}",
         "--only-categories=performance,accessibility,best-practices",
         "--chrome-flags=" + " ".join(CHROMIUM_ARGS)],
        env={**os.environ, "CHROME_PATH": CHROMIUM},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_lighthouse_on_the_api_reference_at_mobile_settings(live_server, tools, tmp_path):
    url = live_server.url + reverse("api-docs")
    runs = [
        lighthouse_scores(url, tools, tmp_path / f"lighthouse-{n}.json")
        for n in range(LIGHTHOUSE_RUNS)
    ]
    scores = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "lighthouse-api-docs.json").write_text(
        json.dumps({"median": scores, "runs": runs}) + "\n"
    )
    low = {k: v for k, v in scores.items() if v < LIGHTHOUSE_MIN.get(k, 0)}
    assert not low, {"median": scores, "runs": runs}
