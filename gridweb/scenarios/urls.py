"""Scenario pages and the builder's JSON endpoints (namespace ``scenarios``)."""

from django.urls import path

from . import views

app_name = "scenarios"

urlpatterns = [
    path("", views.scenario_list, name="list"),
    path("new/", views.scenario_new, name="new"),
    path("import/", views.scenario_import, name="import"),
    path("validate/", views.validate, name="validate"),
    path("preview/", views.preview, name="preview"),
    path("catalog.json", views.engine_catalog, name="catalog"),
    path("traces/upload/", views.trace_upload, name="trace_upload"),
    path("<int:pk>/", views.scenario_detail, name="detail"),
    path("<int:pk>/edit/", views.scenario_edit, name="edit"),
    path("<int:pk>/duplicate/", views.scenario_duplicate, name="duplicate"),
    path("<int:pk>/delete/", views.scenario_delete, name="delete"),
    path("<int:pk>/export.json", views.scenario_export, name="export"),
    path("<int:pk>/run/", views.scenario_run, name="run"),
]
