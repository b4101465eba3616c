"""The placeholder site, its settings in both runtime modes, and the production checks."""

from __future__ import annotations

import secrets
import string
import subprocess
import sys
import uuid

import pytest
import simengine
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator
from django.conf import settings
from django.urls import reverse

from gridweb.web.tasks import ping
from tests.conftest import ROOT, project_env, run_python, run_python_json

# --- Pages ---------------------------------------------------------------------------------------


def test_home_page_says_what_gridweb_is(client, db):
    response = client.get(reverse("web:home"))

    assert response.status_code == 200
    assert [t.name for t in response.templates][:2] == ["web/home.html", "base.html"]
    body = response.content.decode()
    assert "<h1>GridWeb</h1>" in body
    assert "multicluster scheduling" in body
    assert "css/site.css" in body


def test_home_page_names_every_kind_of_curated_demo_run(client, db):
    """The blurb said 'four traces and Zikos & Karatza's Random' while the gallery also pins the
    Ballier, KOALA, reservations and Cao runs (gridweb.runs.demo)."""
    from gridweb.runs.demo import RECIPES, SHOWCASES, TRACES

    body = client.get(reverse("web:home")).content.decode()
    blurb = body.split("Curated demo runs</a>", 1)[1].split("</p>", 1)[0]
    assert len(TRACES) == 4 and "four real workload traces" in blurb
    assert len(RECIPES) == 5 and len(SHOWCASES) == 2
    for family in ("Zikos", "Ballier", "KOALA", "reservations", "Cao"):
        assert family in blurb, family


def test_home_page_shows_the_engine_version(client, db, monkeypatch):
    monkeypatch.setattr(simengine, "__version__", "9.8.7", raising=False)

    body = client.get("/").content.decode()

    assert '<code id="engine-version">9.8.7</code>' in body


def test_home_page_without_engine_version_says_dev(client, db, monkeypatch):
    monkeypatch.delattr(simengine, "__version__", raising=False)

    body = client.get("/").content.decode()

    assert '<code id="engine-version">dev</code>' in body


def test_home_page_refuses_post(client):
    assert client.post("/").status_code == 405


# --- Health check --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_reports_database_and_channel_layer(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert "no-cache" in response["Cache-Control"]
    assert response.json() == {
        "status": "ok",
        "mode": "embedded",
        "engine": getattr(simengine, "__version__", "dev"),
        "database": {"ok": True, "vendor": "sqlite"},
        "channel_layer": {"ok": True, "backend": "channels.layers.InMemoryChannelLayer"},
    }


@pytest.mark.django_db
def test_healthz_is_503_when_the_channel_layer_does_not_answer(client, settings):
    # Nothing listens on port 1: the round trip fails, and the check says so.
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }

    response = client.get("/healthz")

    assert response.status_code == 503
    report = response.json()
    assert report["status"] == "error"
    assert report["database"]["ok"] is True
    assert report["channel_layer"]["ok"] is False
    assert report["channel_layer"]["backend"] == "channels_redis.core.RedisChannelLayer"
    assert "ConnectionError" in report["channel_layer"]["error"]


@pytest.mark.django_db
def test_healthz_is_ready_but_busy_not_503_when_the_channel_layer_answers_slowly(client, settings, test_redis_url):
    # Redis takes the message at once but it comes back after the check's 2 s: a loaded server
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "tests.web.slow_channel_layer.SlowReceiveRedisChannelLayer",
            "CONFIG": {"hosts": [test_redis_url], "prefix": f"healthz-test-{uuid.uuid4().hex}"},
        }
    }

    for path in ("/healthz", "/healthz/ready"):
        response = client.get(path)

        assert response.status_code == 200, response.json()
        report = response.json()
        assert report["status"] == "busy"
        assert report["database"]["ok"] is True
        assert report["channel_layer"]["ok"] is True and report["channel_layer"]["busy"] is True
        assert "within 2 s" in report["channel_layer"]["detail"]


