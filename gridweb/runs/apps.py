from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "gridweb.runs"
    label = "runs"
    verbose_name = "Runs, sweeps and the gallery"

    def ready(self) -> None:
        # Embedded mode: the first request a server serves starts the worker thread, which picks
        # up the runs a stopped process left (see gridweb.runs.execution).
        from django.core.signals import request_started

        from .execution import start_embedded_worker_on_first_request

        request_started.connect(start_embedded_worker_on_first_request, dispatch_uid="gridweb-embedded-worker")
