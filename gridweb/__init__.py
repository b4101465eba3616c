"""GridWeb: the Django project (accounts, scenarios, runs, streaming, gallery).

The Celery app is loaded here so that ``@shared_task`` binds to it and
``celery -A gridweb worker`` finds it.
"""

from .celery import app as celery_app

__all__ = ("celery_app",)
