"""Settings for a deployed GridWeb server (behind a TLS-terminating reverse proxy).

Use with ``DJANGO_SETTINGS_MODULE=gridweb.settings_production``. Requires
``DJANGO_SECRET_KEY``; set ``DJANGO_ALLOWED_HOSTS`` (default: localhost only) and,
for the full stack, ``DATABASE_URL`` and ``REDIS_URL``. Checked by
``python manage.py check --deploy``.
"""

import os

from django.core.exceptions import ImproperlyConfigured

from .settings import *  # noqa: F403
from .settings import env_bool, env_int, env_list

DEBUG = False

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set for gridweb.settings_production.")

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1"])

# HTTPS: the proxy terminates TLS and says so in X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^healthz(/live|/ready)?$"]  # probes from inside the network speak plain HTTP
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 60 * 60 * 24 * 365, minimum=0)  # 0: no HSTS
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
X_FRAME_OPTIONS = "DENY"
