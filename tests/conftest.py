"""Shared test helpers: paths, real services (PostgreSQL, Redis), subprocesses, the browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

ROOT = Path(__file__).resolve().parents[1]

# In CI every property test draws the same examples each run (a red build then means the code
# changed, not the dice); locally hypothesis keeps exploring new ones and remembers failures.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


def pytest_sessionstart(session) -> None:
    """Compile the engine's compiled parts (kernels, event core, Cao's loop, ...) once, before any
    test starts a worker or a subprocess: on a fresh clone that takes about 2 minutes, and
    processes started together would each compile them (and a run's wall-clock budget would
    count it); later they load numba's cache in a fraction of a second."""
    from simengine.models import warm_up

    warm_up()


# Data the tests read, inside the repository (a clone alone has everything; provenance beside it):
# the real traces the site ships as demo data, and the pyss conformance cases.
TRACE_DIR = ROOT / "gridweb" / "demo"
CONFORMANCE = ROOT / "tests" / "data" / "conformance"

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
    code: str, env: dict[str, str] | None = None, timeout: float = 120, root: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with this interpreter in the repository root (embedded mode unless ``env`` says;
    ``root``: another checkout's, a benchmark's peer)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=env if env is not None else project_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_python_json(code: str, env: dict[str, str] | None = None, timeout: float = 120, root: Path = ROOT) -> Any:
    """Run ``code`` (which prints one JSON document last) and return the parsed document."""
    result = run_python(code, env=env, timeout=timeout, root=root)
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


# --- A live full-stack site: PostgreSQL, Redis, Celery workers, the ASGI server ------------------
E2E_DATABASE = "gridweb_e2e"
# (two test sessions at once on one machine give each its own: GRIDWEB_TEST_E2E_REDIS_DB)
E2E_REDIS_DB = int(os.environ.get("GRIDWEB_TEST_E2E_REDIS_DB", 5))
E2E_WORKERS = 2


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FullStackSite:
    """A GridWeb server and its Celery workers running as separate processes in full-stack mode."""

    def __init__(self, env: dict[str, str], base_url: str, logs: Path, root: Path = ROOT):
        self.env, self.base_url, self.logs, self.root = env, base_url, logs, root
        self.processes: dict[str, subprocess.Popen] = {}
        self.argv: dict[str, list[str]] = {}

    @property
    def ws_url(self) -> str:
        return self.base_url.replace("http://", "ws://", 1)

    def manage(self, *args: str, timeout: float = 120) -> str:
        """Run ``manage.py ARGS`` against this site's database; return stdout (fails the test on error)."""
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=self.root, env=self.env,
                                capture_output=True, text=True, timeout=timeout)
        assert result.returncode == 0, f"manage.py {' '.join(args)}: exit {result.returncode}\n{result.stderr}"
        return result.stdout

    def python_json(self, code: str, timeout: float = 120) -> Any:
        """Run ``code`` with Django set up against this site (it prints one JSON document last)."""
        return run_python_json("import django; django.setup()\n" + code, env=self.env, timeout=timeout, root=self.root)

    def start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
        process = subprocess.Popen(argv, cwd=self.root, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes[name], self.argv[name] = process, argv
        return process

    def restart_worker(self, name: str) -> None:
        """Start worker ``name`` again (after a test killed it) and wait until it is ready."""
        self.start(name, self.argv[name])
        _wait_until(lambda: "ready." in self.log(name), 120, f"{name} to start again", self)

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def _recreate_database(admin_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def _drop_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wait_until(check, timeout: float, what: str, site: FullStackSite) -> None:
    import time

    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last = exc
        for name, process in site.processes.items():
            if process.poll() is not None:
                raise AssertionError(f"{name} exited with {process.returncode}:\n{site.log(name)}")
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what} ({last!r})")


@contextmanager
def full_stack(test_database_url: str, redis_url: str, tmp_path_factory, name: str = E2E_DATABASE,
               root: Path = ROOT, **settings_env: str) -> Iterator[FullStackSite]:
    """A GridWeb site in full-stack mode: a fresh PostgreSQL database (``name`` and this process's
    id), the Redis database ``redis_url`` (flushed), ``E2E_WORKERS`` Celery worker processes and
    the ASGI server (HTTP + websockets) on a free port. Logs of every process are in the site's
    ``logs`` folder (printed when a process dies). ``settings_env``: more environment variables
    for every process (settings, e.g. ``GRIDWEB_WORKER_MAX_MEMORY_MB``). ``root``: the checkout whose
    code the site runs (another one: a benchmark's ``--peer``, benchmarks/worktree.py)."""
    import urllib.request

    import redis

    # One database per test process: two test sessions on one machine never drop each other's.
    database_name = f"{name}_{os.getpid()}"
    database_url = _recreate_database(test_database_url, database_name)
    redis.Redis.from_url(redis_url).flushdb()
    data_dir = tmp_path_factory.mktemp("e2e-data")
    logs = tmp_path_factory.mktemp("e2e-logs")
    # the workers look for lost runs every few seconds (a minute by default), so recovery is seen quickly
    env = project_env(DATABASE_URL=database_url, REDIS_URL=redis_url, GRIDWEB_DATA_DIR=str(data_dir),
                      GRIDWEB_RECOVERY_SECONDS="3", **settings_env)
    port = _free_port()
    site = FullStackSite(env, f"http://127.0.0.1:{port}", logs, root)
    site.manage("migrate", "--noinput", timeout=300)
    try:
        for i in range(1, E2E_WORKERS + 1):
            site.start(f"worker{i}", [sys.executable, "-m", "celery", "-A", "gridweb", "worker", "--pool=prefork",
                                      "--concurrency=1", f"--hostname=worker{i}@%h", "--loglevel=INFO",
                                      "--without-gossip", "--without-mingle"])
        site.start("server", [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"])

        def healthy() -> bool:
            with urllib.request.urlopen(f"{site.base_url}/healthz", timeout=5) as response:
                return response.status == 200

        _wait_until(healthy, 120, "the server's /healthz", site)

        def workers_ready() -> bool:
            return all("ready." in site.log(f"worker{i}") for i in range(1, E2E_WORKERS + 1))

        _wait_until(workers_ready, 120, "the Celery workers", site)
        yield site
    finally:
        site.stop()
        _drop_database(test_database_url, database_name)


@pytest.fixture(scope="session")
def full_stack_site(test_database_url: str, test_redis_url: str, tmp_path_factory) -> Iterator[FullStackSite]:
    """The site in full-stack mode (:func:`full_stack`) with a Redis database of its own."""
    with full_stack(test_database_url, test_redis_url.rsplit("/", 1)[0] + f"/{E2E_REDIS_DB}",
                    tmp_path_factory) as site:
        yield site


@pytest.fixture(scope="session", autouse=True)
def results_storage_in_tmp(tmp_path_factory) -> Iterator[None]:
    """Result files written by this process's tests go to a temporary folder, not artifacts/."""
    from django.conf import settings
    from django.test import override_settings

    storages = {**settings.STORAGES, "results": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                 "OPTIONS": {"location": str(tmp_path_factory.mktemp("results"))}}}
    with override_settings(STORAGES=storages):
        yield


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing() -> Iterator[None]:
    """Tests create many users: a cheap hasher in this process (never in the live site's processes)."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield
