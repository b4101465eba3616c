"""People for the web tests: a research group "lab" with alice and carol, and bob, an outsider."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client


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
