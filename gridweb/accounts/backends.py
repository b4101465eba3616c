"""Django's model backend, refusing an invite's one-time password once it is used or expired."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend

from .models import PasswordChangeRequired


class InviteAwareModelBackend(ModelBackend):
    """The right password of a user whose one-time password is spent or expired logs nobody in. Its
    reason is left on the request, so the login form and ``/api/token/`` can say it (the password was
    right: saying why tells a guesser nothing)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            return None
        pending = PasswordChangeRequired.objects.filter(user=user).first()
        refusal = pending.refusal() if pending is not None else None
        if refusal is not None:
            if request is not None:
                request.gridweb_login_refusal = refusal
            return None
        return user
