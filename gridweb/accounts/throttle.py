"""Login throttling: guessing passwords on the login page, the admin's or ``/api/token/`` stops after
a few tries, cannot be spread over forged addresses, and cannot lock a user out (docs/deploy.md,
"Login throttling").

Every login attempt *reserves* its place in its budgets before its password is checked: one atomic
``cache.add`` + ``cache.incr`` per budget (atomic on Redis and on the in-process cache), and the
count ``incr`` returns decides. So however many attempts arrive at once, at most a budget's worth
of passwords is checked; the rest are refused unchecked (429). A successful login gives its
reservations back. The budgets:

* **A trusted browser** -- one that presents the signed device cookie a successful login of that
  username set (OWASP's "device cookies") -- has a budget of its own:
  ``GRIDWEB_LOGIN_FAILURES_PER_USER`` failures per ``GRIDWEB_LOGIN_LOCK_SECONDS``. Nobody else can
  spend it, so guessing a username never locks its user out of their own browser.
* **Any other attempt** spends from its username's budget (``GRIDWEB_LOGIN_FAILURES_PER_USER``
  failures per window) and its address's (``GRIDWEB_LOGIN_FAILURES_PER_ADDRESS`` per
  ``GRIDWEB_LOGIN_LOCK_SECONDS``). A username's window starts at ``GRIDWEB_LOGIN_BACKOFF_SECONDS``
  and doubles each time it is used up, up to ``GRIDWEB_LOGIN_LOCK_SECONDS``; a success (from an
  untrusted browser) or an hour of quiet starts it over.

The address is ``REMOTE_ADDR``, or, behind ``GRIDWEB_TRUSTED_PROXY_HOPS`` proxies, the
``X-Forwarded-For`` entry that many from the right: the one our own proxy wrote, never one the
client sent. When the cache cannot be reached nothing can be counted: the attempt is refused
(``Unavailable``, answered 503) and no password is checked.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import secrets
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core import signing
from django.core.cache import cache
from django.dispatch import receiver

logger = logging.getLogger("gridweb.accounts")

DEVICE_COOKIE = "gridweb_device"
DEVICE_SALT = "gridweb.accounts.throttle.device"
DEVICE_MAX_AGE = 365 * 86400
UNAVAILABLE_MESSAGE = "logins are unavailable for a moment (the server cannot count attempts): try again shortly"
#: seconds a client is asked to wait when the cache is down
UNAVAILABLE_RETRY = 30
#: a username's back-off is forgotten after this many of its longest windows without attempts
LEVEL_MEMORY = 4


class Unavailable(Exception):
    """The cache cannot be reached: the attempt cannot be counted, so it is not made."""


@dataclass
class Reservation:
    """One attempt's places in its budgets; ``wait`` > 0: refused, retry after that many seconds."""

    username: str
    device: str | None
    keys: list[str] = field(default_factory=list)
    wait: float = 0.0


def client_address(request) -> str:
    """The address the request came from: ``REMOTE_ADDR``, or the ``X-Forwarded-For`` entry our own
    ``GRIDWEB_TRUSTED_PROXY_HOPS`` proxies wrote (counted from the right: entries to its left are
    the client's to choose)."""
    if request is None:
        return "unknown"
    remote = request.META.get("REMOTE_ADDR") or "unknown"
    hops = settings.GRIDWEB_TRUSTED_PROXY_HOPS
    if hops <= 0:
        return remote
    entries = [entry.strip() for entry in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if entry.strip()]
    if len(entries) < hops:
        return remote  # not through every proxy: the one that reached us is all we know
    try:
        return str(ipaddress.ip_address(entries[-hops]))
    except ValueError:
        return remote


def _name(username: str) -> str:
    return username.strip().lower()


def _device(request, username: str) -> str | None:
    """The device cookie's id when it is valid and was set by a login of ``username``."""
    value = request.COOKIES.get(DEVICE_COOKIE) if request is not None else None
    if not value:
        return None
    try:
        owner, device = signing.loads(value, salt=DEVICE_SALT, max_age=DEVICE_MAX_AGE)
    except (signing.BadSignature, ValueError, TypeError):
        return None
    return device if owner == _name(username) else None


def _seconds(value: float) -> int:
    return max(1, math.ceil(value))


def _take(key: str, budget: int, window: float) -> tuple[int, float]:
    """Reserve one place in ``key``'s budget: (places now taken, seconds until the window ends)."""
    now = time.time()
    for _ in range(3):
        if cache.add(key, 0, timeout=_seconds(window)):
            cache.set(f"{key}:until", now + window, timeout=_seconds(window))
        try:
            taken = cache.incr(key)
        except ValueError:  # the window ended between add and incr: open the next one
            continue
        return taken, max(0.0, float(cache.get(f"{key}:until", now + window)) - now)
    return budget + 1, window


