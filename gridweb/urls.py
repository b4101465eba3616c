"""Root URL configuration: one include per app."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("gridweb.accounts.urls")),
    path("scenarios/", include("gridweb.scenarios.urls")),
    path("reproductions/", include("gridweb.reproductions.urls")),
    path("", include("gridweb.runs.urls")),  # runs/, sweeps/, gallery/
    path("api/", include("gridweb.api.urls")),
    path("", include("gridweb.web.urls")),
]

# the site's own error pages (gridweb.web.errors): the reason in words, no settings
handler400 = "gridweb.web.errors.bad_request"
handler403 = "gridweb.web.errors.permission_denied"
handler404 = "gridweb.web.errors.page_not_found"
handler500 = "gridweb.web.errors.server_error"
