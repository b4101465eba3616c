"""The site's error pages (gridweb.web.errors): the site's layout and the reason in words, the
limit named when Django refuses a body as too large, JSON on API paths, never a setting."""
from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

pytestmark = pytest.mark.django_db


def test_a_form_body_over_the_limit_is_refused_naming_the_limit():
    """Django refuses form data over DATA_UPLOAD_MAX_MEMORY_SIZE before any view: the answer says
    so (it was Django's bare "Bad Request (400)")."""
    body = "username=a&password=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    response = Client().post("/accounts/login/", data=body, content_type="application/x-www-form-urlencoded")
    page = response.content.decode()
    assert response.status_code == 400
    assert f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes" in page and "DATA_UPLOAD_MAX_MEMORY_SIZE" in page
    assert 'class="site-header"' in page  # the site's page, with its navigation


def test_too_many_form_fields_are_refused_naming_the_limit():
    body = "&".join(f"f{i}=1" for i in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = Client().post("/accounts/login/", data=body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 400
    assert f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} form fields" in response.content.decode()


def test_a_missing_page_is_the_sites_page_and_an_api_path_answers_json():
    page = Client().get("/no-such-page/")
    assert page.status_code == 404 and 'class="site-header"' in page.content.decode()
    assert "nothing here" in page.content.decode()
    api = Client().get("/api/no-such-endpoint/")
    assert api.status_code == 404 and api["Content-Type"] == "application/json"
    assert "nothing here" in api.json()["detail"]


def test_a_server_error_shows_no_setting(monkeypatch):
    """An unexpected failure answers with the site's 500 page: no setting, no trace."""
    from gridweb.web import views

    def broken(*args, **kwargs):
        raise RuntimeError(f"boom {settings.SECRET_KEY}")

    monkeypatch.setattr(views, "latest_per_paper", broken)  # (what the home page asks first)
    client = Client(raise_request_exception=False)
    response = client.get("/")
    page = response.content.decode()
    assert response.status_code == 500 and "Server error" in page
    assert settings.SECRET_KEY not in page and "boom" not in page and "Traceback" not in page
