"""Shared fixtures: named personas, an API client per role and a signed-in browser
(Django's test client) per role.

Personas: ``admin`` (superuser), ``scorer_admin`` (only challenges.change_scoring),
``staff`` (is_staff, no scoring rights), ``scoring_staff`` (that staff user in the
"Scoring staff" group: view permissions on the challenge admin's pages), ``integration``
(the Integrations group: may record attempts), ``plain_user`` (an account with no role
at all: not staff, no permission).

Clients: ``anon_api``, ``<persona>_api`` (a token, ``_client_for``) for admin, staff,
integration, scorer_admin and plain_user (``plain_api``); ``<persona>_client`` (a session,
``_signed_in``) for admin, staff, scoring_staff and plain_user (``plain_client``).
``admin_client`` replaces pytest-django's fixture of that name (its user is ``admin``).
A test whose point is a user of its own rights (an editor with the model's change
permission only, a watcher without one view permission) makes that user itself.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("CELERY_TASK_ALWAYS_EAGER", "true")


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _exact_rankings(settings):
    # Tests compare ranks with a brute force right after each change; the debounce has
    # its own test (tests/challenges/public/test_pages_ranking.py).
    settings.PODIUM_RANKING_MAX_AGE_MS = 0


@pytest.fixture(autouse=True)
def _data_migration_groups(request):
    # A transactional test ends with a flush that empties every table, the groups that
    # data migrations made included: make them again, as those migrations do, for the
    # tests that run after it on the same database.
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        return
    request.getfixturevalue("transactional_db" if marker.kwargs.get("transaction") else "db")
    from django.contrib.auth.models import Group

    if Group.objects.filter(name__in=DATA_MIGRATION_GROUPS).count() == len(DATA_MIGRATION_GROUPS):
        return
    from importlib import import_module

    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    state_apps = MigrationLoader(connection).project_state().apps
    for name in DATA_MIGRATION_GROUPS.values():
        import_module(f"challenges.migrations.{name}").create_group(state_apps, None)


DATA_MIGRATION_GROUPS = {
    "Integrations": "0002_integrations_group",
    "Scoring staff": "0004_scoring_staff_group",
}


@pytest.fixture(autouse=True)
def _unhurried_ingestion(settings):
    # A loaded test machine must not turn inline scoring into "pending": the scoring
    # budget has its own tests (tests/challenges/ingestion/test_scoring_budget.py), which
    # set it explicitly.
    settings.PODIUM_SCORING_BUDGET_MS = 60_000


@pytest.fixture(autouse=True)
def _fresh_cache():
    # Throttle counters and cached fragments live in the cache: no test sees another's.
    from django.core.cache import cache

    from challenges.leaderboards import evaluation, kept

    def forget() -> None:
        cache.clear()
        kept.local_clear()  # the process's copies of kept builds
        evaluation.checks_clear()

    forget()
    yield
    forget()


@pytest.fixture(autouse=True)
def _eager_celery(settings):
    # Tests run tasks inline; the real-worker tests (rescoring issue) opt out explicitly.
    from config.celery import app

    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield


@pytest.fixture
def admin(db, django_user_model):
    return django_user_model.objects.create_superuser("admin", "admin@example.com", "pw")


@pytest.fixture
def scorer_admin(db, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("scorer", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="change_scoring"))
    return user


@pytest.fixture
def staff(db, django_user_model):
    return django_user_model.objects.create_user("staff", password="pw", is_staff=True)


@pytest.fixture
def scoring_staff(staff):
    from django.contrib.auth.models import Group

    staff.groups.add(Group.objects.get(name="Scoring staff"))
    return staff


@pytest.fixture
def integration(db, django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("integration")
    user.groups.add(Group.objects.get(name="Integrations"))
    return user


@pytest.fixture
def plain_user(db, django_user_model):
    return django_user_model.objects.create_user("plain", password="pw")


def _client_for(user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def anon_api(db):
    return _client_for(None)


@pytest.fixture
def admin_api(admin):
    return _client_for(admin)


@pytest.fixture
def staff_api(staff):
    return _client_for(staff)


@pytest.fixture
def integration_api(integration):
    return _client_for(integration)


@pytest.fixture
def scorer_admin_api(scorer_admin):
    return _client_for(scorer_admin)


@pytest.fixture
def plain_api(plain_user):
    return _client_for(plain_user)


def _signed_in(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin_client(admin):
    return _signed_in(admin)


@pytest.fixture
def staff_client(staff):
    return _signed_in(staff)


@pytest.fixture
def scoring_staff_client(scoring_staff):
    return _signed_in(scoring_staff)


@pytest.fixture
def plain_client(plain_user):
    return _signed_in(plain_user)


# --- what was skipped, why, and how to run it -------------------------------------------
# The end of `make test` names every group of skipped tests with the reason and how to
# enable them, so "23 skipped" is never silent (issue 15).
HOW_TO_ENABLE = (
    (
        "Chromium",
        "install Debian's browser: `sudo apt-get install chromium` (or set PODIUM_CHROMIUM)",
    ),
    ("playwright", "`.venv/bin/pip install -r requirements-dev.txt`"),
    (
        "PostgreSQL",
        "run with DATABASE_URL=postgres://… (and CELERY_BROKER_URL=redis://…), as .ci/run does",
    ),
    (
        "Redis",
        "run with CELERY_BROKER_URL=redis://… and DATABASE_URL=postgres://…, as .ci/run does",
    ),
    (
        "bubblewrap",
        "`sudo apt-get install bubblewrap` (and Linux 5.13+ with Landlock, libseccomp2)",
    ),
    ("sandbox", "`sudo apt-get install bubblewrap` (and Linux 5.13+ with Landlock, libseccomp2)"),
    ("Landlock", "a Linux 5.13+ kernel with Landlock, or `sudo apt-get install bubblewrap`"),
    ("schemathesis", "`.venv/bin/pip install -r requirements-dev.txt`"),
)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    groups: dict[str, list[str]] = {}
    for report in skipped:
        groups.setdefault(_skip_reason(report), []).append(report.nodeid)
    terminalreporter.write_sep("-", f"{len(skipped)} skipped: why, and how to run them")
    for reason, nodeids in sorted(groups.items(), key=lambda item: -len(item[1])):
        files = sorted({n.split("::")[0] for n in nodeids})
        shown = ", ".join(files[:3]) + (
            f" and {len(files) - 3} more files" if len(files) > 3 else ""
        )
        terminalreporter.write_line(f"{len(nodeids)} skipped ({shown}): {reason}")
        hint = next((how for word, how in HOW_TO_ENABLE if word.lower() in reason.lower()), None)
        if hint:
            terminalreporter.write_line(f"    to run them: {hint}")
