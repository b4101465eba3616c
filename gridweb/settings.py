"""Django settings for GridWeb.

Two runtime modes (see DESIGN.md, "Runtime modes"):

* **Embedded** (the default, no environment needed): SQLite in ``db.sqlite3`` at the
  repository root, the in-memory channel layer, runs executed by a background thread of the
  web process (``GRIDWEB_EMBEDDED_WORKER``); other Celery tasks run eagerly in-process.
* **Full stack**: ``DATABASE_URL`` (PostgreSQL) selects the database and ``REDIS_URL``
  selects the channels_redis layer and the Celery broker and result backend; workers
  are started with ``celery -A gridweb worker`` (runs go to them; see docs/deploy.md).

Other environment variables: ``DJANGO_DEBUG`` (default off: only ``make run``, the development
path, turns it on; error pages then show settings), ``DJANGO_SECRET_KEY`` (default: a random key
kept in ``GRIDWEB_DATA_DIR/secret_key``; set it when several web servers share sessions),
``DJANGO_ALLOWED_HOSTS`` (default: this machine's names only) and ``DJANGO_CSRF_TRUSTED_ORIGINS``
(comma-separated). ``gridweb.settings_production``
builds on this module for a deployed server.
"""

import math
import os
import secrets
import sys
import tempfile
from pathlib import Path

import dj_database_url
from bokeh.util.paths import bokehjs_path
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable (``1/true/yes/on`` or ``0/false/no/off``)."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    truthy, falsy = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
    if value.strip().lower() in truthy:
        return True
    if value.strip().lower() in falsy:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use 1/0, true/false, yes/no or on/off.")


def env_seconds(name: str, default: float, minimum: float = 0.0, why: str = "") -> float:
    """Read a positive number of seconds (at least ``minimum``, for the reason ``why``) from the environment."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise ImproperlyConfigured(f"{name}={value!r} is not a positive number of seconds.")
    if seconds < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} is less than {minimum:g} seconds{': ' + why if why else ''}.")
    return seconds


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """Read a whole number of at least ``minimum`` from the environment (``5_000_000`` and ``5e6`` are
    refused: one spelling, so a typo is not read as something else)."""
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    text = value.strip()
    if not (text.isascii() and text.lstrip("+-").isdigit()) or len(text) > 30:
        raise ImproperlyConfigured(f"{name}={value!r} is not a whole number.")
    number = int(text)
    if number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} is less than {minimum}.")
    return number


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated environment variable into a list of non-empty items."""
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


# Off unless asked for: a DEBUG error page prints every setting (database and broker URLs included).
DEBUG = env_bool("DJANGO_DEBUG", False)

GRIDWEB_DATA_DIR = Path(os.environ.get("GRIDWEB_DATA_DIR", BASE_DIR / "artifacts" / "data"))


def secret_key_file(path: Path) -> str:
    """The key kept in ``path``, made (random, readable by this user only) the first time."""
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(50)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            return path.read_text().strip()
        with os.fdopen(fd, "w") as out:
            out.write(key)
        return key


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    SECRET_KEY = ("django-insecure-gridweb-development-key-do-not-use-in-production" if DEBUG
                  else secret_key_file(GRIDWEB_DATA_DIR / "secret_key"))

# Host names this server answers to (DJANGO_ALLOWED_HOSTS for any other: the name users type).
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves the ASGI application (HTTP + websockets)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served locally (no CDN)
    "gridweb.web",
    "gridweb.accounts",
    "gridweb.scenarios",
    "gridweb.runs",
    "gridweb.reproductions",
    "gridweb.api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # /static/ from any server (daphne alone, DEBUG off)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "gridweb.safe_json.RejectNulMiddleware",  # parameters with NUL characters: 400, not a database error
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "gridweb.accounts.middleware.PasswordChangeRequiredMiddleware",  # a one-time password is changed first
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gridweb.urls"
ASGI_APPLICATION = "gridweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "gridweb.web.context_processors.site",
            ],
        },
    },
]

# --- Runtime mode -------------------------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
REDIS_URL = os.environ.get("REDIS_URL", "").strip()
GRIDWEB_MODE = "full" if DATABASE_URL and REDIS_URL else "embedded"

