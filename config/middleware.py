"""Project-wide middleware: request size limits."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse


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
