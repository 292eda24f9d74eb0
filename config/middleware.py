"""Project-wide middleware: request size limits, transient database errors."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse

from config.transient import forget_connection, is_database_error, is_transient

logger = logging.getLogger(__name__)


def _too_large(request: HttpRequest, limit: int) -> HttpResponse:
    message = f"The request body is larger than the limit of {limit} bytes."
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message, "limit_bytes": limit}, status=413)
    return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")


class BodySizeLimitMiddleware:
    """413 for a body over ``PODIUM_MAX_BODY_BYTES``, decided on Content-Length before a
    byte of the body is read (Django alone would answer 400 once it tried to read it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # a malformed header: Django reads no body at all
        if length > settings.PODIUM_MAX_BODY_BYTES:
            return _too_large(request, settings.PODIUM_MAX_BODY_BYTES)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # Django's own limit, met while reading a body (the API's views included: DRF
        # leaves this exception to us).
        if isinstance(exception, RequestDataTooBig):
            return _too_large(request, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return None


RETRY_AFTER_S = 1
# A read that could not reach the database is tried again after these waits (about a
# second in all) before its 503: a pooler or database restarting (a PgBouncer restart
# refuses connections for a moment) is then invisible to readers.
READ_RETRY_WAITS_S = (0.1, 0.3, 0.6)


class TransientErrorMiddleware:
    """503 with Retry-After, never a 500, for a request that met a transient database
    error (a lost connection, a deadlock, a serialization failure, a locked SQLite
    database). Writes are all-or-nothing transactions, so trying again is safe; an
    attempts POST can carry an Idempotency-Key to make sure of it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method in ("GET", "HEAD"):  # safe to run again
            for wait in READ_RETRY_WAITS_S:
                if not getattr(response, "database_away", False):
                    break
                time.sleep(wait)
                response = self.get_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_transient(exception):
            return None
        logger.warning(
            "transient database error; answered 503",
            extra={"path": request.path, "error": repr(exception)[:300]},
        )
        forget_connection()
        message = "The service is briefly unavailable; try again in a moment."
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse({"detail": message}, status=503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_S)
        response.database_away = is_database_error(exception)  # type: ignore[attr-defined]
        return response
