"""People for the web tests: a research group "lab" with alice and carol, and bob, an outsider."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client


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
