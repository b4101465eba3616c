"""Template context shared by every page."""

from django.conf import settings
from django.http import HttpRequest

from .engine import engine_version


def site(request: HttpRequest) -> dict[str, str]:
    return {"engine_version": engine_version(), "gridweb_mode": settings.GRIDWEB_MODE}
