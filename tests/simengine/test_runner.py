"""run(): the output contract, stop and warm-up rules, reproducibility, segments, streaming."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

import simengine
from simengine import kernel_model, streaming
from simengine.errors import ScenarioError
from simengine.gantt import KIND_NAMES
from simengine.traces import read_swf
from simengine.workload import STATUS_NAMES
from tests.conftest import ROOT
from tests.simengine.live_stream import check_live_stream, streamed_rows


def scenario(**run) -> dict:
    base = {
        "name": "two clusters",
        "platform": {"clusters": [
            {"name": "a", "processors": 16, "scheduler": {"name": "easy"}},
            {"name": "b", "processors": 8, "speed": 2.0, "scheduler": {"name": "conservative"}},
        ]},
        "workload": {"streams": [
            {"kind": "synthetic", "name": "sa", "target": "a", "arrival": {"target_load": 0.7},
             "size": {"kind": "rsd", "low": 1, "high": 16, "q": 0.9},
             "runtime": {"kind": "exponential", "mean": 100},
             "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 3}}},
            {"kind": "synthetic", "name": "sb", "target": "b", "arrival": {"rate": 0.025},
             "size": {"kind": "uniform", "low": 1, "high": 8, "integer": True},
             "runtime": {"kind": "exponential", "mean": 100}},
        ]},
        "run": {"seed": 3, "replications": 1, "stop": {"completions": 3000}, "warmup": {"completions": 200}},
    }
    base["run"].update(run)
    return base


def check_segments_never_overlap(result):
    seg = result.segments
    for c, procs in enumerate(result.cluster_processors):
        mine = seg["cluster"] == c
        assert (seg["first_processor"][mine] >= 0).all()
        assert (seg["first_processor"][mine] + seg["processors"][mine] <= procs).all()
        for p in range(procs):
            on = mine & (seg["first_processor"] <= p) & (seg["first_processor"] + seg["processors"] > p)
            t0, t1 = seg["t0"][on], seg["t1"][on]
            order = np.argsort(t0, kind="stable")
            assert (t0[order][1:] >= t1[order][:-1]).all(), f"processor {p} of cluster {c} runs two jobs at once"


def test_result_records_what_reproduces_it():
    result = simengine.run(scenario())
    s = result.summary()
    assert s["seed"] == 3 and s["engine_version"] == simengine.__version__
    assert s["scenario_hash"] == simengine.scenario_hash(simengine.load_scenario(scenario()))
    assert result.scenario["run"]["seed"] == 3


def test_same_inputs_give_identical_outputs(tmp_path):
    a = simengine.run(scenario(replications=3))
    b = simengine.run(scenario(replications=3))
    for k in a.jobs:
        np.testing.assert_array_equal(a.jobs[k], b.jobs[k])
    for k in a.segments:
        np.testing.assert_array_equal(a.segments[k], b.segments[k])
    a.write(tmp_path / "a")
    b.write(tmp_path / "b")
    for name in ("jobs.csv", "segments.csv", "schedule.swf", "scenario.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    other = simengine.run(scenario(seed=4))
    assert not np.array_equal(other.jobs["submit"][:50], a.jobs["submit"][:50])


def test_replications_in_a_process_pool_equal_sequential_ones():
    seq = simengine.run(scenario(replications=3), workers=1)
    pool = simengine.run(scenario(replications=3), workers=2)
    for k in seq.jobs:
        np.testing.assert_array_equal(seq.jobs[k], pool.jobs[k])
    assert seq.metrics["mean_wait"].values == pool.metrics["mean_wait"].values


def test_stop_at_completions_and_warmup():
    result = simengine.run(scenario())
    j = result.jobs
    completed = j["status"] == STATUS_NAMES.index("completed")
    assert completed.sum() == 3000
    t_stop = j["end"][completed].max()
    assert (j["submit"] <= t_stop).all(), "jobs submitted after the stop are not part of the run"
    unfinished = j["status"] == STATUS_NAMES.index("unfinished")
    assert (np.isnan(j["end"][unfinished]) | (j["end"][unfinished] > t_stop)).all()
    assert j["warmup"].sum() == 200
    assert j["end"][j["warmup"]].max() <= j["end"][completed & ~j["warmup"]].min()
    assert result.metrics["jobs_measured"].mean == 2800


def test_derived_columns_and_speed():
    result = simengine.run(scenario())
    j = result.jobs
    done = ~np.isnan(j["end"])
    np.testing.assert_allclose(j["wait"][done], (j["start"] - j["submit"])[done])
    np.testing.assert_allclose(j["response"][done], (j["end"] - j["submit"])[done])
    np.testing.assert_allclose(j["end"][done] - j["start"][done], j["runtime"][done])
    assert (j["start"][done] >= j["submit"][done]).all()
    # cluster b runs at speed 2: its jobs' runtimes are halved demands; offered work there is
    # rate * E[size] * E[demand] / speed / processors = 0.025 * 4.5 * 100 / 2 / 8 = 0.70
    util_b = result.metrics["utilisation.b"].mean
    assert util_b == pytest.approx(0.70, abs=0.05)


def test_confidence_intervals_across_replications():
    result = simengine.run(scenario(replications=5))
    m = result.metrics["mean_wait"]
    assert len(m.values) == 5 and m.ci_low < m.mean < m.ci_high
    v = np.array(m.values)
    from scipy import stats
    half = stats.t.ppf(0.975, 4) * v.std(ddof=1) / np.sqrt(5)
    assert m.half_width == pytest.approx(half)
    one = simengine.run(scenario()).metrics
    assert one["utilisation.b"].ci_low is None  # one replication: no interval across replications ...
    # ... but the means over jobs get one from batch means of the measured jobs (simengine.statistics),
    # and the utilisation from the busy time of equal slices of its window
    assert one["mean_wait"].ci_low is not None and "batch-means" in one["mean_wait"].shaky
    assert one["utilisation"].ci_low < one["utilisation"].mean < one["utilisation"].ci_high
    assert "batch-means" in one["utilisation"].shaky


def test_segments_cover_every_started_job_without_overlap():
    result = simengine.run(scenario(replications=2))
    first = result.jobs["replication"] == 0
    seg = result.segments
    started = np.flatnonzero(first & ~np.isnan(result.jobs["start"]))
    held = np.zeros(len(result.jobs["job_id"]), np.int64)
    np.add.at(held, seg["job"], seg["processors"])
    np.testing.assert_array_equal(held[started], result.jobs["processors"][started])
    np.testing.assert_array_equal(seg["t0"], result.jobs["start"][seg["job"]])
    assert set(np.unique(seg["kind"])) == {KIND_NAMES.index("run")}
    check_segments_never_overlap(result)


def test_streamed_segments_name_their_job_by_job_id_and_stream():
    chunks = []
    result = simengine.run(scenario(replications=2), on_progress=chunks.append)
    rows = streamed_rows(chunks)
    # Two streams each number their jobs from 1, so a row's job is (stream, job_id).
    assert set(rows["stream"].tolist()) == {0, 1}
    check_live_stream(chunks, result)


def test_streaming_chunks_are_numbered_and_carry_every_segment():
    chunks = []
    result = simengine.run(scenario(), on_progress=chunks.append)
    check_live_stream(chunks, result)
    assert chunks[-1]["kind"] == "metrics" and chunks[-1]["fraction"] == 1.0


def test_kernel_path_streams_segments_while_it_simulates(monkeypatch):
    """With a chunk allowed at every slice, replication 0's Gantt arrives slice by slice, in
    simulated-time order, and the progress fraction grows with simulated time."""
    monkeypatch.setattr(streaming, "LIVE_INTERVAL", 0.0)
    chunks = []
    result = simengine.run(scenario(replications=2), on_progress=chunks.append)
    seg = check_live_stream(chunks, result, during=True)
    assert len(seg) >= 5
    fractions = [c["fraction"] for c in seg]
    assert fractions == sorted(fractions) and fractions[-1] == 0.5
    assert any(len(c["open"]["t0"]) for c in seg[:-1])  # running jobs show before they end
    assert all(len(c["queued"]) == 2 for c in seg if "queued" in c)


def test_horizon_stop(tmp_path):
    s = scenario()
    s["run"]["stop"] = {"horizon": 20000.0}
    s["run"]["warmup"] = {"time": 1000.0}
    result = simengine.run(s)
    j = result.jobs
    assert (j["submit"] < 20000).all()
    assert np.nanmax(j["end"]) <= 20000
    assert (j["warmup"] == (j["submit"] < 1000)).all()


def test_writers_produce_the_contract_files(tmp_path):
    result = simengine.run(scenario(replications=2))
    out = result.write(tmp_path / "run")
    names = {p.name for p in out.iterdir()}
    assert names == {"jobs.csv", "segments.csv", "summary.json", "scenario.json", "result.npz", "schedule.swf"}
    header = (out / "jobs.csv").read_text().splitlines()[0].split(",")
    assert header[:2] == ["job_id", "replication"]
    assert {"job_id", "submit", "start", "end", "processors", "status"} <= set(header)
    rows = (out / "jobs.csv").read_text().splitlines()
    assert len(rows) == 1 + len(result.jobs["job_id"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["mean_wait"]["ci_low"] is not None
    assert summary["job_counts"]["completed"] == 6000
    npz = np.load(out / "result.npz")
    np.testing.assert_array_equal(npz["jobs_start"], result.jobs["start"])
    swf = read_swf(out / "schedule.swf")
    first = result.jobs["replication"] == 0
    assert len(swf.jobs) == first.sum()
    np.testing.assert_allclose(swf.jobs.extra["wait"][:100], np.round(result.jobs["wait"][first][:100]), atol=1)
    # no temporary folder left behind
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_bad_scenarios_raise_field_errors_and_run_nothing():
    bad = copy.deepcopy(scenario())
    bad["platform"]["clusters"][0]["processors"] = -4
    bad["platform"]["clusters"][1]["scheduler"]["name"] = "sjf-magic"
    bad["workload"]["streams"][0]["colour"] = "red"
    with pytest.raises(ScenarioError) as e:
        simengine.run(bad)
    paths = {err.path for err in e.value.errors}
    assert "platform.clusters.0.processors" in paths
    assert any(p.startswith("platform.clusters.1.scheduler") for p in paths)
    assert "workload.streams.0.colour" in paths
    msg = str(e.value)
    assert "sjf-magic" in msg and "easy" in msg  # names the bad value and the known ones


def test_job_larger_than_every_cluster_is_an_error():
    bad = scenario()
    bad["workload"]["streams"][1]["size"] = {"kind": "constant", "value": 64}
    with pytest.raises(ScenarioError) as e:
        simengine.run(bad)
    assert any(err.path == "workload.streams.1.size" and "larger" in err.message for err in e.value.errors)


def test_lwr_grid_lockstep_equals_one_replication_at_a_time():
    grid = {
        "name": "lwr grid", "platform": {"preset": "grid-4site-zikos"},
        "workload": {"streams": [{"kind": "synthetic", "name": "g", "target": "grid",
                                  "arrival": {"mean_interarrival": 0.028},
                                  "size": {"kind": "constant", "value": 1},
                                  "runtime": {"kind": "bounded_pareto", "alpha": 1.5, "high": 100, "mean": 1}}]},
        "run": {"seed": 9, "replications": 3, "stop": {"completions": 5000}, "warmup": {"completions": 500}},
    }
    together = simengine.run(grid)
    for r in range(3):
        alone_s = copy.deepcopy(grid)
        alone = kernel_model.replicate(simengine.load_scenario(alone_s), r, with_segments=False)
        mine = together.jobs["replication"] == r
        for k in ("submit", "start", "end", "cluster"):
            np.testing.assert_array_equal(together.jobs[k][mine], alone.jobs[k])
    check_segments_never_overlap(together)


def test_jobs_csv_carries_the_models_own_columns_after_the_standard_ones(tmp_path):
    # a grid-layer run keeps per-job deadline, tries and kills; jobs.csv must not drop them
    result = simengine.run({
        "platform": {"clusters": [{"name": "c0", "processors": 8}, {"name": "c1", "processors": 8}]},
        "workload": {"streams": [{
            "kind": "coallocated", "name": "g", "arrival": {"rate": 0.01}, "count": 20,
            "components": {"kind": "constant", "value": 2}, "size": {"kind": "constant", "value": 2},
            "runtime": {"kind": "constant", "value": 50}, "deadline": {"min": 1, "max": 100}}]},
        "grid": {"placement": {"name": "worst-fit"}, "deadline_policy": {"name": "rpp"}},
    })
    result.write_jobs_csv(tmp_path / "jobs.csv")
    header = (tmp_path / "jobs.csv").read_text().splitlines()[0].split(",")
    assert header[:16] == ["job_id", "replication", "stream", "cluster", "submit", "start", "end", "processors",
                           "runtime", "estimate", "wait", "response", "slowdown", "bounded_slowdown", "status",
                           "warmup"]
    assert {"component", "deadline", "tries", "kills"} <= set(header[16:])
    rows = (tmp_path / "jobs.csv").read_text().splitlines()[1:]
    assert len(rows) == len(result.jobs["job_id"])
    # the deadline column holds each job's own values, in row order
    k = header.index("deadline")
    assert [float(r.split(",")[k]) for r in rows] == pytest.approx(result.jobs["deadline"].tolist())


def swf_data_lines(path) -> list[list[str]]:
    return [line.split() for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith(";")]


def test_schedule_swf_has_integer_seconds_by_default_and_stays_a_consistent_schedule(tmp_path):
    """Other tools' SWF readers take integer times: submit, start and end are rounded and wait and
    run time taken between them, so a job that starts when another ends still does."""
    result = simengine.run(scenario(replications=1))
    assert (result.jobs["submit"] != np.round(result.jobs["submit"])).any()  # the simulated times are not
    result.write_swf(tmp_path / "int.swf")
    rows = swf_data_lines(tmp_path / "int.swf")
    assert rows and all("." not in field for row in rows for field in row)
    swf = read_swf(tmp_path / "int.swf").jobs
    first = result.jobs["replication"] == 0
    start = result.jobs["start"][first]
    ran = ~np.isnan(start)
    np.testing.assert_array_equal(swf.submit + swf.extra["wait"], np.where(ran, np.round(start), swf.submit - 1))
    ended = ~np.isnan(result.jobs["end"][first])
    np.testing.assert_array_equal((swf.submit + swf.extra["wait"] + swf.runtime)[ended],
                                  np.round(result.jobs["end"][first])[ended])
    # exact on request, and any number of decimals in between
    result.write_swf(tmp_path / "exact.swf", precision=None)
    np.testing.assert_array_equal(read_swf(tmp_path / "exact.swf").jobs.submit, result.jobs["submit"][first])
    result.write_swf(tmp_path / "ms.swf", precision=3)
    submits = [row[1] for row in swf_data_lines(tmp_path / "ms.swf")]
    assert max(len(s.split(".")[1]) for s in submits if "." in s) <= 3
    with pytest.raises(ValueError, match="precision must be within 0..9"):
        result.write_swf(tmp_path / "bad.swf", precision=12)


def test_the_cli_takes_an_swf_precision_and_names_a_bad_one(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario(replications=1)))
    ok = subprocess.run([sys.executable, "-m", "simengine", "run", str(path), "--out", str(tmp_path / "o"),
                         "--quiet", "--swf-precision", "exact"], capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0, ok.stderr
    assert any("." in row[1] for row in swf_data_lines(tmp_path / "o" / "schedule.swf"))
    bad = subprocess.run([sys.executable, "-m", "simengine", "run", str(path), "--out", str(tmp_path / "p"),
                          "--swf-precision", "ten"], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and "--swf-precision: must be an integer from 0 to 9 or 'exact'" in bad.stderr


def test_every_model_says_when_its_horizon_cuts_a_trace():
    """The co-allocation grid layer cut a trace at run.stop.horizon without a word (issue: no
    silent truncation); every model now reads its traces through one loader that says so."""
    import yaml

    data = yaml.safe_load((ROOT / "examples" / "ballier-4x32.yaml").read_text())
    data["workload"]["streams"][0] = {"kind": "trace", "name": "das2", "target": "c1",
                                      "path": str(ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz")}
    data["run"].update(replications=1, stop={"horizon": 50000}, warmup={"time": 0})
    result = simengine.run(data)
    assert any("das2:" in n and "jobs arrive before run.stop.horizon (50,000 s)" in n for n in result.notes), \
        result.notes


def test_a_kernel_path_run_loads_no_other_model_family():
    """Each family's package is imported when a scenario of its own runs (simengine.models): a
    scenario on the kernel path imports none of the others' (most of a command-line replay's
    imports otherwise)."""
    import subprocess
    import sys

    code = ("import sys, simengine\n"
            f"simengine.run({str(ROOT / 'examples' / 'single-cluster-easy.yaml')!r})\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('simengine.'))))\n")
    loaded = set(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                cwd=ROOT).stdout.split())
    assert "simengine.kernel_model" in loaded
    others = {"simengine.cao.run", "simengine.cao.core", "simengine.grid.run", "simengine.grid.koala_run",
              "simengine.evolving.run", "simengine.local.run", "simengine.local.cluster", "simengine.local.core"}
    assert loaded & others == set()



def test_schedule_swf_keeps_the_traces_users_groups_queues_and_time_origin(tmp_path):
    # issue 38: the export wrote -1 for user, group and queue and dropped the input's
    # UnixStartTime/TimeZone headers; read back, it gives what the input trace gave
    from simengine.traces import read_trace

    trace = ROOT / "gridweb" / "demo" / "DAS2-fs1-2003-1.swf.gz"
    spec = {"platform": {"clusters": [{"name": "c", "processors": 64, "scheduler": {"name": "easy"}}]},
            "workload": {"streams": [{"kind": "trace", "name": "das", "target": "c", "path": str(trace), "limit": 500}]}}
    result = simengine.run(spec)
    result.write_swf(tmp_path / "schedule.swf")
    given, back = read_trace(trace, limit=500), read_trace(tmp_path / "schedule.swf")
    order = {int(i): k for k, i in enumerate(given.jobs.job_id)}
    rows = [order[int(i)] for i in back.jobs.job_id]
    for field in ("user", "group", "queue"):
        assert back.jobs.extra[field].tolist() == given.jobs.extra[field][rows].tolist(), field
    assert len(set(given.jobs.extra["user"].tolist())) > 1
    for key in ("UnixStartTime", "TimeZoneString"):
        assert back.header[key] == given.header[key]
    assert result.summary()["time_origins"] == {"das": {k: given.header[k] for k in
                                                        ("UnixStartTime", "TimeZone", "TimeZoneString")}}
    # a retimed replay's time 0 is no longer the trace's: no origin is claimed
    spec["workload"]["streams"][0]["target_load"] = 0.8
    rescaled = simengine.run(spec)
    rescaled.write_swf(tmp_path / "rescaled.swf")
    assert "UnixStartTime" not in read_trace(tmp_path / "rescaled.swf").header and not rescaled.time_origins
