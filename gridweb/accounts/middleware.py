"""A user holding a one-time password is sent to the password change page before anything else."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse

from .models import must_change_password


class PasswordChangeRequiredMiddleware:
    """After ``AuthenticationMiddleware``: redirects every page but the password change, logging out
    and static files while the logged-in user must change their one-time password."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "user", None) is not None and request.user.is_authenticated:
            allowed = (reverse("accounts:password_change"), reverse("accounts:logout"), "/static/", "/healthz")
            if not request.path.startswith(allowed) and must_change_password(request.user):
                messages.info(request, "Choose a password of your own: the one you were given works only until then.")
                return redirect(f"{reverse('accounts:password_change')}")
        return self.get_response(request)
