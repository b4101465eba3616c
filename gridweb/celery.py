"""Celery app for GridWeb, configured from Django settings (``CELERY_*`` names).

Full stack: broker and result backend are ``REDIS_URL``; start workers with
``celery -A gridweb worker`` on any number of machines (docs/deploy.md). Runs are the task
``gridweb.execute_run`` and sweeps a group of them with a chord callback
(``gridweb.runs.tasks``). Embedded mode: runs go to the web process's own worker thread
(``gridweb.runs.execution.EmbeddedWorker``); other tasks run eagerly in the calling process.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridweb.settings")

app = Celery("gridweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
