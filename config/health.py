"""``/healthz``: is this process able to serve? Checks the database and the broker.

For load balancers and orchestrators: 200 when both answer, 503 otherwise, JSON either
way, never cached. Errors are named by type only: no host names or credentials leak.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.celery import app as celery_app

BROKER_TIMEOUT_S = 3.0


def database_check() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def broker_check() -> None:
    """A connection from the app's pool (a load balancer asks often: a new connection per
    check cost two thirds of /healthz's rate against Redis), asked to answer: Redis is
    pinged, so a connection the broker dropped is seen, and reconnected once it is back."""
    with celery_app.pool.acquire(block=True, timeout=BROKER_TIMEOUT_S) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_S)
        client = getattr(conn.default_channel, "client", None)  # Redis transports only
        if client is not None:
            client.ping()


CHECKS: dict[str, Callable[[], None]] = {"database": database_check, "broker": broker_check}


def _timed(check: Callable[[], None]) -> dict:
    started = time.perf_counter()
    try:
        check()
    except Exception as exc:
        result = {"ok": False, "error": type(exc).__name__}
    else:
        result = {"ok": True}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {name: _timed(check) for name, check in CHECKS.items()}
    healthy = all(c["ok"] for c in checks.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks},
        status=200 if healthy else 503,
    )
