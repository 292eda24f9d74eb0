"""Request rate limits for the API (DRF throttles; counters live in the cache)."""

from __future__ import annotations

from rest_framework.throttling import UserRateThrottle


class AttemptsThrottle(UserRateThrottle):
    """Recording attempts: ``PODIUM_ATTEMPTS_RATE`` requests per token's user (429 with a
    ``Retry-After`` header beyond it), so one runaway integration cannot starve the
    others. DRF's per-user throttle under its own scope; anonymous callers are refused
    before it runs."""

    scope = "attempts"