@pytest.mark.django_db
def test_healthz_ready_is_503_and_live_is_200_when_the_channel_layer_is_down(client, settings):
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }

    ready = client.get("/healthz/ready")
    live = client.get("/healthz/live")

    assert ready.status_code == 503 and ready.json()["channel_layer"]["ok"] is False
    # the process answers: a liveness probe must not get it restarted for a Redis outage
    assert live.status_code == 200
    assert live.json() == {"status": "ok", "mode": "embedded", "engine": getattr(simengine, "__version__", "dev")}
    assert "no-cache" in live["Cache-Control"]
    assert client.post("/healthz/live").status_code == 405


# --- ASGI and Celery in embedded mode ------------------------------------------------------------


def test_asgi_application_serves_http(transactional_db):  # (the home page lists the reproductions)
    from gridweb.asgi import application

    async def get_home():
        return await HttpCommunicator(application, "GET", "/", headers=[(b"host", b"localhost")]).get_response(
            timeout=10)

    response = async_to_sync(get_home)()

    assert response["status"] == 200
    assert b"GridWeb" in response["body"]


WEBSOCKET_ORIGIN_PROBE = """
import json

from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from channels.generic.websocket import AsyncWebsocketConsumer

from gridweb.asgi import application
from gridweb.web.origin import SameOriginValidator

# the site's websockets go through the check; what it lets through reaches this stand-in consumer
assert isinstance(application.application_mapping["websocket"], SameOriginValidator)
checked = SameOriginValidator(AsyncWebsocketConsumer.as_asgi())


async def connect(headers):
    communicator = WebsocketCommunicator(checked, "/ws/runs/1/", headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    return connected


print(json.dumps({
    "foreign page": async_to_sync(connect)([(b"origin", b"https://evil.example"), (b"host", b"gridweb.example")]),
    "no host": async_to_sync(connect)([(b"origin", b"https://evil.example")]),
    # (a plain socket: the page is http; scheme and port are checked in test_websocket_origin.py)
    "own page": async_to_sync(connect)([(b"origin", b"http://gridweb.example"), (b"host", b"gridweb.example")]),
    "own page, port": async_to_sync(connect)([(b"origin", b"http://gridweb.example:8443"),
                                             (b"host", b"gridweb.example:8443")]),
    "rebound name": async_to_sync(connect)([(b"origin", b"http://evil.example"), (b"host", b"evil.example")]),
    "script": async_to_sync(connect)([(b"host", b"gridweb.example")]),
}))
"""


@pytest.mark.parametrize("debug", ["0", "1"])
def test_asgi_application_refuses_websockets_opened_by_other_sites(debug):
    # In a subprocess: the settings are read when the application is built.
    env = project_env(DJANGO_ALLOWED_HOSTS="gridweb.example", DJANGO_DEBUG=debug)

    assert run_python_json(WEBSOCKET_ORIGIN_PROBE, env=env) == {
        "foreign page": False, "no host": False, "own page": True, "own page, port": True,
        "rebound name": False,  # a page whose name was pointed at this server: not an allowed host
        "script": True,  # no Origin: no browser carrying someone's cookie; the consumer checks the rest
    }


def test_a_page_of_another_site_cannot_open_a_websocket_even_with_every_host_allowed():
    env = project_env(DJANGO_ALLOWED_HOSTS="*", DJANGO_DEBUG="1")
    found = run_python_json(WEBSOCKET_ORIGIN_PROBE, env=env)
    assert found["foreign page"] is False and found["own page"] is True


@pytest.mark.skipif(settings.GRIDWEB_MODE != "embedded", reason="the test process runs in full-stack mode")
def test_celery_runs_tasks_eagerly_in_embedded_mode():
    assert ping.delay("hello").get(timeout=5) == "hello"


# --- Settings: embedded, bad input, production ---------------------------------------------------

