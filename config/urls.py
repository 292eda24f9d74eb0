from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from challenges.api.reference import reference_page
from challenges.urls import api_urlpatterns
from config.health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # The reference: the schema as a server-rendered page (no script, a few kilobytes).
    path("api/docs/", reference_page, name="api-docs"),
    # The interactive explorer (Swagger UI). The split view serves its start-up code as a
    # script file, not inline: the Content-Security-Policy allows no inline script.
    path(
        "api/docs/explorer/",
        SpectacularSwaggerSplitView.as_view(url_name="schema"),
        name="api-explorer",
    ),
    path("api/", include(api_urlpatterns)),
    path("", include("challenges.urls")),
]

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.not_found"
handler500 = "config.errors.server_error"
