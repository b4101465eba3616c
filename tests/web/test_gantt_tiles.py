"""Level-of-detail tiles of the Gantt (gridweb.runs.gantt_tiles): exact rows when few, an
occupancy raster when many, from the stored result of a done run and from the streamed chunks of
a running, cancelled or failed one; a job's segments and the segment under a click."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

import simengine
from gridweb.runs import execution, frames, gantt_tiles, result_store
from gridweb.runs.models import Run, RunChunk, RunResult, Status
from gridweb.runs.services import create_run
from simengine.gantt_lod import SegmentTable, bands_for, quantize
from tests.simengine.live_stream import as_multiset
from tests.web.conftest import client_for


def spec(completions: int = 3000, replications: int = 1) -> dict:
    return {
        "name": "tiles",
        "platform": {"clusters": [{"name": "a", "processors": 64, "scheduler": {"name": "easy"}},
                                  {"name": "b", "processors": 16, "scheduler": {"name": "fcfs"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "users", "target": "grid", "arrival": {"target_load": 0.85},
            "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
            "runtime": {"kind": "exponential", "mean": 300}}]},
        "run": {"seed": 4, "replications": replications, "stop": {"completions": completions}},
    }


def done_run(owner, **kw) -> Run:
    run = create_run(owner, spec(**kw), dispatch_now=False)
    assert execution.execute_run(run.pk) == execution.DONE
    run.refresh_from_db()
    return run


def get_frame(client, run: Run, name: str, **params):
    response = client.get(reverse(f"runs:gantt_{name}", args=[run.pk]), params)
    assert response.status_code == 200, response.content[:200]
    assert response["Content-Type"] == "application/octet-stream"
    return frames.decode(response.content)


def stored_rows(run: Run) -> dict[str, np.ndarray]:
    table = result_store.gantt_table(RunResult.objects.get(run=run))
    return table.rows(np.arange(table.n))


def test_a_narrow_window_gets_exactly_its_segments_and_the_padding(alice):
    run = done_run(alice)
    rows = stored_rows(run)
    a, b = float(np.quantile(rows["t0"], 0.4)), float(np.quantile(rows["t0"], 0.45))
    header, arrays = get_frame(client_for(alice), run, "tile", t0=a, t1=b, width=800, height=300)
    assert header["mode"] == "rows" and header["count"] == run.segments_count
    pa, pb = header["window"]
    pad = (b - a) * gantt_tiles.PAD
    assert pa == pytest.approx(a - pad) and pb == pytest.approx(b + pad)
    inside = (rows["t0"] < pb) & ((rows["t1"] > pa) | ((rows["t0"] >= pa) & (rows["t1"] == rows["t0"])))
    expected = {k: v[inside] for k, v in rows.items()}
    assert as_multiset(frames.rows_of(arrays, "s")) == as_multiset(expected)
    assert header["clusters"] == [{"name": "a", "processors": 64}, {"name": "b", "processors": 16}]


def test_a_window_with_too_many_segments_gets_the_occupancy_raster(alice, monkeypatch):
    run = done_run(alice)
    monkeypatch.setattr(gantt_tiles, "EXACT_ROWS", 100)
    header, arrays = get_frame(client_for(alice), run, "tile", width=300, height=120)
    assert header["mode"] == "raster" and header["visible"] > 100
    raster = arrays["raster"]
    bands = bands_for([64, 16], 120)
    assert header["bands"] == bands and raster.shape == (len(header["kinds"]), sum(bands), header["bins"])
    assert header["bins"] == 450  # one column per pixel of the padded window (300 px and a quarter either side)
    rows = stored_rows(run)
    expected = quantize(SegmentTable(rows).raster(*header["window"], header["bins"], bands, [64, 16],
                                                  header["kind_codes"]))
    np.testing.assert_array_equal(raster, expected)
    # The padded window covers the run: utilisation read off the raster is the run's.
    a, b = header["window"]
    busy = float(((rows["t1"] - rows["t0"]) * rows["processors"]).sum())
    width = (b - a) / header["bins"]
    area = sum((raster[0, sum(bands[:c]):sum(bands[:c + 1])].astype(float) / 255).sum() * width * p / bands[c]
               for c, p in enumerate([64, 16]))
    assert area == pytest.approx(busy, rel=0.02)
    # the strip is read off the same raster: the busy processors the segments give directly
    assert arrays["series.busy"].shape == (2, header["bins"])
    direct = gantt_tiles._series(gantt_tiles.segment_source(run), a, b, header["bins"], [64, 16])
    np.testing.assert_allclose(arrays["series.busy"], direct["series.busy"], rtol=1e-4, atol=1e-3)
    assert arrays["series.busy"].max() > 1  # (a real load, not two empty arrays)


def test_a_job_is_found_with_all_its_segments_and_a_click_finds_the_segment_under_it(alice):
    run = done_run(alice)
    rows = stored_rows(run)
    i = len(rows["t0"]) // 2
    job_id, stream = int(rows["job_id"][i]), int(rows["stream"][i])
    header, arrays = get_frame(client_for(alice), run, "job", stream=stream, job_id=job_id)
    found = frames.rows_of(arrays, "s")
    mine = (rows["job_id"] == job_id) & (rows["stream"] == stream)
    assert header["n"] == int(mine.sum()) >= 1
    assert as_multiset(found) == as_multiset({k: v[mine] for k, v in rows.items()})

    t = float((rows["t0"][i] + rows["t1"][i]) / 2)
    header, arrays = get_frame(client_for(alice), run, "at", cluster=int(rows["cluster"][i]),
                               processor=int(rows["first_processor"][i]), t=t)
    hit = frames.rows_of(arrays, "s")
    assert header["n"] == 1 and int(hit["job_id"][0]) == job_id and int(hit["stream"][0]) == stream


@pytest.mark.parametrize("query,field", [
    ({"t0": "x"}, "t0"), ({"t0": "nan"}, "t0"), ({"width": "0"}, "width"), ({"height": "1e9"}, "height"),
])
def test_bad_tile_parameters_are_refused_naming_the_parameter(alice, query, field):
    run = done_run(alice, completions=200)
    response = client_for(alice).get(reverse("runs:gantt_tile", args=[run.pk]), query)
    assert response.status_code == 400 and response.content.decode().startswith(field)


def test_bad_job_and_point_parameters_are_refused(alice):
    run = done_run(alice, completions=200)
    client = client_for(alice)
    assert client.get(reverse("runs:gantt_job", args=[run.pk]), {"stream": 0}).status_code == 400
    assert client.get(reverse("runs:gantt_at", args=[run.pk]), {"cluster": 0, "processor": -1, "t": 1}).status_code \
        == 400


def test_tiles_of_a_run_without_a_result_come_from_its_streamed_chunks(alice):
    """The stream's rows are the result's: a run whose stored result is gone (as a running,
    cancelled or failed run has none) shows the same Gantt from its chunks."""
    run = done_run(alice)
    expected = stored_rows(run)
    Run.objects.filter(pk=run.pk).update(status=Status.CANCELLED)
    run.refresh_from_db()
    source = gantt_tiles.segment_source(run)
    assert source.seq == RunChunk.objects.filter(run=run, kind="segments").order_by("-seq").first().seq
    table = source.table
    assert as_multiset(table.rows(np.arange(table.n))) == as_multiset(expected)
    header, _ = get_frame(client_for(alice), run, "tile", width=600, height=200)
    assert header["count"] == len(expected["t0"]) and header["status"] == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_run_cancelled_midway_keeps_the_gantt_of_what_it_simulated(alice, monkeypatch):
    """Cancelled while replication 0 streams: the chunks stored so far stay, and the tiles show
    their rows plus the segments that were in progress, drawn up to the time reached."""
    from simengine import streaming

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)  # a chunk at every slice
    run = create_run(alice, spec(completions=20000), dispatch_now=False)
    real_call = execution._Progress.__call__
    seen = {"segments": 0}

    def cancel_after_a_few(self, chunk):
        if chunk["kind"] == "segments" and not chunk.get("final"):
            seen["segments"] += 1
            if seen["segments"] == 6:
                Run.objects.filter(pk=self.run_id).update(cancel_requested=True)
                self._last_check = -1e9  # look at once
        return real_call(self, chunk)

    monkeypatch.setattr(execution._Progress, "__call__", cancel_after_a_few)
    assert execution.execute_run(run.pk) == execution.CANCELLED
    run.refresh_from_db()
    chunks = RunChunk.objects.filter(run=run, kind="segments")
    assert chunks.count() >= 5 and not RunResult.objects.filter(run=run).exists()
    source = gantt_tiles.segment_source(run)
    assert source.table.n == sum(c.rows for c in chunks) > 0
    assert len(source.open_rows["t0"]) > 0 and (source.open_rows["t1"] <= source.frontier).all()
    header, arrays = get_frame(client_for(alice), run, "tile", width=600, height=200)
    assert header["mode"] == "rows" and header["n"] + header["n_open"] == source.count
    assert header["frontier"] == pytest.approx(source.frontier)


@pytest.mark.django_db(transaction=True)
def test_an_ended_runs_gantt_is_read_from_its_chunks_once_and_then_memory_mapped(alice, monkeypatch):
    """A failed or cancelled run's Gantt is read from its chunks the first time it is drawn and
    kept as files beside the results: a process that has never drawn it maps those files (no
    chunk is read, no table is held), shows the same tile, and the files go with the run."""
    from simengine import streaming

    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    run = create_run(alice, spec(completions=20000), dispatch_now=False)
    real_call = execution._Progress.__call__

    def fail_midway(self, chunk):
        if chunk["kind"] == "segments" and chunk["seq"] >= 6:
            raise RuntimeError("out of budget")
        return real_call(self, chunk)

    monkeypatch.setattr(execution._Progress, "__call__", fail_midway)
    assert execution.execute_run(run.pk) == execution.FAILED
    run.refresh_from_db()
    client = client_for(alice)
    first_header, first = get_frame(client, run, "tile", width=600, height=200)
    assert result_store.has_ended_gantt(run) and first_header["status"] == "failed"
    source = gantt_tiles.segment_source(run)
    assert isinstance(source.table.columns["t0"], np.memmap)
    assert source.table.n == sum(c.rows for c in RunChunk.objects.filter(run=run, kind="segments")) > 0
    # what the files hold is what the chunks say: rows, rows open at the end, queue lengths
    grown = gantt_tiles._GrowingTable()
    gantt_tiles._read_chunks(run, grown)
    assert as_multiset(source.table.rows(np.arange(source.table.n))) == as_multiset(grown.table().rows(np.arange(grown.n)))
    assert source.seq == grown.seq and source.frontier == grown.frontier and len(grown.queued_at) > 0
    t = np.linspace(0, grown.frontier, 50)
    np.testing.assert_array_equal(source.queue(t), gantt_tiles._queue_from_samples(
        np.array(grown.queued_at), np.array(grown.queued, np.float64), t))
    assert as_multiset(source.open_rows) == as_multiset(gantt_tiles._streamed_source(
        grown.table(), grown.open, grown.frontier, grown.seq, [], np.zeros(0), np.zeros((0, 0))).open_rows)

    # another process: nothing kept in memory, and no chunk may be read
    gantt_tiles._STORED.clear()
    gantt_tiles.CHUNK_TABLES.clear()
    monkeypatch.setattr(gantt_tiles, "_read_chunks", lambda *a: pytest.fail("read the chunks again"))
    again_header, again = get_frame(client, run, "tile", width=600, height=200)
    assert again_header == first_header
    assert [k for k in first if not np.array_equal(again[k], first[k], equal_nan=first[k].dtype.kind == "f")] == []
    assert len(gantt_tiles.CHUNK_TABLES._tables) == 0

    folder = result_store.ended_folder(run)
    run.delete()
    assert not result_store.results_storage().exists(f"{folder}/index.npy")


def test_another_replication_is_simulated_again_once_and_drawn(alice):
    run = done_run(alice, completions=1500, replications=3)
    client = client_for(alice)
    header0, arrays0 = get_frame(client, run, "tile", width=600, height=200)
    header2, arrays2 = get_frame(client, run, "tile", width=600, height=200, replication=2)
    assert header0["replications"] == 3 and header2["count"] > 0
    expected = simengine.replication_segments(simengine.load_scenario(run.spec), 2)
    assert header2["mode"] == "rows" and header2["count"] == len(expected["t0"])
    assert as_multiset(frames.rows_of(arrays2, "s")) == as_multiset(expected)
    assert as_multiset(frames.rows_of(arrays2, "s")) != as_multiset(frames.rows_of(arrays0, "s"))
    stored = RunResult.objects.get(run=run)
    assert result_store.has_replication_gantt(stored, 2) and not result_store.has_replication_gantt(stored, 1)
    # a job of replication 2 is found in replication 2
    i = 0
    job = {"stream": int(expected["stream"][i]), "job_id": int(expected["job_id"][i])}
    header, _ = get_frame(client, run, "job", replication=2, **job)
    mine = (expected["job_id"] == job["job_id"]) & (expected["stream"] == job["stream"])
    assert header["n"] == int(mine.sum())


def test_replications_that_cannot_be_drawn_say_why(alice, monkeypatch):
    run = done_run(alice, completions=300, replications=2)
    client = client_for(alice)
    url = reverse("runs:gantt_tile", args=[run.pk])
    response = client.get(url, {"replication": 5})
    assert response.status_code == 409 and response.content.decode() == "replication: must be within 0..1"
    monkeypatch.setattr(gantt_tiles, "REPLICATION_INLINE_SECONDS", 0.0)
    response = client.get(url, {"replication": 1})
    assert response.status_code == 409 and "would take about" in response.content.decode()
    Run.objects.filter(pk=run.pk).update(status=Status.CANCELLED)
    response = client.get(url, {"replication": 1})
    assert response.status_code == 409 and "once the run is done" in response.content.decode()
