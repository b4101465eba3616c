from django.apps import AppConfig


class ReproductionsConfig(AppConfig):
    name = "gridweb.reproductions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the embedded worker executes reproductions as it does runs (gridweb.runs.execution);
        # (imported here: models cannot be imported before the app registry is ready)
        from gridweb.runs.execution import register_embedded_work, register_recovery_send

        from . import execution  # (as above)

        register_embedded_work("reproduction", execution.execute_reproduction, execution.recover)
        # full stack: one created while the broker was down is sent by the workers' recovery sweep
        register_recovery_send("reproduction", execution.send_waiting)
