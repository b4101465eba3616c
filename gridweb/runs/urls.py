"""Run pages, the gallery, compare and sweeps (mounted at the site root)."""

from django.urls import path

from . import views

app_name = "runs"

urlpatterns = [
    path("runs/", views.run_index, name="index"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="cancel"),
    path("runs/<int:pk>/delete/", views.run_delete, name="delete"),
    path("runs/<int:pk>/comments/", views.run_comment, name="comment"),
    path("runs/<int:pk>/share/", views.run_share, name="share"),
    path("runs/<int:pk>/segments.json", views.run_segments, name="segments"),
    path("runs/<int:pk>/gantt/tile", views.run_gantt_tile, name="gantt_tile"),
    path("runs/<int:pk>/gantt/job", views.run_gantt_job, name="gantt_job"),
    path("runs/<int:pk>/gantt/at", views.run_gantt_at, name="gantt_at"),
    path("runs/<int:pk>/jobs.json", views.run_jobs, name="jobs"),
    path("runs/<int:pk>/plots.json", views.run_plots, name="plots"),
    path("runs/<int:pk>/export/<str:kind>", views.run_export, name="export"),
    path("gallery/", views.gallery, name="gallery"),
    path("compare/", views.compare, name="compare"),
    path("sweeps/", views.sweep_list, name="sweeps"),
    path("sweeps/new/", views.sweep_new, name="sweep_new"),
    path("sweeps/<int:pk>/", views.sweep_detail, name="sweep"),
    path("sweeps/<int:pk>/status.json", views.sweep_status, name="sweep_status"),
    path("sweeps/<int:pk>/export/<str:kind>", views.sweep_export, name="sweep_export"),
]
