"""The user's own page (research groups, the API token) and the password views."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST
from rest_framework.authtoken.models import Token

from . import throttle
from .middleware import SESSION_KEY
from .models import password_chosen


class LoginView(auth_views.LoginView):
    """Django's login; a successful one gives the browser its device cookie for the username
    (gridweb/accounts/throttle.py: its attempts then have a budget nobody else can spend)."""

    def form_valid(self, form):
        response = super().form_valid(form)
        throttle.set_device_cookie(self.request, response)
        return response


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's password change; it also ends the need to change a one-time password."""

    def form_valid(self, form):
        response = super().form_valid(form)
        password_chosen(form.user)
        self.request.session.pop(SESSION_KEY, None)
        return response


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """Django's password reset (from the e-mailed link); a reset password is the user's own."""

    def form_valid(self, form):
        response = super().form_valid(form)
        password_chosen(form.user)
        return response


@require_GET
@login_required
def profile(request: HttpRequest) -> HttpResponse:
    groups = [
        {"name": group.name, "members": sorted(group.user_set.values_list("username", flat=True))}
        for group in request.user.groups.order_by("name")
    ]
    token = Token.objects.filter(user=request.user).first()
    return render(request, "accounts/profile.html", {"groups": groups, "token": token})


@require_POST
@login_required
def regenerate_token(request: HttpRequest) -> HttpResponse:
    """Create the user's API token, or replace it (the old one stops working at once)."""
    with transaction.atomic():
        replaced = Token.objects.filter(user=request.user).delete()[0] > 0
        Token.objects.create(user=request.user)
    messages.success(request, "New API token created; the old one no longer works." if replaced
                     else "API token created.")
    return redirect("accounts:profile")
