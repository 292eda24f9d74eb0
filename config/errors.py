"""Error pages: JSON under /api/ (clients parse it), the site's HTML page elsewhere."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler


def _api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "You do not have permission to do this."}, status=403)
    return defaults.permission_denied(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if _api(request):
        return JsonResponse({"detail": "Server error; it has been logged."}, status=500)
    return defaults.server_error(request)


def api_exception(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, but a 404 says only "Not found." (docs/errors.md): DRF passes the
    Http404's own words on, and ``get_object_or_404``'s name the model ("No Challenge
    matches the given query.")."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    return exception_handler(exc, context)
