"""Forms of the account pages (Django's own, with the site's field attributes)."""

from __future__ import annotations

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm

from . import throttle


class ThrottledLogin:
    """A login form that reserves the attempt in the throttle's budgets before its password is
    checked, and refuses it unchecked when a budget is used up (gridweb/accounts/throttle.py). A
    cache that cannot count raises ``throttle.Unavailable`` (answered 503 by the middleware)."""

    def clean(self):
        username, password = self.cleaned_data.get("username"), self.cleaned_data.get("password")
        if username is not None and password:  # (what AuthenticationForm checks; nothing else is)
            reservation = throttle.reserve(self.request, username)
            if reservation.wait > 0:
                raise forms.ValidationError(throttle.locked_message(reservation.wait), code="throttled")
        return super().clean()

    def get_invalid_login_error(self):
        # the right password of an invite that is spent or expired says so (gridweb/accounts/backends.py)
        refusal = getattr(self.request, "gridweb_login_refusal", None)
        if refusal:
            return forms.ValidationError(refusal, code="invite_spent")
        return super().get_invalid_login_error()


class AdminLoginForm(ThrottledLogin, AdminAuthenticationForm):
    """The admin's login form, throttled like the site's."""


class LoginForm(ThrottledLogin, AuthenticationForm):
    """Django's login form; browsers get the right autocomplete hints."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].widget.attrs.update({"autocomplete": "username", "autofocus": True})
        self.fields["password"].widget.attrs.update({"autocomplete": "current-password"})
