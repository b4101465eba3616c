from django.urls import path

from . import views

app_name = "web"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),  # readiness, as /healthz/ready (kept for existing probes)
    path("healthz/ready", views.healthz, name="healthz-ready"),
    path("healthz/live", views.healthz_live, name="healthz-live"),
]
