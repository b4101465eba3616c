from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "gridweb.web"
    label = "web"
    verbose_name = "GridWeb site"
