"""Logins while the cache is down (issue 34: logins answered 500 during the Redis outage, the login
throttle's counters being in Redis). Nothing can be counted then, so no password is checked: a
clear 503 at once, and logins work again as soon as Redis is back."""

from __future__ import annotations

import shutil
import socket
import time

import pytest
from django.test import Client
from django.urls import reverse

from tests.conftest import project_env, run_python
from tests.web.conftest import RedisServer

PASSWORD = "pw-tess-123"


@pytest.fixture
def own_redis(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")  # (CI and this machine have it)
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.mark.django_db
def test_logins_answer_503_while_redis_is_stopped_and_work_again_when_it_is_back(own_redis, settings,
                                                                                 django_user_model):
    django_user_model.objects.create_user("tess", password=PASSWORD)
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": own_redis.url, "KEY_PREFIX": "gridweb",
                                   "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}

    def log_in():
        return Client(REMOTE_ADDR="10.0.0.1", raise_request_exception=False).post(
            reverse("api:token"), {"username": "tess", "password": PASSWORD}, content_type="application/json")

    assert log_in().status_code == 200
    own_redis.stop()
    started = time.monotonic()
    down = log_in()
    assert down.status_code == 503 and "logins are unavailable for a moment" in down.json()["errors"][""][0]
    assert time.monotonic() - started < 3
    own_redis.start()  # (the same port)
    assert log_in().status_code == 200


def test_the_site_s_redis_cache_gives_up_within_its_socket_timeout():
    # a Redis that takes the connection and never answers (overloaded, or a half-dead host):
    # the full-stack settings' timeouts answer 503 in about a second instead of hanging the login
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)
        code = ("import time, django; django.setup()\n"
                "from django.core.cache import cache\n"
                "started = time.monotonic()\n"
                "try:\n    cache.add('login:probe', 0)\nexcept Exception as exc:\n"
                "    print('gave up after', round(time.monotonic() - started, 2), type(exc).__name__)\n")
        result = run_python(code, env=project_env(REDIS_URL=f"redis://127.0.0.1:{hung.getsockname()[1]}/0"),
                            timeout=20)
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    assert words[:3] == ["gave", "up", "after"] and float(words[3]) < 3, result.stdout
