"""A session logged in with an invite's one-time password opens no run stream (issue 34: its
session could open websockets past the forced password change) -- until the user has chosen a
password of their own."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.web.test_run_stream import finished_run, watch


@pytest.mark.django_db(transaction=True)
def test_a_session_that_must_change_its_password_gets_no_run_stream(django_user_model):
    Group.objects.create(name="pds")
    out = StringIO()
    call_command("gridweb_group", "invite", "pds", "jo", "--email", "jo@example.org", stdout=out)
    one_time = re.search(r"One-time password.*: (\S+)", out.getvalue()).group(1)
    jo = django_user_model.objects.get(username="jo")
    run = finished_run(jo)
    browser = Client()
    assert browser.post(reverse("accounts:login"), {"username": "jo", "password": one_time}).status_code == 302
    cookie = [(b"cookie", f"sessionid={browser.cookies['sessionid'].value}".encode())]

    refused = async_to_sync(watch)(f"/ws/runs/{run.pk}/", cookie)
    assert refused == {"messages": [], "close": 4403}

    assert browser.post(reverse("accounts:password_change"), {
        "old_password": one_time, "new_password1": "Jos-Own-Pass-77", "new_password2": "Jos-Own-Pass-77"},
    ).status_code == 302
    cookie = [(b"cookie", f"sessionid={browser.cookies['sessionid'].value}".encode())]
    watched = async_to_sync(watch)(f"/ws/runs/{run.pk}/", cookie)
    assert watched["close"] is None and watched["messages"][-1]["kind"] == "status"