SETTINGS_PROBE = """
import json
import django
django.setup()
from django.conf import settings
print(json.dumps({
    "mode": settings.GRIDWEB_MODE,
    "debug": settings.DEBUG,
    "engine": settings.DATABASES["default"]["ENGINE"],
    "name": str(settings.DATABASES["default"]["NAME"]),
    "channel_layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "broker": settings.CELERY_BROKER_URL,
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "first_app": settings.INSTALLED_APPS[0],
}))
"""


def test_embedded_mode_is_the_default():
    found = run_python_json(SETTINGS_PROBE, env=project_env())

    assert found == {
        "mode": "embedded",
        "debug": False,  # only when asked for (make run asks)
        "engine": "django.db.backends.sqlite3",
        "name": str(ROOT / "db.sqlite3"),
        "channel_layer": "channels.layers.InMemoryChannelLayer",
        "broker": "memory://",
        "eager": True,
        "first_app": "daphne",
    }


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DJANGO_DEBUG": "sometimes"}, "DJANGO_DEBUG='sometimes' is not a boolean"),
        ({"GRIDWEB_STREAM_END_CHECK_SECONDS": "0"},
         "GRIDWEB_STREAM_END_CHECK_SECONDS='0' is not a positive number of seconds"),
        ({"GRIDWEB_STREAM_END_CHECK_SECONDS": "soon"},
         "GRIDWEB_STREAM_END_CHECK_SECONDS='soon' is not a positive number of seconds"),
        ({"DJANGO_SETTINGS_MODULE": "gridweb.settings_production"}, "DJANGO_SECRET_KEY must be set"),
    ],
)
def test_bad_settings_environment_is_a_clear_error(env, message):
    result = run_python(SETTINGS_PROBE, env=project_env(**env))

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def _random_secret_key() -> str:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    return "".join(secrets.choice(alphabet) for _ in range(50))


def test_production_settings_pass_the_deploy_check():
    env = project_env(
        DJANGO_SETTINGS_MODULE="gridweb.settings_production", DJANGO_SECRET_KEY=_random_secret_key()
    )

    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


# --- Full stack: PostgreSQL + Redis --------------------------------------------------------------

FULL_STACK_PROBE = """
import asyncio
import json
import uuid

import django
django.setup()
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.test import Client


async def group_round_trip():
    layer = get_channel_layer()
    group = "run-test-" + uuid.uuid4().hex
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    try:
        await layer.group_send(group, {"type": "run.chunk", "seq": 7})
        return await asyncio.wait_for(layer.receive(channel), timeout=10)
    finally:
        await layer.group_discard(group, channel)


with connection.cursor() as cursor:
    cursor.execute("SELECT version()")
    server = cursor.fetchone()[0]
message = asyncio.run(group_round_trip())
health = Client().get("/healthz", HTTP_HOST="localhost")  # (no test runner: "testserver" is no host here)
print(json.dumps({
    "mode": settings.GRIDWEB_MODE,
    "engine": settings.DATABASES["default"]["ENGINE"],
    "vendor": connection.vendor,
    "server": server,
    "channel_layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
    "broker": settings.CELERY_BROKER_URL,
    "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "message": message,
    "health_status": health.status_code,
    "health": health.json(),
}))
"""


@pytest.mark.slow
def test_full_stack_settings_talk_to_postgresql_and_redis(full_stack_env):
    found = run_python_json(FULL_STACK_PROBE, env=full_stack_env)

    assert found["mode"] == "full"
    assert found["engine"] == "django.db.backends.postgresql"
    assert found["vendor"] == "postgresql"
    assert found["server"].startswith("PostgreSQL")
    assert found["channel_layer"] == "channels_redis.core.RedisChannelLayer"
    assert found["broker"] == full_stack_env["REDIS_URL"]
    assert found["eager"] is False
    assert found["message"] == {"type": "run.chunk", "seq": 7}
    assert found["health_status"] == 200, found["health"]
    assert found["health"]["database"] == {"ok": True, "vendor": "postgresql"}
    assert found["health"]["channel_layer"] == {
        "ok": True,
        "backend": "channels_redis.core.RedisChannelLayer",
    }


