from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "gridweb.api"
    label = "api"
    verbose_name = "REST API"
