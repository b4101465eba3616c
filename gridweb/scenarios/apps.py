from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "gridweb.scenarios"
    label = "scenarios"
    verbose_name = "Scenarios and traces"
