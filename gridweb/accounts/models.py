"""What an account needs beyond Django's user: whether its password must be changed first."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class PasswordChangeRequired(models.Model):
    """The user's password is an invite's one-time password (``gridweb_group invite``): it works for
    one login within ``GRIDWEB_INVITE_PASSWORD_DAYS`` of the invite (gridweb/accounts/backends.py),
    and the session it opens may only choose the user's own password -- every page sends it to the
    password change page, the API answers 403, ``/api/token/`` gives no token and run streams close
    with 4403 -- until they have."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="password_change_required")
    created = models.DateTimeField(auto_now_add=True)
    #: when the one login the password allows happened (None: not yet)
    used = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} must change the one-time password"

    def refusal(self) -> str | None:
        """Why the one-time password no longer logs in (None: it still does)."""
        if self.used is not None:
            return ("this one-time password has already been used: ask your group's administrator for a new "
                    "one, or use \"Forgotten your password?\"")
        if timezone.now() >= self.created + timedelta(days=settings.GRIDWEB_INVITE_PASSWORD_DAYS):
            return ("this one-time password has expired: ask your group's administrator for a new one, or use "
                    "\"Forgotten your password?\"")
        return None


def must_change_password(user) -> bool:
    return bool(user.is_authenticated) and PasswordChangeRequired.objects.filter(user=user).exists()


def password_chosen(user) -> None:
    """The user set a password of their own (changed, or reset by e-mail)."""
    PasswordChangeRequired.objects.filter(user=user).delete()