# A pool per process (psycopg_pool): under ASGI each request's sync code runs in a thread of its
# own, and persistent connections left one open per thread (issue 34: 52 per daphne after 50
# logins). At most GRIDWEB_DB_POOL_MAX per process; a request that waits GRIDWEB_DB_POOL_TIMEOUT
# for one is answered 503 (gridweb/web/errors.py). The budget: docs/deploy.md, section 3.
# (Read in either mode, so a bad value is refused before it matters.)
GRIDWEB_DB_POOL_MAX = env_int("GRIDWEB_DB_POOL_MAX", 10)
GRIDWEB_DB_POOL_TIMEOUT = env_seconds("GRIDWEB_DB_POOL_TIMEOUT", 10.0)
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0, conn_health_checks=True)}
    # (the pool is PostgreSQL's: a DATABASE_URL may name an SQLite file, as a test's embedded site does)
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 0, "max_size": GRIDWEB_DB_POOL_MAX, "timeout": GRIDWEB_DB_POOL_TIMEOUT,
            "max_idle": 60.0,  # an idle connection is closed after a minute; a crowd's don't linger
            # one thread opens connections: each thread reserves ~72 MB of address space (stack and
            # malloc arena), which counts under a limit such as prlimit --as
            "num_workers": 1,
        }

    def _forget_inherited_pools() -> None:
        """In a forked child (a Celery prefork worker): its parent's pooled connections share
        their sockets with the parent; the child makes a pool of its own. (psycopg never ends a
        connection from a process that did not open it, so dropping them is safe.)"""
        backend = sys.modules.get("django.db.backends.postgresql.base")
        if backend is not None:
            backend.DatabaseWrapper._connection_pools.clear()

    os.register_at_fork(after_in_child=_forget_inherited_pools)
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "db.sqlite3",
            # The embedded worker thread writes while requests read and write: wait for the lock
            # instead of failing, and take it when a transaction starts (a read-then-write
            # transaction cannot wait for it later). Tests use a file too (one per process),
            # since SQLite's shared in-memory database refuses concurrent threads at once.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
            "TEST": {"NAME": str(Path(tempfile.gettempdir()) / f"gridweb-test-{os.getpid()}.sqlite3")},
        }
    }

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    CELERY_TASK_ALWAYS_EAGER = False
    # one cache for every web process (the login throttle's counters, gridweb/accounts/throttle.py)
    # Short socket timeouts: with Redis away a login answers 503 at once instead of hanging.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": "gridweb",
                          "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # No broker: tasks run in the calling process and their errors propagate.
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CELERY_TASK_ALWAYS_EAGER = True
    CELERY_TASK_EAGER_PROPAGATES = True