def _give_back(key: str) -> None:
    try:
        cache.decr(key)
    except ValueError:  # the window has ended meanwhile
        pass


def _user_window(name: str) -> float:
    level = cache.get(f"login:user-level:{name}", 0)
    return min(settings.GRIDWEB_LOGIN_BACKOFF_SECONDS * 2 ** min(level, 30), settings.GRIDWEB_LOGIN_LOCK_SECONDS)


def _budgets(request, username: str, device: str | None) -> list[tuple[str, int, float]]:
    per_user, lock = settings.GRIDWEB_LOGIN_FAILURES_PER_USER, settings.GRIDWEB_LOGIN_LOCK_SECONDS
    if device is not None:
        return [(f"login:device:{device}", per_user, lock)]
    name = _name(username)
    return [(f"login:address:{client_address(request)}", settings.GRIDWEB_LOGIN_FAILURES_PER_ADDRESS, lock),
            (f"login:user:{name}", per_user, _user_window(name))]


def reserve(request, username: str) -> Reservation:
    """Reserve a login attempt of ``username`` before its password is checked (``wait`` > 0: refused).
    Kept on the request, so that a success can give it back (``succeeded``)."""
    reservation = Reservation(_name(username), _device(request, username))
    try:
        for key, budget, window in _budgets(request, username, reservation.device):
            taken, left = _take(key, budget, window)
            reservation.keys.append(key)
            if taken > budget:
                # the first refusal of a username's window (one add wins): its next window is twice as long
                if key.startswith("login:user:") and cache.add(f"{key}:used-up", 1, timeout=_seconds(left)):
                    level_key, memory = f"login:user-level:{reservation.username}", _seconds(
                        LEVEL_MEMORY * settings.GRIDWEB_LOGIN_LOCK_SECONDS)
                    cache.add(level_key, 0, timeout=memory)
                    cache.incr(level_key)
                    cache.touch(level_key, timeout=memory)  # forgotten only after a quiet spell
                # refused unchecked: it spends nothing, so the counts stay the passwords checked
                for taken_key in reservation.keys:
                    _give_back(taken_key)
                reservation.keys, reservation.wait = [], max(left, 1.0)
                break
    except Exception as exc:  # the cache is down (redis raises its own ConnectionError, TimeoutError)
        logger.error("login refused: the throttle's cache is unavailable (%s)", exc)
        raise Unavailable(UNAVAILABLE_MESSAGE) from exc
    if request is not None:
        request.gridweb_login_reservation = reservation
    return reservation


def succeeded(request, username: str) -> None:
    """A login of ``username`` succeeded: its reservation is given back, the budget it spent from
    starts over, and the browser is trusted for this username (``device_cookie``)."""
    reservation = getattr(request, "gridweb_login_reservation", None) if request is not None else None
    name = _name(username)
    try:
        if reservation is not None and reservation.username == name:
            for key in reservation.keys:
                if key.startswith("login:address:"):
                    _give_back(key)
                else:
                    cache.delete_many([key, f"{key}:until", f"{key}:used-up"])
            if reservation.device is None:
                cache.delete(f"login:user-level:{name}")
    except Exception as exc:  # noqa: BLE001 - the login stands; the counts expire on their own
        logger.warning("could not clear the login counts of %r (%s)", name, exc)
    if request is not None:
        device = reservation.device if reservation is not None and reservation.device else secrets.token_urlsafe(16)
        request.gridweb_device_cookie = signing.dumps([name, device], salt=DEVICE_SALT)


def set_device_cookie(request, response) -> None:
    """Give the browser the device cookie a successful login of this request earned."""
    value = getattr(request, "gridweb_device_cookie", None)
    if value:
        response.set_cookie(DEVICE_COOKIE, value, max_age=DEVICE_MAX_AGE, httponly=True, samesite="Lax",
                            secure=settings.SESSION_COOKIE_SECURE)


def locked_message(seconds: float) -> str:
    if seconds < 60:
        wait = f"{math.ceil(seconds)} second{'s' if math.ceil(seconds) != 1 else ''}"
    else:
        minutes = math.ceil(seconds / 60)
        wait = f"{minutes} minute{'s' if minutes != 1 else ''}"
    return (f"too many failed logins: try again in {wait} "
            "(or ask your group's administrator to reset your password)")


@receiver(user_login_failed)
def _log_failure(sender, credentials: dict, request=None, **kwargs) -> None:
    # one line per password checked and refused: what an operator (or fail2ban) watches
    logger.warning("failed login for %r from %s", str(credentials.get("username") or ""), client_address(request))


@receiver(user_logged_in)
def _on_success(sender, request, user, **kwargs) -> None:
    succeeded(request, user.get_username())
