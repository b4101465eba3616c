from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "gridweb.runs"
    label = "runs"
    verbose_name = "Runs, sweeps and the gallery"
