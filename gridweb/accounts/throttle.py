"""Login throttling: guessing passwords on the login page or ``/api/token/`` stops after a few tries.

Every failed login (Django's ``user_login_failed`` signal, whichever way it came) counts against
its username and against the address it came from, in the cache (shared by the web processes in
full-stack mode). Once ``GRIDWEB_LOGIN_FAILURES_PER_USER`` failures of a username, or
``GRIDWEB_LOGIN_FAILURES_PER_ADDRESS`` from an address, are counted, logins of that username (from
that address) are refused -- the right password included -- until ``GRIDWEB_LOGIN_LOCK_SECONDS``
have passed since the last failure. A successful login clears its username's count.
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver


def _address(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


def _keys(request, username: str) -> list[tuple[str, int]]:
    return [(f"login-failures:user:{username.strip().lower()}", settings.GRIDWEB_LOGIN_FAILURES_PER_USER),
            (f"login-failures:address:{_address(request)}", settings.GRIDWEB_LOGIN_FAILURES_PER_ADDRESS)]


def seconds_locked(request, username: str) -> float:
    """How long logins of ``username`` from this request's address stay refused (0: not locked)."""
    now = time.time()
    waits = []
    for key, limit in _keys(request, username):
        count, last = cache.get(key, (0, 0.0))
        if count >= limit:
            waits.append(last + settings.GRIDWEB_LOGIN_LOCK_SECONDS - now)
    return max([0.0] + waits)


def locked_message(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return (f"too many failed logins: try again in {minutes} minute{'s' if minutes != 1 else ''} "
            "(or ask your group's administrator to reset your password)")


def record_failure(request, username: str) -> None:
    lock = settings.GRIDWEB_LOGIN_LOCK_SECONDS
    for key, _ in _keys(request, username):
        count, _ = cache.get(key, (0, 0.0))
        cache.set(key, (count + 1, time.time()), timeout=max(1, math.ceil(lock)))


@receiver(user_login_failed)
def _count_failure(sender, credentials: dict, request=None, **kwargs) -> None:
    record_failure(request, str(credentials.get("username") or ""))


@receiver(user_logged_in)
def _clear_on_success(sender, request, user, **kwargs) -> None:
    clear(user.get_username())


def clear(username: str) -> None:
    cache.delete(f"login-failures:user:{username.strip().lower()}")