# Runs are never lost with a worker: run tasks are acknowledged only when they end (acks_late and
# reject_on_worker_lost on the task, gridweb.runs.tasks), each worker process reserves one task at a
# time (so a sweep spreads over every worker instead of queueing behind one), and Redis gives an
# unacknowledged task to another worker only after the visibility timeout, longer than any run.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 12 * 3600}
CELERY_RESULT_EXPIRES = 7 * 24 * 3600
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TRACK_STARTED = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- Accounts -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --- Internationalisation, static files ---------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# BokehJS is served from the installed bokeh package (same version as the Python side, no CDN).
STATICFILES_DIRS = [BASE_DIR / "static", ("bokeh", Path(bokehjs_path()) / "js")]
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "artifacts" / "staticfiles"))
# WhiteNoise serves the static files straight from their folders (no collectstatic needed);
# behind nginx the proxy serves them itself (docs/deploy.md).
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
try:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # (WhiteNoise also looks there: collectstatic's output)
except OSError:
    pass

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Logging in -------------------------------------------------------------------------------------
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "runs:gallery"
LOGOUT_REDIRECT_URL = "web:home"

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",  # the pages' own fetch() calls (CSRF checked)
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # JSON bodies with a bounded depth and no NUL characters (gridweb.safe_json)
    "DEFAULT_PARSER_CLASSES": ["gridweb.api.parsers.SafeJSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "gridweb.api.pagination.LimitOffsetPages",  # limit: whole, at most 1000
    "PAGE_SIZE": 50,
    # Bad input answers {"errors": {"dotted.field.path": [messages]}} with status 400.
    "EXCEPTION_HANDLER": "gridweb.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "GridWeb API",
    "DESCRIPTION": "Scenarios, traces, runs, sweeps and results of the GridWeb simulator.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,  # upload fields appear as binary in the request schemas
    "SWAGGER_UI_DIST": "SIDECAR",  # offline: from drf-spectacular-sidecar's static files
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Simulation runs ----------------------------------------------------------------------------
# Where uploaded traces are materialised for the engine (from the database, on any worker machine).
GRIDWEB_TRACE_DIR = GRIDWEB_DATA_DIR / "traces"
# Result arrays of finished runs (and their Gantt columns, memory-mapped by the level-of-detail
# views) go through Django's storage API, storage "results": local files under GRIDWEB_DATA_DIR by
# default; any storage backend (GRIDWEB_RESULTS_STORAGE, e.g. a shared network folder or an object
# store) when workers run on other machines (docs/deploy.md).
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "results": {
        "BACKEND": os.environ.get("GRIDWEB_RESULTS_STORAGE", "django.core.files.storage.FileSystemStorage"),
        "OPTIONS": ({"location": str(GRIDWEB_DATA_DIR / "results")}
                    if "GRIDWEB_RESULTS_STORAGE" not in os.environ else {}),
    },
}
# Largest trace upload accepted (bytes); larger uploads are refused before anything is stored.
GRIDWEB_MAX_TRACE_BYTES = env_int("GRIDWEB_MAX_TRACE_BYTES", 20 * 1024 * 1024)
# ... and what an upload may hold once decompressed (simengine.traces.ReadCaps): a file past one of
# these is refused as soon as the reader gets there, so memory stays bounded whatever the file.
GRIDWEB_TRACE_CAPS = {
    "bytes": env_int("GRIDWEB_MAX_TRACE_DECOMPRESSED_BYTES", 256 * 1024 * 1024),
    "line_bytes": env_int("GRIDWEB_MAX_TRACE_LINE_BYTES", 4096),
    "comment_lines": env_int("GRIDWEB_MAX_TRACE_COMMENT_LINES", 10_000),
    "jobs": env_int("GRIDWEB_MAX_TRACE_JOBS", 1_000_000),  # (Batsim: and profiles)
    # Batsim JSON: the longest job, profile or other value (the reader holds one at a time)
    "element_bytes": env_int("GRIDWEB_MAX_TRACE_ELEMENT_BYTES", 1024 * 1024),
}
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024  # scenario JSON bodies
# Recovery (full stack; gridweb.runs.execution.recover_lost_runs): a run whose execution is on
# another machine and has not refreshed its heartbeat (every 10 s) for this long is taken for dead
# (the engine holds the interpreter, and the heartbeat thread with it, for well under a second at a
# time while a run is watched -- compiled kernels, and an evolving plan, run in slices) ...
GRIDWEB_HEARTBEAT_STALE_SECONDS = env_seconds(
    "GRIDWEB_HEARTBEAT_STALE_SECONDS", 120, minimum=30,
    why="a run whose heartbeat (every 10 s) is older is taken for dead, so less would restart live runs")
# ... and every Celery worker looks for such runs (and for runs of dead processes of its own machine)
# this often, and hands them to the workers again.
GRIDWEB_RECOVERY_SECONDS = env_seconds("GRIDWEB_RECOVERY_SECONDS", 30, minimum=1,
                                       why="each worker's recovery sweep queries the database this often")