SEND_PING = """
import json
import sys

import django
django.setup()
from gridweb.web.tasks import ping

print(json.dumps(ping.apply_async(args=["pong-" + sys.argv[1]], queue=sys.argv[1]).get(timeout=60)))
"""


CELERY_WORKER_ARGS = (
    "-m celery -A gridweb worker --pool solo --without-gossip --without-mingle --without-heartbeat --loglevel INFO"
).split()


@pytest.mark.slow
def test_celery_worker_runs_tasks_through_redis(full_stack_env):
    queue = "gridweb-test-" + uuid.uuid4().hex
    worker = subprocess.Popen(
        [sys.executable, *CELERY_WORKER_ARGS, "--queues", queue],
        cwd=ROOT,
        env=full_stack_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", SEND_PING, queue],
            cwd=ROOT,
            env=full_stack_env,
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        worker.terminate()
        try:
            log, _ = worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            log, _ = worker.communicate()

    assert result.returncode == 0, f"{result.stderr}\nworker log:\n{log}"
    assert result.stdout.strip().splitlines()[-1] == f'"pong-{queue}"'
    assert "gridweb.ping" in log


# --- Safe defaults (issue 14, "Debug leaks by default") ---------------------------------------------

ERROR_PAGE_PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.test import Client
from django.urls import path

import gridweb.urls


def broken(request):
    raise RuntimeError("a bug")


gridweb.urls.urlpatterns.append(path("broken/", broken))
response = Client(raise_request_exception=False).get("/broken/", HTTP_HOST="localhost")
body = response.content.decode()
static = Client().get("/static/css/site.css", HTTP_HOST="localhost")
print(json.dumps({"status": response.status_code, "debug": settings.DEBUG,
                  "leaks": [word for word in ("DATABASES", "REDIS_URL", "SECRET_KEY", "Traceback", "a bug")
                            if word in body],
                  "key": settings.SECRET_KEY, "static": static.status_code}))
"""


def test_by_default_an_error_page_shows_no_settings_and_static_files_are_still_served(tmp_path):
    # the README's full-stack steps set no DJANGO_DEBUG: errors must not print the settings, and a
    # bare ASGI server (daphne, or runserver without DEBUG) serves /static/ itself (WhiteNoise)
    env = project_env(GRIDWEB_DATA_DIR=str(tmp_path), REDIS_URL="redis://:hunter2@127.0.0.1:6379/9")
    found = run_python_json(ERROR_PAGE_PROBE, env=env)
    assert found["status"] == 500 and found["debug"] is False and found["leaks"] == [], found
    assert found["static"] == 200
    # the secret key is made once, random, readable by its owner only, and kept across restarts
    key_file = tmp_path / "secret_key"
    assert key_file.read_text() == found["key"] and len(found["key"]) >= 50 and "insecure" not in found["key"]
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert run_python_json(ERROR_PAGE_PROBE, env=env)["key"] == found["key"]
    # asked for (make run does), DEBUG shows the developer's error page
    debug = run_python_json(ERROR_PAGE_PROBE, env={**env, "DJANGO_DEBUG": "1"})
    assert debug["debug"] is True and "Traceback" in debug["leaks"]


def test_make_run_is_the_only_place_that_asks_for_debug():
    makefile = (ROOT / "Makefile").read_text()
    assert "DJANGO_DEBUG=$${DJANGO_DEBUG:-1} $(PY) manage.py runserver" in makefile
    readme = (ROOT / "README.md").read_text()
    full_stack_commands = readme.split("## Full stack mode")[1].split("```sh")[1].split("```")[0]
    assert "manage.py runserver" in full_stack_commands and "DJANGO_DEBUG" not in full_stack_commands
