"""People for the web tests: a research group "lab" with alice and carol, and bob, an outsider; and a
Redis server a test module can stop and start (``own_redis``)."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from tests.conftest import _free_port


@pytest.fixture(autouse=True)
def fresh_login_counters():
    """One test's failed logins do not lock the next test's users (gridweb/accounts/throttle.py)."""
    yield
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):  # (never flush a shared Redis)
        caches["default"].clear()


@pytest.fixture
def lab(db) -> Group:
    return Group.objects.create(name="lab")


@pytest.fixture
def alice(django_user_model, lab):
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    user.groups.add(lab)
    return user


@pytest.fixture
def carol(django_user_model, lab):
    """In alice's research group."""
    user = django_user_model.objects.create_user("carol", password="pw-carol-123")
    user.groups.add(lab)
    return user


@pytest.fixture
def bob(django_user_model):
    """An outsider: in no group."""
    return django_user_model.objects.create_user("bob", password="pw-bob-123")


def client_for(user=None, csrf: bool = False) -> Client:
    """A test client logged in as ``user`` (anonymous when None); ``csrf`` enforces CSRF checks."""
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return client


#: how long a browser test waits for anything on the page (ms)
BROWSER_TIMEOUT_MS = 15_000


@pytest.fixture
def builder(live_server, page, user):
    """The browser page logged in as the module's ``user`` (its session cookie copied in), with
    JavaScript errors collected in ``page.js_errors``: the builder and run pages' browser tests."""
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                               "url": live_server.url}])
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    page.set_default_timeout(BROWSER_TIMEOUT_MS)
    page.set_viewport_size({"width": 1400, "height": 1000})
    return page


# --- A Redis of a test module's own (to stop and start: outages) ---------------------------------


class RedisServer:
    """A redis-server process on a free port that keeps nothing on disk."""

    def __init__(self, directory):
        self.port, self.directory = _free_port(), directory
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        import redis

        self.process = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                if redis.Redis.from_url(self.url, socket_timeout=1).ping():
                    return
            except redis.exceptions.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # as a crash or a power cut: no shutdown, nothing saved
            self.process.wait(timeout=20)


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")  # (CI and this machine have it)
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


def downloaded(response) -> bytes:
    """The body of a download: the exports of a run's files are streamed (gridweb.runs.exports.download)."""
    # (the test client closes a streamed response once read through, as a server does once sent)
    return b"".join(response.streaming_content) if response.streaming else response.content
