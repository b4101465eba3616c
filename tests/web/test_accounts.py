"""Logging in and out, changing the password, the account page and its API token, and the
``gridweb_group`` command that creates research groups and invites users."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from gridweb.accounts.models import PasswordChangeRequired

pytestmark = pytest.mark.django_db

PASSWORD = "Correct-Horse-42"


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", email="alice@example.org", password=PASSWORD)


def gridweb_group(*args: str) -> str:
    out = StringIO()
    call_command("gridweb_group", *args, stdout=out)
    return out.getvalue()


# --- Login, logout, password change ---------------------------------------------------------------


def test_login_page_renders_inside_the_site(client):
    response = client.get(reverse("accounts:login"))

    assert response.status_code == 200
    assert [t.name for t in response.templates][:2] == ["accounts/login.html", "base.html"]
    assert 'name="csrfmiddlewaretoken"' in response.content.decode()


def test_login_with_good_password_starts_a_session(client, alice):
    response = client.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD,
                                                       "next": reverse("accounts:profile")})

    assert response.status_code == 302 and response["Location"] == reverse("accounts:profile")
    assert client.get(reverse("accounts:profile")).context["user"] == alice


def test_login_with_wrong_password_says_so_and_starts_nothing(client, alice):
    response = client.post(reverse("accounts:login"), {"username": "alice", "password": "wrong"})

    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_login_refuses_a_post_without_csrf_token(alice):
    browser = Client(enforce_csrf_checks=True)

    response = browser.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD})

    assert response.status_code == 403
    assert "_auth_user_id" not in browser.session


def test_logout_is_post_only(client, alice):
    client.force_login(alice)

    assert client.get(reverse("accounts:logout")).status_code == 405
    assert "_auth_user_id" in client.session
    response = client.post(reverse("accounts:logout"))
    assert response.status_code == 302
    assert "_auth_user_id" not in client.session


def test_profile_needs_login(client):
    response = client.get(reverse("accounts:profile"))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login") + "?next=")


def test_password_change_flow(client, alice):
    client.force_login(alice)
    url = reverse("accounts:password_change")
    assert client.get(url).status_code == 200

    wrong = client.post(url, {"old_password": "nope", "new_password1": "Another-Pass-77",
                              "new_password2": "Another-Pass-77"})
    assert wrong.status_code == 200 and "old_password" in wrong.context["form"].errors
    mismatch = client.post(url, {"old_password": PASSWORD, "new_password1": "Another-Pass-77",
                                 "new_password2": "Another-Pass-78"})
    assert "new_password2" in mismatch.context["form"].errors

    done = client.post(url, {"old_password": PASSWORD, "new_password1": "Another-Pass-77",
                             "new_password2": "Another-Pass-77"})
    assert done.status_code == 302 and done["Location"] == reverse("accounts:password_change_done")
    assert client.get(done["Location"]).status_code == 200
    alice.refresh_from_db()
    assert alice.check_password("Another-Pass-77") and not alice.check_password(PASSWORD)


def test_password_change_needs_login(client):
    response = client.get(reverse("accounts:password_change"))

    assert response.status_code == 302 and "login" in response["Location"]


# --- Account page and API token -------------------------------------------------------------------


def test_profile_shows_groups_and_their_members(client, alice):
    group = Group.objects.create(name="pds")
    bob = User.objects.create_user("bob")
    group.user_set.add(alice, bob)
    client.force_login(alice)

    body = client.get(reverse("accounts:profile")).content.decode()

    assert "pds" in body and "bob" in body
    assert "You have no API token yet" in body


def test_token_is_created_then_regenerated_by_post(client, alice):
    client.force_login(alice)

    assert client.get(reverse("accounts:token")).status_code == 405
    assert not Token.objects.filter(user=alice).exists()

    client.post(reverse("accounts:token"))
    first = Token.objects.get(user=alice).key
    assert first in client.get(reverse("accounts:profile")).content.decode()

    client.post(reverse("accounts:token"))
    second = Token.objects.get(user=alice).key
    assert second != first
    # The old token no longer opens the API; the new one does.
    api = Client()
    assert api.get("/api/me/", HTTP_AUTHORIZATION=f"Token {first}").status_code == 401
    assert api.get("/api/me/", HTTP_AUTHORIZATION=f"Token {second}").json()["username"] == "alice"


def test_token_post_needs_csrf_and_login(alice):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)

    assert browser.post(reverse("accounts:token")).status_code == 403
    assert not Token.objects.filter(user=alice).exists()
    assert Client().post(reverse("accounts:token")).status_code == 302  # to the login page


# --- gridweb_group --------------------------------------------------------------------------------


def test_create_group_then_refuse_a_duplicate():
    assert "Created research group 'pds'" in gridweb_group("create", "pds")
    assert Group.objects.filter(name="pds").count() == 1

    with pytest.raises(CommandError, match="already exists"):
        gridweb_group("create", "PDS")
    assert Group.objects.count() == 1


def test_invite_creates_a_user_with_a_printed_one_time_password():
    gridweb_group("create", "pds")

    out = gridweb_group("invite", "pds", "carol", "--email", "carol@example.org")

    carol = User.objects.get(username="carol")
    assert carol.email == "carol@example.org"
    assert list(carol.groups.values_list("name", flat=True)) == ["pds"]
    password = re.search(r"One-time password.*: (\S+)", out).group(1)
    assert len(password) >= 12 and carol.check_password(password)
    assert Client().login(username="carol", password=password)


def test_a_one_time_password_must_be_changed_before_anything_else_and_then_stops_working():
    # issue 14: the invite's "one-time" password worked repeatedly and forced no change
    gridweb_group("create", "pds")
    out = gridweb_group("invite", "pds", "erin", "--email", "erin@example.org")
    one_time = re.search(r"One-time password.*: (\S+)", out).group(1)
    erin = Client()
    assert erin.login(username="erin", password=one_time)
    for page in ("/", "/runs/", reverse("accounts:profile"), reverse("scenarios:list")):
        response = erin.get(page)
        assert response.status_code == 302 and response["Location"] == reverse("accounts:password_change"), page
    assert erin.get(reverse("accounts:password_change")).status_code == 200
    # no API token for a one-time password either
    api = Client().post(reverse("api:token"), {"username": "erin", "password": one_time},
                        content_type="application/json")
    assert api.status_code == 403 and "one-time password" in api.json()["errors"][""][0]

    response = erin.post(reverse("accounts:password_change"), {
        "old_password": one_time, "new_password1": "Erins-Own-Pass-77", "new_password2": "Erins-Own-Pass-77"})
    assert response.status_code == 302
    assert erin.get(reverse("accounts:profile")).status_code == 200  # free to go now
    assert not Client().login(username="erin", password=one_time)
    assert Client().post(reverse("api:token"), {"username": "erin", "password": "Erins-Own-Pass-77"},
                         content_type="application/json").status_code == 200


def test_a_forgotten_password_is_reset_through_an_emailed_link_that_works_once(alice, mailoutbox):
    alice.email = "alice@example.org"
    alice.save()
    assert "Forgotten your password?" in Client().get(reverse("accounts:login")).content.decode()
    response = Client().post(reverse("accounts:password_reset"), {"email": "alice@example.org"})
    assert response.status_code == 302 and response["Location"] == reverse("accounts:password_reset_done")
    assert Client().post(reverse("accounts:password_reset"), {"email": "nobody@example.org"}).status_code == 302
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["alice@example.org"]
    link = re.search(r"https?://[^/]+(/accounts/password/reset/\S+/)", mailoutbox[0].body).group(1)

    browser = Client()
    form = browser.get(link, follow=True)  # Django moves the token into the session, then shows the form
    assert form.status_code == 200 and "password-reset-confirm-form" in form.content.decode()
    done = browser.post(form.redirect_chain[-1][0], {"new_password1": "Fresh-Pass-2026", "new_password2": "Fresh-Pass-2026"})
    assert done.status_code == 302 and done["Location"] == reverse("accounts:password_reset_complete")
    assert Client().login(username="alice", password="Fresh-Pass-2026")
    assert not Client().login(username="alice", password=PASSWORD)
    again = Client().get(link, follow=True)
    assert "invalid-link" in again.content.decode()  # the link worked once


def test_invite_with_a_given_password_prints_none():
    gridweb_group("create", "pds")

    out = gridweb_group("invite", "pds", "dave", "--email", "dave@example.org", "--password", "Sturdy-Pass-91")

    assert "One-time password" not in out and "Sturdy-Pass-91" not in out
    assert User.objects.get(username="dave").check_password("Sturdy-Pass-91")


def test_invite_adds_an_existing_user_without_touching_the_password(alice):
    gridweb_group("create", "pds")

    out = gridweb_group("invite", "pds", "alice")

    assert "existing user" in out
    assert alice.groups.filter(name="pds").exists()
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


@pytest.mark.parametrize(("args", "message"), [
    (("invite", "nosuch", "erin", "--email", "e@example.org"), "no research group named 'nosuch'"),
    (("invite", "pds", "erin"), "--email"),
    (("invite", "pds", "erin", "--email", "not-an-address"), "--email"),
    (("invite", "pds", "bad name!", "--email", "e@example.org"), "username"),
    (("invite", "pds", "erin", "--email", "e@example.org", "--password", "123"), "--password"),
    (("invite", "pds", "alice", "--password", "Sturdy-Pass-91"), "already exists"),
    (("invite", "pds", "alice", "--email", "other@example.org"), "already exists with the e-mail"),
    (("create", "  "), "must not be empty"),
])
def test_invite_errors_are_clear_and_change_nothing(alice, args, message):
    Group.objects.create(name="pds")
    users_before = set(User.objects.values_list("username", flat=True))

    with pytest.raises(CommandError) as caught:
        gridweb_group(*args)

    assert message in str(caught.value)
    assert set(User.objects.values_list("username", flat=True)) == users_before
    assert not alice.groups.exists()


def test_list_shows_groups_and_members(alice):
    assert "No research groups yet" in gridweb_group("list")
    gridweb_group("create", "pds")
    gridweb_group("create", "empty")
    gridweb_group("invite", "pds", "alice")

    lines = gridweb_group("list").splitlines()

    assert lines == ["empty (0 members): -", "pds (1 member): alice"]


def test_command_line_needs_an_action():
    with pytest.raises(CommandError):
        gridweb_group()


# --- Issue 34: invite passwords expire, work once, open no websocket and no API --------------------


def invite(username: str) -> str:
    if not Group.objects.filter(name="pds").exists():
        gridweb_group("create", "pds")
    out = gridweb_group("invite", "pds", username, "--email", f"{username}@example.org")
    return re.search(r"One-time password.*: (\S+)", out).group(1)


def test_an_invite_password_works_for_one_login_only():
    one_time = invite("fay")
    first = Client()
    assert first.post(reverse("accounts:login"), {"username": "fay", "password": one_time}).status_code == 302
    second = Client().post(reverse("accounts:login"), {"username": "fay", "password": one_time})
    assert second.status_code == 200 and "_auth_user_id" not in second.wsgi_request.session
    assert "one-time password has already been used" in second.content.decode()
    api = Client().post(reverse("api:token"), {"username": "fay", "password": one_time}, content_type="application/json")
    assert api.status_code == 403 and "already been used" in api.json()["errors"][""][0]
    # the session it opened may still choose the user's own password
    response = first.post(reverse("accounts:password_change"), {
        "old_password": one_time, "new_password1": "Fays-Own-Pass-77", "new_password2": "Fays-Own-Pass-77"})
    assert response.status_code == 302
    assert Client().login(username="fay", password="Fays-Own-Pass-77")


def test_an_invite_password_expires_after_the_configured_days(settings):
    settings.GRIDWEB_INVITE_PASSWORD_DAYS = 7
    one_time = invite("gil")
    PasswordChangeRequired.objects.filter(user__username="gil").update(created=timezone.now() - timedelta(days=7, minutes=1))
    page = Client().post(reverse("accounts:login"), {"username": "gil", "password": one_time})
    assert page.status_code == 200 and "_auth_user_id" not in page.wsgi_request.session
    assert "one-time password has expired" in page.content.decode()
    PasswordChangeRequired.objects.filter(user__username="gil").update(created=timezone.now() - timedelta(days=6))
    assert Client().post(reverse("accounts:login"), {"username": "gil", "password": one_time}).status_code == 302


def test_inviting_again_gives_a_fresh_one_time_password_when_the_first_was_not_replaced():
    first = invite("hal")
    assert Client().login(username="hal", password=first)
    out = gridweb_group("invite", "pds", "hal")
    second = re.search(r"One-time password.*: (\S+)", out).group(1)
    assert second != first and not Client().login(username="hal", password=first)
    assert Client().post(reverse("accounts:login"), {"username": "hal", "password": second}).status_code == 302


def test_a_session_that_must_change_its_password_gets_no_api():
    one_time = invite("ida")
    ida = Client()
    assert ida.post(reverse("accounts:login"), {"username": "ida", "password": one_time}).status_code == 302
    response = ida.get("/api/me/")
    assert response.status_code == 403 and "choose a password of your own" in response.json()["errors"][""][0]


@pytest.mark.parametrize("value", ["0", "-1", "7.5", "seven"])
def test_the_invite_password_days_setting_is_checked_at_start(value):
    from tests.conftest import project_env, run_python

    result = run_python("import django; django.setup()", env=project_env(GRIDWEB_INVITE_PASSWORD_DAYS=value))
    assert result.returncode != 0 and "GRIDWEB_INVITE_PASSWORD_DAYS" in result.stderr
