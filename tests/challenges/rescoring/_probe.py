"""Compute, then commit (issue 12, finding 3): attempt POSTs on one challenge while a
rescore of another runs a scorer that takes just under its timeout per attempt.

``measure()`` runs in the current database (the PostgreSQL test calls it in-process);
``python -m tests.challenges.rescoring._probe`` runs it on a fresh SQLite *file* (the
test suite's in-memory SQLite cannot show the database lock that a scorer run inside a
transaction held) and prints the result as JSON.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

SLEEP_MS = 450  # per attempt, under the challenge's timeout
TIMEOUT_MS = 500
SLOW_ATTEMPTS = 16
POSTS = 30


def measure() -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.db import connections
    from rest_framework.test import APIClient

    from challenges.models import Attempt
    from challenges.rescoring import jobs as rescoring
    from challenges.setup import services as setup_services
    from tests.factories import attempt_input, make_challenge, record
    from tests.urls import attempts_url

    slow = make_challenge(
        scoring_strategy="custom",
        scoring_plugin_id="t.slow",
        scoring_config={"sleep_ms": 0},
        timeout_ms=TIMEOUT_MS,
    )
    record(slow, *[attempt_input(f"s{i}", tokens_total=i) for i in range(SLOW_ATTEMPTS)])
    other = make_challenge(scoring_strategy="fewest_tokens")
    user = get_user_model().objects.create_user("probe")
    user.user_permissions.add(Permission.objects.get(codename="add_attempt"))
    client = APIClient()
    client.force_authenticate(user)

    update = setup_services.challenge_update(
        challenge=slow, data={"scoring_config": {"sleep_ms": SLEEP_MS}}
    )
    job = update.job
    done = threading.Event()
    errors: list[str] = []

    def rescore() -> None:
        try:
            rescoring.job_run_inline(job=job)
        except Exception as exc:  # reported to the test
            errors.append(repr(exc))
        finally:
            done.set()
            connections.close_all()

    runner = threading.Thread(target=rescore, daemon=True)
    runner.start()
    time.sleep(0.3)  # the first batch is being scored
    latencies, statuses = [], []
    for n in range(POSTS):
        started = time.perf_counter()
        body = {"player": f"o{n}", "tokens_total": n, "succeeded": True}
        response = client.post(attempts_url(other.pk), body, format="json")
        latencies.append(time.perf_counter() - started)
        statuses.append(response.status_code)
        time.sleep(0.05)
    during = not done.is_set()
    runner.join(120)
    job.refresh_from_db()
    latencies.sort()
    return {
        "statuses": sorted(set(statuses)),
        "p99_s": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max_s": latencies[-1],
        "rescore_still_running_after_posts": during,
        "job_status": job.status,
        "job_processed": job.processed,
        "errors": errors,
        "stored": Attempt.objects.filter(challenge=other).count(),
    }


def main() -> None:  # a fresh SQLite file, migrated, then measure()
    path = sys.argv[1]
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ["SCORING_PLUGINS"] = json.dumps({"t.slow": "tests.plugins:SlowTokens"})
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "false"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from challenges.rescoring import jobs as rescoring

    rescoring._send = lambda job: None  # the probe runs the job itself
    print(json.dumps(measure()))


if __name__ == "__main__":
    main()
