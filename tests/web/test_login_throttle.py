"""Guessing passwords stops after a few tries (issue 14, "No login throttling"): the probe sent 200
wrong passwords to /api/token/ and the login page, and then the right one worked. Now a username
is locked after GRIDWEB_LOGIN_FAILURES_PER_USER failures (an address after
GRIDWEB_LOGIN_FAILURES_PER_ADDRESS), the right password included, until the lock time has passed."""

from __future__ import annotations

import time

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

PASSWORD = "pw-tess-123"


@pytest.fixture(autouse=True)
def defaults(settings):
    cache.clear()
    settings.GRIDWEB_LOGIN_FAILURES_PER_USER = 5
    settings.GRIDWEB_LOGIN_FAILURES_PER_ADDRESS = 20
    settings.GRIDWEB_LOGIN_LOCK_SECONDS = 900


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
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 900
    assert "too many failed logins: try again in 15 minutes" in refused.json()["errors"][""][0]
    # the same username from elsewhere is locked too, and the login page says so as well
    assert token("Tess ", PASSWORD, "10.9.9.9").status_code == 429
    page = login_page("tess", PASSWORD)
    assert page.status_code == 200 and "too many failed logins" in page.content.decode()
    assert "_auth_user_id" not in page.wsgi_request.session


def test_the_login_page_counts_its_failures_and_the_lock_ends(tess, settings):
    for _ in range(5):
        assert login_page("tess", "wrong").status_code == 200  # the form again, with its error
    assert token("tess", PASSWORD).status_code == 429
    settings.GRIDWEB_LOGIN_LOCK_SECONDS = 0.5
    time.sleep(0.6)
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
