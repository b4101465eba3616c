"""Celery app for GridWeb, configured from Django settings (``CELERY_*`` names).

Full stack: broker and result backend are ``REDIS_URL``; start workers with
``celery -A gridweb worker``. Embedded mode: tasks run eagerly in the calling process.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gridweb.settings")

app = Celery("gridweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
