"""The full-stack site fixture really is full stack: PostgreSQL, Redis and separate Celery workers."""

from __future__ import annotations

import json
import urllib.request

import pytest

pytestmark = pytest.mark.slow


def test_full_stack_site_serves_health_from_postgres_and_redis(full_stack_site):
    with urllib.request.urlopen(f"{full_stack_site.base_url}/healthz", timeout=10) as response:
        body = json.load(response)

    assert body["mode"] == "full"
    assert body["database"]["vendor"] == "postgresql"
    assert body["channel_layer"]["backend"].startswith("channels_redis.")


def test_full_stack_workers_execute_tasks_in_their_own_processes(full_stack_site):
    replies = full_stack_site.python_json(
        "import json, os\n"
        "from gridweb.web.tasks import ping\n"
        "result = ping.delay('hello')\n"
        "print(json.dumps({'reply': result.get(timeout=60), 'caller': os.getpid()}))\n"
    )

    assert replies["reply"] == "hello"
    assert "gridweb.ping" in full_stack_site.log("worker1") + full_stack_site.log("worker2")
