"""Guessing passwords stops after a few tries (issue 14, "No login throttling"): the probe sent 200
wrong passwords to /api/token/ and the login page, and then the right one worked. Now a username
is locked after GRIDWEB_LOGIN_FAILURES_PER_USER failures (an address after
GRIDWEB_LOGIN_FAILURES_PER_ADDRESS), the right password included, until the lock time has passed."""

from __future__ import annotations

import random
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from django.utils.module_loading import import_string

pytestmark = pytest.mark.django_db

PASSWORD = "pw-tess-123"


@pytest.fixture(autouse=True)
def defaults(settings):
    cache.clear()
    settings.GRIDWEB_LOGIN_FAILURES_PER_USER = 5
    settings.GRIDWEB_LOGIN_FAILURES_PER_ADDRESS = 20
    settings.GRIDWEB_LOGIN_LOCK_SECONDS = 900
    settings.GRIDWEB_LOGIN_BACKOFF_SECONDS = 60
    settings.GRIDWEB_TRUSTED_PROXY_HOPS = 0


@pytest.fixture
def tess(django_user_model):
    return django_user_model.objects.create_user("tess", password=PASSWORD)


def token(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(reverse("api:token"), {"username": username, "password": password},
                                            content_type="application/json")


def login_page(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(reverse("accounts:login"), {"username": username, "password": password})


def test_the_api_locks_a_username_after_five_failures_the_right_password_included(tess):
    assert token("tess", PASSWORD).status_code == 200
    for _ in range(5):
        assert token("tess", "wrong").status_code == 400
    refused = token("tess", PASSWORD)
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 60  # the first back-off
    assert re.search(r"too many failed logins: try again in \d+ seconds", refused.json()["errors"][""][0])
    # the same username from elsewhere is locked too, and the login page says so as well
    assert token("Tess ", PASSWORD, "10.9.9.9").status_code == 429
    page = login_page("tess", PASSWORD)
    assert page.status_code == 200 and "too many failed logins" in page.content.decode()
    assert "_auth_user_id" not in page.wsgi_request.session


def test_the_login_page_counts_its_failures_and_the_lock_ends(tess, settings):
    settings.GRIDWEB_LOGIN_BACKOFF_SECONDS = 3
    for _ in range(5):
        assert login_page("tess", "wrong").status_code == 200  # the form again, with its error
    assert token("tess", PASSWORD).status_code == 429
    time.sleep(int(token("tess", PASSWORD)["Retry-After"]) + 0.1)
    assert token("tess", PASSWORD).status_code == 200
    response = login_page("tess", PASSWORD)
    assert response.status_code == 302  # logged in


def test_a_success_clears_the_count_so_a_user_who_mistypes_now_and_then_is_never_locked(tess):
    for _ in range(3):
        for _ in range(4):
            assert token("tess", "wrong").status_code == 400
        assert token("tess", PASSWORD).status_code == 200


def test_one_address_trying_many_usernames_is_locked(tess, django_user_model):
    for i in range(20):
        assert token(f"nobody{i}", "wrong", "10.6.6.6").status_code == 400
    assert token("tess", PASSWORD, "10.6.6.6").status_code == 429
    assert token("tess", PASSWORD, "10.0.0.2").status_code == 200  # another address is not held back


def test_the_admin_login_is_throttled_too(django_user_model):
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    client = Client(REMOTE_ADDR="10.0.0.3")
    for _ in range(5):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    page = client.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert page.status_code == 200 and "too many failed logins" in page.content.decode()


# --- Issue 34: a throttle that holds ------------------------------------------------------------


class SlowCountingHasher(MD5PasswordHasher):
    """MD5 that counts the passwords it checks and takes as long as a real hasher does, so
    concurrent attempts overlap as they do on a server."""

    checked = 0
    lock = threading.Lock()

    def verify(self, password, encoded):
        with self.lock:
            type(self).checked += 1
        time.sleep(0.05)
        return super().verify(password, encoded)


@pytest.mark.django_db(transaction=True)
def test_concurrent_wrong_passwords_check_no_more_than_the_budget(settings, django_user_model):
    # issue 34: 49 wrong passwords and the right one in one burst were all checked (get-then-set)
    settings.PASSWORD_HASHERS = [f"{__name__}.SlowCountingHasher"]
    hasher = import_string(settings.PASSWORD_HASHERS[0])  # (the class Django uses, whatever pytest named this module)
    django_user_model.objects.create_user("tess", password=PASSWORD)
    hasher.checked = 0
    with ThreadPoolExecutor(max_workers=25) as pool:
        answers = list(pool.map(lambda i: token("tess", PASSWORD if i == 49 else f"wrong{i}").status_code, range(50)))
    assert hasher.checked <= 5, hasher.checked
    assert answers.count(400) + answers.count(200) == hasher.checked
    assert answers.count(429) >= 45


def test_behind_one_proxy_the_address_is_the_hop_the_proxy_wrote_not_the_leftmost(tess, settings):
    # issue 34: the leftmost X-Forwarded-For was trusted, so any header evaded or weaponized the limit
    settings.GRIDWEB_TRUSTED_PROXY_HOPS = 1

    def via_proxy(username, password, forwarded):
        return Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded).post(
            reverse("api:token"), {"username": username, "password": password}, content_type="application/json")

    for i in range(20):  # a random leftmost entry each time: still the one attacker at 10.6.6.6
        assert via_proxy(f"nobody{i}", "wrong", f"{random_address()}, 10.6.6.6").status_code == 400
    assert via_proxy("tess", PASSWORD, f"{random_address()}, 10.6.6.6").status_code == 429
    # the address the attacker named in front is not locked, nor is the proxy's own
    assert via_proxy("tess", PASSWORD, "10.0.0.7").status_code == 200


def test_without_trusted_proxies_the_forwarded_header_is_ignored(tess):
    for i in range(20):
        response = Client(REMOTE_ADDR="10.6.6.7", HTTP_X_FORWARDED_FOR=random_address()).post(
            reverse("api:token"), {"username": f"nobody{i}", "password": "wrong"}, content_type="application/json")
        assert response.status_code == 400
    assert token("tess", PASSWORD, "10.6.6.7").status_code == 429


def test_guessing_a_username_does_not_lock_out_its_user_s_browser(tess, django_user_model):
    # issue 34: anyone could keep a username locked forever with 5 guesses per period
    browser = Client(REMOTE_ADDR="10.0.0.1")
    assert browser.post(reverse("accounts:login"), {"username": "tess", "password": PASSWORD}).status_code == 302
    browser.post(reverse("accounts:logout"))
    for _ in range(10):  # the attacker, from elsewhere, without tess's device cookie
        token("tess", "guess", "10.6.6.8")
    assert token("tess", PASSWORD, "10.6.6.9").status_code == 429  # unknown browsers wait
    assert browser.post(reverse("accounts:login"), {"username": "tess", "password": PASSWORD}).status_code == 302
    # the device cookie is tess's alone: it does not lift the lock of another username
    browser.post(reverse("accounts:logout"))
    django_user_model.objects.create_user("uma", password=PASSWORD)
    for _ in range(5):
        token("uma", "guess", "10.6.6.8")
    page = browser.post(reverse("accounts:login"), {"username": "uma", "password": PASSWORD})
    assert page.status_code == 200 and "too many failed logins" in page.content.decode()


def test_a_device_cookie_has_a_budget_of_its_own(tess):
    browser = Client(REMOTE_ADDR="10.0.0.1")
    assert browser.post(reverse("accounts:login"), {"username": "tess", "password": PASSWORD}).status_code == 302
    browser.post(reverse("accounts:logout"))
    for _ in range(5):
        assert "correct username and password" in browser.post(
            reverse("accounts:login"), {"username": "tess", "password": "wrong"}).content.decode()
    page = browser.post(reverse("accounts:login"), {"username": "tess", "password": PASSWORD})
    assert page.status_code == 200 and "too many failed logins" in page.content.decode()


def test_the_lock_backs_off_exponentially_up_to_the_cap(tess, settings):
    settings.GRIDWEB_LOGIN_BACKOFF_SECONDS = 3
    settings.GRIDWEB_LOGIN_LOCK_SECONDS = 6
    waits = []
    for _ in range(3):
        for _ in range(5):
            assert token("tess", "wrong").status_code == 400
        refused = token("tess", PASSWORD)
        assert refused.status_code == 429
        waits.append(int(refused["Retry-After"]))
        time.sleep(waits[-1] + 0.1)
    # each window runs from its first attempt: the wait is what is left of 3 s, then of 6 s (twice 3), capped
    assert waits[0] <= 3 and 3 < waits[1] <= 6 and 3 < waits[2] <= 6, waits
    assert token("tess", PASSWORD).status_code == 200  # the real user, within the documented back-off


def test_logins_answer_a_clear_503_when_the_cache_is_down(tess, settings):
    # issue 34: logins answered 500 during the Redis outage (the throttle's counters are in Redis)
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": f"redis://127.0.0.1:{port}/0",
                                   "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
    client = Client(REMOTE_ADDR="10.0.0.1", raise_request_exception=False)
    started = time.monotonic()
    api = client.post(reverse("api:token"), {"username": "tess", "password": PASSWORD}, content_type="application/json")
    assert api.status_code == 503, api.content
    assert "logins are unavailable for a moment" in api.json()["errors"][""][0] and api["Retry-After"]
    page = client.post(reverse("accounts:login"), {"username": "tess", "password": PASSWORD})
    assert page.status_code == 503 and "logins are unavailable for a moment" in page.content.decode().lower()
    assert "_auth_user_id" not in client.session
    assert time.monotonic() - started < 5


def random_address() -> str:
    return ".".join(str(random.randint(1, 254)) for _ in range(4))
