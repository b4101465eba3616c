from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "gridweb.runs"
    label = "runs"
    verbose_name = "Runs, sweeps and the gallery"

    def ready(self) -> None:
        # Embedded mode: the first request a server serves starts the worker thread, which picks
        # up the runs a stopped process left (see gridweb.runs.execution).
        # (in ready(): models and signal handlers only once Django has loaded the apps)
        from django.core.signals import request_started
        from django.db.models.signals import post_delete

        from . import gantt_tiles, result_store  # (as above)
        from .execution import start_embedded_worker_on_first_request
        from .models import Run, RunResult

        request_started.connect(start_embedded_worker_on_first_request, dispatch_uid="gridweb-embedded-worker")
        request_started.connect(gantt_tiles.warm_up, dispatch_uid="gridweb-gantt-warm-up")
        # a deleted run's result files go with it
        post_delete.connect(result_store.on_result_deleted, sender=RunResult, dispatch_uid="gridweb-result-files")
        post_delete.connect(result_store.on_run_deleted, sender=Run, dispatch_uid="gridweb-ended-gantt-files")
