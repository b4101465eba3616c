"""A user holding a one-time password is sent to the password change page before anything else."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from .models import must_change_password

#: set in the session at login when the password is a one-time one (no query per request after)
SESSION_KEY = "gridweb_must_change_password"


@receiver(user_logged_in)
def _note_one_time_password(sender, request, user, **kwargs) -> None:
    if request is not None and hasattr(request, "session") and must_change_password(user):
        request.session[SESSION_KEY] = True


class PasswordChangeRequiredMiddleware:
    """After ``AuthenticationMiddleware``: redirects every page but the password change, logging out
    and static files while the logged-in user must change their one-time password."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "session", None) is not None and request.session.get(SESSION_KEY):
            allowed = (reverse("accounts:password_change"), reverse("accounts:logout"), "/static/", "/healthz")
            if not request.path.startswith(allowed):
                messages.info(request, "Choose a password of your own: the one you were given works only until then.")
                return redirect(f"{reverse('accounts:password_change')}")
        return self.get_response(request)
