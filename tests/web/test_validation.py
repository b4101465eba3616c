"""Materialising uploaded traces for the engine, as concurrent requests do it."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection

from gridweb.scenarios.models import TraceFile
from gridweb.scenarios.validation import materialize_traces, trace_dir

SWF = b"; tiny\n1 0 0 10 1 -1 -1 1 20 -1 1 1 1 -1 -1 -1 -1 -1\n"


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_materialise_the_same_trace_without_errors(alice, settings, tmp_path, monkeypatch):
    settings.GRIDWEB_TRACE_DIR = tmp_path / "traces"
    # Every request finds the file missing, as when they all arrive before the first write ends.
    monkeypatch.setattr(Path, "is_file", lambda self: False)
    start_together = threading.Barrier(8)
    trace = TraceFile.objects.create(
        owner=alice, name="tiny", stored_name="abc123-tiny.swf", original_name="tiny.swf", format="swf",
        content=SWF, size=len(SWF), sha256=hashlib.sha256(SWF).hexdigest(), jobs=1, max_processors=1)
    spec = {"workload": {"streams": [{"kind": "trace", "name": "t", "path": trace.stored_name}]}}

    def materialise(_):
        try:
            TraceFile.objects.get(pk=trace.pk)  # each thread's own connection is open before the race
            start_together.wait()
            return materialize_traces(spec, alice)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(materialise, range(8)))

    assert results == [{}] * 8
    assert (trace_dir() / trace.stored_name).read_bytes() == SWF
    assert [p.name for p in trace_dir().iterdir()] == [trace.stored_name]  # no temporary files left
