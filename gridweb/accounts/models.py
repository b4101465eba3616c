"""What an account needs beyond Django's user: whether its password must be changed first."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class PasswordChangeRequired(models.Model):
    """The user logged in with a one-time password (``gridweb_group invite``): every page sends them
    to the password change page, and ``/api/token/`` gives no token, until they choose their own."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="password_change_required")
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user} must change the one-time password"


def must_change_password(user) -> bool:
    return bool(user.is_authenticated) and PasswordChangeRequired.objects.filter(user=user).exists()


def password_chosen(user) -> None:
    """The user set a password of their own (changed, or reset by e-mail)."""
    PasswordChangeRequired.objects.filter(user=user).delete()
