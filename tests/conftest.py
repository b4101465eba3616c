"""Shared test helpers: paths, real services (PostgreSQL, Redis), subprocesses, the browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The shared folder (traces, seeds, conformance data) sits beside the repository root.
SHARED = Path(__file__).resolve().parents[1].parent / "shared"

DEFAULT_TEST_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test"
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/0"

# Variables that choose the runtime mode; subprocesses start from a clean slate of these.
MODE_VARIABLES = ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "DJANGO_DEBUG", "DJANGO_SECRET_KEY")


def _service_url(variable: str, default: str, reachable) -> str:
    """The URL of a real service for tests.

    CI sets ``variable`` and then the service must answer (a failure is a failure). Locally the
    default URL is tried and the test skips, with the reason, when nothing answers there.
    """
    url = os.environ.get(variable)
    if url:
        return url
    error = reachable(default)
    if error:
        pytest.skip(f"{variable} is unset and nothing answers at {default} ({error}); run .ci/run or set it")
    return default


def _postgres_error(url: str) -> str | None:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return type(exc).__name__


def _redis_error(url: str) -> str | None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        return type(exc).__name__
    return None


@pytest.fixture(scope="session")
def test_database_url() -> str:
    """PostgreSQL URL for full-stack tests (``GRIDWEB_TEST_DATABASE_URL``)."""
    return _service_url("GRIDWEB_TEST_DATABASE_URL", DEFAULT_TEST_DATABASE_URL, _postgres_error)


@pytest.fixture(scope="session")
def test_redis_url() -> str:
    """Redis URL for full-stack tests (``GRIDWEB_TEST_REDIS_URL``)."""
    return _service_url("GRIDWEB_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL, _redis_error)


@pytest.fixture(scope="session")
def full_stack_env(test_database_url: str, test_redis_url: str) -> dict[str, str]:
    """Environment that puts a GridWeb process in full-stack mode against the real services."""
    return project_env(DATABASE_URL=test_database_url, REDIS_URL=test_redis_url)


def project_env(**overrides: str) -> dict[str, str]:
    """This process's environment in embedded mode (``gridweb.settings``, no service URLs), plus ``overrides``."""
    env = {key: value for key, value in os.environ.items() if key not in MODE_VARIABLES}
    env["DJANGO_SETTINGS_MODULE"] = "gridweb.settings"
    env.update(overrides)
    return env


def run_python(
    code: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with this interpreter in the repository root (embedded mode unless ``env`` says)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env if env is not None else project_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python_json(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
    """Run ``code`` (which prints one JSON document last) and return the parsed document."""
    result = run_python(code, env=env, timeout=timeout)
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


# --- Browser -------------------------------------------------------------------------------------
# Debian's Chromium, driven by Playwright (Playwright's own browser download is not available).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def chromium_executable() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip(
            "Chromium is not installed: `make test` installs it when run as root (apt-get install chromium)"
        )
    return path


@pytest.fixture(scope="module")
def browser(chromium_executable: str) -> Iterator[Any]:
    """A headless Chromium shared by one module's browser tests.

    Playwright's sync API keeps an asyncio loop running in this thread while it is open, so
    Django refuses ORM calls from the test thread and ``async_to_sync`` fails: the browser
    lives only as long as its module, and the ORM guard is relaxed only meanwhile
    (live-server requests run in their own thread anyway).
    """
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        instance = playwright.chromium.launch(executable_path=chromium_executable, args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    yield page
    context.close()
