"""Reproduction pages (mounted at reproductions/)."""

from django.urls import path

from . import views

app_name = "reproductions"

urlpatterns = [
    path("", views.reproduction_list, name="list"),
    path("rerun/", views.reproduction_rerun, name="rerun"),
    path("<int:pk>/", views.reproduction_detail, name="detail"),
    path("<int:pk>/status.json", views.reproduction_status, name="status"),
    path("<int:pk>/files/<str:name>", views.reproduction_file, name="file"),
]
