"""A user holding a one-time password is sent to the password change page before anything else;
a login the throttle cannot count answers 503."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone

from . import throttle
from .models import PasswordChangeRequired

#: set in the session at login when the password is a one-time one (no query per request after)
SESSION_KEY = "gridweb_must_change_password"
CHANGE_FIRST = "choose a password of your own first: a session opened with a one-time password has no API"


@receiver(user_logged_in)
def _note_one_time_password(sender, request, user, **kwargs) -> None:
    # the one login a one-time password allows is this one (gridweb/accounts/backends.py)
    pending = PasswordChangeRequired.objects.filter(user=user)
    if pending.exists():
        pending.filter(used__isnull=True).update(used=timezone.now())
        if request is not None and hasattr(request, "session"):
            request.session[SESSION_KEY] = True


class PasswordChangeRequiredMiddleware:
    """After ``AuthenticationMiddleware``: redirects every page but the password change, logging out
    and static files while the logged-in user must change their one-time password (the API answers
    403). Also answers 503 for a login the throttle cannot count (``throttle.Unavailable``)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if getattr(request, "session", None) is not None and request.session.get(SESSION_KEY):
            if request.path.startswith("/api/"):
                return JsonResponse({"errors": {"": [CHANGE_FIRST]}}, status=403)
            allowed = (reverse("accounts:password_change"), reverse("accounts:logout"), "/static/", "/healthz")
            if not request.path.startswith(allowed):
                messages.info(request, "Choose a password of your own: the one you were given works only until then.")
                return redirect(f"{reverse('accounts:password_change')}")
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, throttle.Unavailable):
            return None
        if request.path.startswith("/api/"):
            response = JsonResponse({"errors": {"": [throttle.UNAVAILABLE_MESSAGE]}}, status=503)
        else:
            response = render(request, "accounts/unavailable.html", {"message": throttle.UNAVAILABLE_MESSAGE},
                              status=503)
        response["Retry-After"] = str(throttle.UNAVAILABLE_RETRY)
        return response
