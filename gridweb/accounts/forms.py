"""Forms of the account pages (Django's own, with the site's field attributes)."""

from __future__ import annotations

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from . import throttle


class ThrottledLogin:
    """A login form that refuses a locked username (or address) before checking its password
    (gridweb/accounts/throttle.py)."""

    def clean(self):
        waiting = throttle.seconds_locked(self.request, self.data.get("username") or "")
        if waiting > 0:
            raise forms.ValidationError(throttle.locked_message(waiting), code="throttled")
        return super().clean()


class AdminLoginForm(ThrottledLogin, AdminAuthenticationForm):
    """The admin's login form, throttled like the site's."""


class LoginForm(ThrottledLogin, AuthenticationForm):
    """Django's login form; browsers get the right autocomplete hints."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].widget.attrs.update({"autocomplete": "username", "autofocus": True})
        self.fields["password"].widget.attrs.update({"autocomplete": "current-password"})