# A worker process that has grown past this (MB) after a task is replaced by a fresh one (a big
# run's peak memory is not kept for the next).
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env_int("GRIDWEB_WORKER_MAX_MEMORY_MB", 4096) * 1024  # KiB
# Limits (docs/deploy.md, Limits): the largest scenario this server queues (simengine.limits; checked
# wherever a scenario is validated, so the API, the builder and sweeps answer 400 naming the field),
# how many queued or running runs one user may have, and how long a run may take on a worker.
GRIDWEB_LIMITS = {
    "jobs": env_int("GRIDWEB_MAX_JOBS", 5_000_000),  # per replication
    "replications": env_int("GRIDWEB_MAX_REPLICATIONS", 1000),
    "cluster_processors": env_int("GRIDWEB_MAX_CLUSTER_PROCESSORS", 1_000_000),
    "platform_processors": env_int("GRIDWEB_MAX_PLATFORM_PROCESSORS", 10_000_000),
    "horizon": env_seconds("GRIDWEB_MAX_HORIZON_SECONDS", 100 * 365 * 86400),
    "stored_rows": env_int("GRIDWEB_MAX_STORED_ROWS", 20_000_000),  # job rows of a Result
    # evolving applications' stages per replication (their plan takes time growing with its square)
    "evolving_stages": env_int("GRIDWEB_MAX_EVOLVING_STAGES", 200_000),
    # the document's lists, checked before the schema reads them (validation grows with them)
    "clusters": env_int("GRIDWEB_MAX_CLUSTERS", 1000),
    "file_sites": env_int("GRIDWEB_MAX_FILE_SITES", 1000),
    "streams": env_int("GRIDWEB_MAX_STREAMS", 64),
    "reservations": env_int("GRIDWEB_MAX_RESERVATIONS", 10_000),
    "list_items": env_int("GRIDWEB_MAX_LIST_ITEMS", 100_000),  # e.g. an empirical distribution's values
}
# Password reset by e-mail (/accounts/password/reset/): printed to the console in embedded mode; a
# group's server names its SMTP relay (DJANGO_EMAIL_HOST, ...; Django's own settings otherwise).
EMAIL_BACKEND = os.environ.get("DJANGO_EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"
                               if os.environ.get("DJANGO_EMAIL_HOST") else "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "gridweb@localhost")

# Login throttling (gridweb/accounts/throttle.py, docs/deploy.md): each attempt reserves a place in
# its budgets before its password is checked -- a browser's own (its device cookie), else its
# username's and its address's: this many failures per window, the rest refused unchecked.
GRIDWEB_LOGIN_FAILURES_PER_USER = env_int("GRIDWEB_LOGIN_FAILURES_PER_USER", 5)
GRIDWEB_LOGIN_FAILURES_PER_ADDRESS = env_int("GRIDWEB_LOGIN_FAILURES_PER_ADDRESS", 20)
GRIDWEB_LOGIN_LOCK_SECONDS = env_seconds("GRIDWEB_LOGIN_LOCK_SECONDS", 15 * 60)
# A username's first lock; each used-up window doubles the next, up to GRIDWEB_LOGIN_LOCK_SECONDS
GRIDWEB_LOGIN_BACKOFF_SECONDS = env_seconds("GRIDWEB_LOGIN_BACKOFF_SECONDS", 60)
# Proxies in front of the server that append to X-Forwarded-For (0: the client's address is REMOTE_ADDR)
GRIDWEB_TRUSTED_PROXY_HOPS = env_int("GRIDWEB_TRUSTED_PROXY_HOPS", 0, minimum=0)
# An invite's one-time password logs in once, within this many days (gridweb/accounts/backends.py)
GRIDWEB_INVITE_PASSWORD_DAYS = env_int("GRIDWEB_INVITE_PASSWORD_DAYS", 7)
AUTHENTICATION_BACKENDS = ["gridweb.accounts.backends.InviteAwareModelBackend"]
# Rows of stored chunks each web process keeps for the viewers it streams them to (gridweb/runs/consumers.py)
GRIDWEB_CHUNK_CACHE_MB = env_int("GRIDWEB_CHUNK_CACHE_MB", 256)
# How often an open stream asks whether its run has ended, in case the announcement was lost
GRIDWEB_STREAM_END_CHECK_SECONDS = env_seconds("GRIDWEB_STREAM_END_CHECK_SECONDS", 5.0)
GRIDWEB_MAX_ACTIVE_RUNS = env_int("GRIDWEB_MAX_ACTIVE_RUNS", 300)  # per user (a sweep's points count)
# Fair share (gridweb/runs/execution.py): runs of one user handed to the Celery workers (in the broker or
# running) at once; the rest wait in the database and are handed over round-robin across users
GRIDWEB_USER_RUNS_IN_FLIGHT = env_int("GRIDWEB_USER_RUNS_IN_FLIGHT", 4)
# Stored results and uploaded traces one user may keep, in MB; over it a new run is refused
GRIDWEB_USER_STORAGE_MB = env_int("GRIDWEB_USER_STORAGE_MB", 10240)
GRIDWEB_RUN_WALL_SECONDS = env_seconds("GRIDWEB_RUN_WALL_SECONDS", 6 * 3600)
# Embedded mode runs simulations in a background thread of the web process instead of Celery.
GRIDWEB_EMBEDDED_WORKER = GRIDWEB_MODE == "embedded"
# The embedded worker starts with the first request the server serves, to pick up runs a stopped
# process left (gridweb.runs.execution); not under pytest, whose tests start it when they need it.
GRIDWEB_EMBEDDED_WORKER_AUTOSTART = GRIDWEB_EMBEDDED_WORKER and env_bool(
    "GRIDWEB_EMBEDDED_WORKER_AUTOSTART", "pytest" not in sys.modules)
