"""The REST API's URLs (docs/api.md); the OpenAPI schema at /api/schema/, Swagger UI at /api/docs/."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from . import views

app_name = "api"

# No browsable root view and no '.json' suffix variants: every route is in the OpenAPI schema.
router = SimpleRouter()
router.register("scenarios", views.ScenarioViewSet, basename="scenario")
router.register("traces", views.TraceViewSet, basename="trace")
router.register("runs", views.RunViewSet, basename="run")
router.register("sweeps", views.SweepViewSet, basename="sweep")
router.register("reproductions", views.ReproductionViewSet, basename="reproduction")

# Downloads of a done run keep their file names (no trailing slash).
run_exports = [
    path(f"runs/<int:pk>/{name}", views.RunExportView.as_view(), {"export": name}, name=f"run-{name}")
    for name in views.RunExportView.EXPORTS
]

urlpatterns = [
    path("token/", views.TokenView.as_view(), name="token"),
    path("reproductions/<int:pk>/files/<str:name>", views.ReproductionViewSet.as_view({"get": "file"}),
         name="reproduction-file"),
    path("me/", views.MeView.as_view(), name="me"),
    *run_exports,
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("", include(router.urls)),
]
