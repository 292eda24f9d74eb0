"""Request rate limits for the API (DRF throttles; counters live in the cache)."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle


class AttemptsThrottle(SimpleRateThrottle):
    """Recording attempts: ``PODIUM_ATTEMPTS_RATE`` requests per token (429 with a
    ``Retry-After`` header beyond it). Keyed on the token's user, so one runaway
    integration cannot starve the others; anonymous callers are refused before this."""

    scope = "attempts"

    def get_cache_key(self, request: Request, view: object) -> str | None:
        if request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
