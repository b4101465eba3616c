"""Trace readers (SWF, GWF) and the SWF writer, on the real archive traces and small files."""
from __future__ import annotations

import gzip
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from simengine.errors import TraceError
from simengine.traces import (
    UNKNOWN_RUNTIME_KEY,
    read_gwf,
    read_swf,
    read_trace,
    swf_status,
    write_swf,
)
from simengine.workload import (
    STATUS_COMPLETED,
    STATUS_FAILED,
    STATUS_KILLED,
    STATUS_REJECTED,
    STATUS_UNFINISHED,
)

from tests.conftest import TRACE_DIR

REPO = Path(__file__).resolve().parents[2]
TINY_GWF = REPO / "examples" / "traces" / "tiny.gwf"

# MaxProcs from each trace's header, as documented in the Parallel Workloads Archive.
MAX_PROCS = {
    "DAS2-fs1-2003-1.swf.gz": 64,
    "NASA-iPSC-1993-3.1-cln.swf.gz": 128,
    "HPC2N-2002-2.2-cln.first3171.swf.gz": 240,
    "LCG-2005-1.swf.gz": 24515,
}


def shared_trace(name: str) -> Path:
    """One of the real traces the repository ships (gridweb/demo/PROVENANCE.txt)."""
    return TRACE_DIR / name


class Reference:
    """A deliberately simple, independent SWF parse (line by line) to check the fast reader."""

    def __init__(self, path: Path):
        self.comment_lines = 0
        rows, lines = [], []
        with gzip.open(path, "rt") as f:
            for number, line in enumerate(f, start=1):
                stripped = line.strip()
                if not stripped:
                    continue
                if stripped.startswith(";"):
                    self.comment_lines += 1
                    continue
                fields = stripped.split()
                assert len(fields) == 18
                rows.append([float(x) for x in fields])
                lines.append(number)
        self.values = np.array(rows).reshape(-1, 18)
        self.lines = np.array(lines, dtype=np.int64)

    @property
    def data_lines(self) -> int:
        return len(self.values)


def swf_line(*, job=1, submit=0, wait=-1, run=100, alloc=4, req=-1, req_time=-1, status=1, user=1,
             partition=-1) -> str:
    return (f"{job} {submit} {wait} {run} {alloc} -1 -1 {req} {req_time} -1 {status} {user} 1 -1 -1 "
            f"{partition} -1 -1\n")


def write_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------------
# The real archive traces
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MAX_PROCS))
def test_shared_trace_reads_completely(name: str) -> None:
    path = shared_trace(name)
    ref = Reference(path)
    trace = read_trace(path)

    assert trace.format == "swf" and trace.path == str(path) and trace.sites == []
    # Every data line is either a job or a counted skip; skips are exactly the lines without processors.
    no_procs = (ref.values[:, 7] <= 0) & (ref.values[:, 4] <= 0)
    assert len(trace.jobs) + trace.skipped == ref.data_lines
    assert trace.skipped == int(no_procs.sum())
    assert trace.skipped_lines == ref.lines[no_procs][:1000].tolist()
    # Header kept.
    assert len(trace.comments) == ref.comment_lines
    assert all(c.lstrip().startswith(";") for c in trace.comments)
    assert trace.header["Version"] == "2.2"
    assert trace.max_procs == MAX_PROCS[name]
    assert trace.header["MaxProcs"] == str(MAX_PROCS[name])

    kept = ref.values[~no_procs]
    order = np.argsort(kept[:, 1], kind="stable")
    kept = kept[order]
    jobs = trace.jobs
    assert np.all(np.diff(jobs.submit) >= 0)
    np.testing.assert_array_equal(jobs.job_id, kept[:, 0])
    np.testing.assert_array_equal(jobs.submit, kept[:, 1])
    np.testing.assert_array_equal(jobs.runtime, np.maximum(kept[:, 3], 0))
    # Processors rule: requested (8) if > 0 else allocated (5).
    np.testing.assert_array_equal(jobs.processors, np.where(kept[:, 7] > 0, kept[:, 7], kept[:, 4]))
    # Estimate rule: requested time (9) if > 0 else the run time.
    np.testing.assert_array_equal(jobs.estimate, np.where(kept[:, 8] > 0, kept[:, 8], np.maximum(kept[:, 3], 0)))
    assert trace.header[UNKNOWN_RUNTIME_KEY] == str(int((kept[:, 3] < 0).sum()))
    np.testing.assert_array_equal(jobs.extra["wait"], kept[:, 2])
    for key, column in (("status", 10), ("user", 11), ("group", 12), ("executable", 13), ("queue", 14),
                        ("partition", 15)):
        assert jobs.extra[key].dtype == np.int64
        np.testing.assert_array_equal(jobs.extra[key], kept[:, column])
    assert np.all(jobs.cluster == -1) and np.all(jobs.stream == 0)


def test_shared_trace_facts() -> None:
    das2 = read_swf(shared_trace("DAS2-fs1-2003-1.swf.gz"))
    # 959 DAS2 jobs were cancelled before getting processors (status 5, fields 5 and 8 are -1).
    assert das2.skipped > 0 and len(das2.jobs) == 40315 - das2.skipped
    assert das2.header["MaxNodes"] == "32 (dual CPU)"
    assert das2.header["Conversion"] == ["Dan Tsafrir (dants@cs.huji.ac.il) Nov 29 2004",
                                         "added TimeZoneString; Sep 29 2005"]
    assert len(das2.header["Information"]) == 12
    lcg = read_swf(shared_trace("LCG-2005-1.swf.gz"))
    assert len(lcg.jobs) + lcg.skipped == 188041
    assert len(lcg.header["Partition"]) == int(lcg.header["MaxPartitions"]) == 170
    assert lcg.header["Partition"][0] == "1 grid.ici.ro"
    assert "http" not in lcg.header  # continuation line "http://..." is not a key
    nasa = read_swf(shared_trace("NASA-iPSC-1993-3.1-cln.swf.gz"))
    # NASA has no requested processors or times: allocated processors and run times are used.
    assert np.array_equal(nasa.jobs.estimate, nasa.jobs.runtime)
    hpc2n = read_swf(shared_trace("HPC2N-2002-2.2-cln.first3171.swf.gz"))
    assert hpc2n.header["Note"] == ["uses MAUI scheduler"]
    assert int(hpc2n.header[UNKNOWN_RUNTIME_KEY]) > 0


def test_lcg_reads_lean() -> None:
    # (its speed is a benchmark's business, not a timed test's: benchmarks/run_all.py)
    path = shared_trace("LCG-2005-1.swf.gz")
    tracemalloc.start()
    try:
        trace = read_swf(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # The result is ~20 MB of arrays; per-line Python objects would need several times that.
    assert peak < 150e6, f"peak {peak / 1e6:.0f} MB"
    assert len(trace.jobs) == 188041


def test_gzip_and_plain_read_the_same(tmp_path: Path) -> None:
    src = shared_trace("HPC2N-2002-2.2-cln.first3171.swf.gz")
    plain = tmp_path / "hpc2n.swf"
    with gzip.open(src, "rb") as f_in, open(plain, "wb") as f_out:
        shutil.copyfileobj(f_in, f_out)
    misnamed = tmp_path / "hpc2n-really-gzipped.swf"  # gzip is told by its magic number
    shutil.copy(src, misnamed)
    a, b, c = read_swf(src), read_trace(plain), read_trace(misnamed)
    for other in (b, c):
        assert other.header == a.header and other.comments == a.comments
        for col in ("job_id", "submit", "runtime", "estimate", "processors"):
            np.testing.assert_array_equal(getattr(other.jobs, col), getattr(a.jobs, col))


def test_limit_keeps_first_jobs() -> None:
    path = shared_trace("DAS2-fs1-2003-1.swf.gz")
    ref = Reference(path)
    full = read_swf(path)
    part = read_swf(path, limit=1000)
    assert len(part.jobs) == 1000
    np.testing.assert_array_equal(part.jobs.job_id, full.jobs.job_id[:1000])
    # Skips count only up to the 1000th job kept (DAS2's first skipped jobs lie before it).
    no_procs = (ref.values[:, 7] <= 0) & (ref.values[:, 4] <= 0)
    last = np.flatnonzero(~no_procs)[999]
    expected = ref.lines[: last + 1][no_procs[: last + 1]].tolist()
    assert expected and part.skipped == len(expected) and part.skipped_lines == expected
    assert part.comments == full.comments
    assert len(read_swf(path, limit=0).jobs) == 0
    assert len(read_swf(path, limit=10**9).jobs) == len(full.jobs)


# ---------------------------------------------------------------------------------------------
# Rules, on small files
# ---------------------------------------------------------------------------------------------


def test_processors_estimate_and_runtime_rules(tmp_path: Path) -> None:
    path = write_text(tmp_path / "rules.swf", "; Version: 2.2\n; MaxNodes: 16 (quad)\n\n"
                      + swf_line(job=1, alloc=4, req=8, run=100, req_time=200)
                      + swf_line(job=2, submit=5, alloc=4, req=-1, run=100, req_time=-1)
                      + swf_line(job=3, submit=6, alloc=-1, req=2, run=-1, req_time=300)
                      + swf_line(job=4, submit=7, alloc=2, req=0, run=-1, req_time=0))
    trace = read_swf(path)
    assert trace.jobs.processors.tolist() == [8, 4, 2, 2]
    assert trace.jobs.runtime.tolist() == [100, 100, 0, 0]
    assert trace.jobs.estimate.tolist() == [200, 100, 300, 0]
    assert trace.header[UNKNOWN_RUNTIME_KEY] == "2"
    assert trace.max_procs == 16  # MaxNodes when MaxProcs is absent
    assert trace.comments == ["; Version: 2.2", "; MaxNodes: 16 (quad)"]


def test_jobs_without_processors_are_skipped_and_counted(tmp_path: Path) -> None:
    text = ("; Version: 2.2\n; a comment\n"
            + swf_line(job=1)
            + swf_line(job=2, alloc=-1, req=-1)  # line 4
            + "\n"
            + swf_line(job=3, alloc=0, req=0)  # line 6
            + "; a comment between jobs\n"
            + swf_line(job=4, alloc=-1, req=3))
    trace = read_swf(write_text(tmp_path / "skip.swf", text))
    assert trace.jobs.job_id.tolist() == [1, 4]
    assert trace.skipped == 2 and trace.skipped_lines == [4, 6]
    assert trace.comments[-1] == "; a comment between jobs"
    assert trace.max_procs is None


def test_jobs_are_sorted_stably_by_submit(tmp_path: Path) -> None:
    text = "".join(swf_line(job=j, submit=s) for j, s in ((1, 50), (2, 10), (3, 50), (4, 10), (5, 0)))
    trace = read_swf(write_text(tmp_path / "unsorted.swf", text))
    assert trace.jobs.job_id.tolist() == [5, 2, 4, 1, 3]
    assert trace.jobs.extra["user"].tolist() == [1] * 5


def test_crlf_empty_and_header_only_files(tmp_path: Path) -> None:
    crlf = read_swf(write_text(tmp_path / "crlf.swf", "; Version: 2.2\r\n" + swf_line().replace("\n", "\r\n")))
    assert len(crlf.jobs) == 1 and crlf.header["Version"] == "2.2" and crlf.comments == ["; Version: 2.2"]
    empty = read_swf(write_text(tmp_path / "empty.swf", ""))
    assert len(empty.jobs) == 0 and set(empty.jobs.extra) >= {"wait", "status", "user"}
    header_only = read_swf(write_text(tmp_path / "header.swf", "; MaxProcs: 8\n"))
    assert len(header_only.jobs) == 0 and header_only.max_procs == 8
    no_newline = read_swf(write_text(tmp_path / "nonl.swf", swf_line().rstrip("\n")))
    assert len(no_newline.jobs) == 1


def test_many_blocks(tmp_path: Path) -> None:
    # Over 4 MB, so the reader parses several blocks; a bad line in a later block is still exact.
    n = 100000
    body = "".join(swf_line(job=j, submit=j, run=j % 7, alloc=1 + j % 5) for j in range(1, n + 1))
    path = write_text(tmp_path / "big.swf", "; Version: 2.2\n" + body)
    assert path.stat().st_size > 4 * 2**20
    trace = read_swf(path)
    assert len(trace.jobs) == n and trace.jobs.job_id[-1] == n
    np.testing.assert_array_equal(trace.jobs.processors, 1 + np.arange(1, n + 1) % 5)
    bad = write_text(tmp_path / "bigbad.swf", "; Version: 2.2\n" + body + swf_line(job="x"))
    with pytest.raises(TraceError) as err:
        read_swf(bad)
    assert err.value.line == n + 2 and err.value.field == "1 (job number)"
    assert len(read_swf(bad, limit=n).jobs) == n  # the bad line lies after the limit


# ---------------------------------------------------------------------------------------------
# Malformed input
# ---------------------------------------------------------------------------------------------

GOOD = "; Version: 2.2\n; MaxProcs: 8\n" + swf_line(job=1) + swf_line(job=2)  # bad lines go on line 5


@pytest.mark.parametrize(
    ("bad_line", "field", "reason"),
    [
        ("1 0 -1 100 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1\n", "18 (think time)", "17 fields"),
        ("1 0 -1 100 4 -1 -1 -1\n", "9 (requested time)", "8 fields"),
        (swf_line().rstrip("\n") + " 7\n", "19 (extra)", "19 fields"),
        (swf_line(run="abc"), "4 (run time)", "not a number: 'abc'"),
        (swf_line(run="12abc"), "4 (run time)", "not a number"),
        (swf_line(wait="nan"), "3 (wait time)", "not a finite number"),
        (swf_line(alloc="4.5"), "5 (allocated processors)", "not an integer"),
        (swf_line(submit=-3), "2 (submit time)", "negative submit time"),
        # past MAX_PROCESSORS (2**31 - 1): a PostgreSQL integer and the Gantt's int32 columns overflow
        (swf_line(alloc=10**18), "5 (allocated processors)",
         "1,000,000,000,000,000,000 processors, more than the 2,147,483,647 a job may have"),
        (swf_line(req=10**18), "8 (requested processors)", "more than the 2,147,483,647"),
        (swf_line(alloc=2**31), "5 (allocated processors)", "2,147,483,648 processors"),
        (swf_line(req=10**20), "8 (requested processors)", "more than the 2,147,483,647"),
        (swf_line(job=10**20), "1 (job number)", "does not fit a 64-bit integer"),
    ],
)
def test_malformed_line_names_file_line_and_field(tmp_path: Path, bad_line: str, field: str, reason: str) -> None:
    for name in ("bad.swf", "bad.swf.gz"):
        path = tmp_path / name
        data = (GOOD + bad_line + swf_line(job=9)).encode()
        path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        with pytest.raises(TraceError) as err:
            read_swf(path)
        assert err.value.file == str(path)
        assert err.value.line == 5
        assert err.value.field == field
        assert reason in err.value.reason
        assert str(path) in str(err.value) and "line 5" in str(err.value) and field in str(err.value)


def test_processor_counts_past_32_bits_are_refused_in_every_format(tmp_path: Path) -> None:
    """Whatever reads the trace (the upload, the CLI, a scenario) is told the line and field."""
    from simengine.traces import MAX_PROCESSORS

    largest = read_swf(write_text(tmp_path / "ok.swf", swf_line(alloc=MAX_PROCESSORS, req=MAX_PROCESSORS)))
    assert largest.jobs.processors.tolist() == [MAX_PROCESSORS]  # the largest count is taken
    for header in ("MaxProcs", "MaxNodes"):
        path = write_text(tmp_path / "header.swf", f"; {header}: 1000000000000000000\n" + swf_line())
        with pytest.raises(TraceError) as err:
            read_swf(path)
        assert err.value.field == f"{header} (header)" and "more than the 2,147,483,647" in err.value.reason
    for column, job in (("5 (NProcs)", gwf_line(1, 0, nprocs=10**18)), ("8 (ReqNProcs)", gwf_line(1, 0, req=2**40))):
        with pytest.raises(TraceError) as err:
            read_gwf(write_text(tmp_path / "big.gwf", GWF_HEADER + gwf_line(1, 0) + job))
        assert (err.value.line, err.value.field) == (5, column) and "more than the 2,147,483,647" in err.value.reason
    with pytest.raises(TraceError) as err:
        read_gwf(write_text(tmp_path / "header.gwf", "# MaxProcs: 99999999999\n" + gwf_line(1, 0)))
    assert err.value.field == "MaxProcs (header)"


def test_earliest_error_wins(tmp_path: Path) -> None:
    # A non-numeric token on line 2 comes before a short line on line 3.
    text = swf_line(job=1) + swf_line(job=2, run="x") + "1 2 3\n"
    with pytest.raises(TraceError) as err:
        read_swf(write_text(tmp_path / "two.swf", text))
    assert (err.value.line, err.value.field) == (2, "4 (run time)")


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="file not found"):
        read_swf(tmp_path / "missing.swf")
    broken = tmp_path / "broken.swf.gz"
    broken.write_bytes(gzip.compress(GOOD.encode() * 50)[:60])
    with pytest.raises(TraceError) as err:
        read_swf(broken)
    assert err.value.file == str(broken)


def test_read_trace_dispatch(tmp_path: Path) -> None:
    swf = write_text(tmp_path / "a.swf", GOOD)
    assert read_trace(swf).format == "swf"
    assert read_trace(TINY_GWF).format == "gwf"
    odd = write_text(tmp_path / "a.txt", GOOD)
    with pytest.raises(TraceError) as err:
        read_trace(odd)
    assert err.value.file == str(odd) and ".swf" in err.value.reason
    assert len(read_trace(odd, format="swf").jobs) == 2
    with pytest.raises(TraceError, match="unknown trace format"):
        read_trace(swf, format="csv")
    with pytest.raises(TraceError, match="GWF traces only"):
        read_trace(swf, site_map={"a": 0})


# ---------------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["out.swf", "out.swf.gz"])
def test_write_read_round_trip(tmp_path: Path, name: str) -> None:
    src = read_swf(shared_trace("HPC2N-2002-2.2-cln.first3171.swf.gz"))
    jobs = src.jobs
    ids = ("user", "group", "executable", "queue", "partition")
    path = tmp_path / name
    write_swf(path, job_id=jobs.job_id, submit=jobs.submit, wait=jobs.extra["wait"], runtime=jobs.runtime,
              processors=jobs.processors, estimate=jobs.estimate, status=jobs.extra["status"],
              header_comments=["Computer: GridWeb test", "; MaxProcs: 240", "Note: round trip"],
              extra={k: jobs.extra[k] for k in ids})
    back = read_swf(path)
    assert back.max_procs == 240 and back.header["Computer"] == "GridWeb test"
    assert back.header["Version"] == "2.2" and back.header["MaxJobs"] == str(len(jobs))
    assert back.skipped == 0
    for col in ("job_id", "submit", "runtime", "estimate", "processors"):
        np.testing.assert_array_equal(getattr(back.jobs, col), getattr(jobs, col))
    for key in ("wait", "status") + ids:
        np.testing.assert_array_equal(back.jobs.extra[key], jobs.extra[key])
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
        assert not list(tmp_path.glob(".*tmp*"))


def test_write_fractional_and_unknown_values(tmp_path: Path) -> None:
    path = tmp_path / "sim.swf"
    submit = np.array([0.0, 0.1, 1 / 3, 7.0])
    runtime = np.array([1e-3, 2.5, np.nan, np.inf])
    write_swf(path, job_id=np.arange(1, 5), submit=submit, wait=np.array([0.0, 0.25, np.nan, 3.0]),
              runtime=runtime, processors=np.array([1, 2, 3, 4]), estimate=np.array([10.0, 10.0, 10.0, 10.0]),
              status=swf_status(np.array([STATUS_COMPLETED, STATUS_KILLED, STATUS_FAILED, STATUS_UNFINISHED])))
    lines = [line.split() for line in path.read_text().splitlines() if not line.startswith(";")]
    assert all(len(fields) == 18 for fields in lines)
    assert lines[0][1] == "0" and lines[3][1] == "7"  # integral values have no decimal point
    back = read_swf(path)
    np.testing.assert_array_equal(back.jobs.submit, submit)  # exact: shortest repr round-trips
    assert back.jobs.runtime.tolist() == [1e-3, 2.5, 0.0, 0.0]  # NaN/inf were written as -1
    assert back.header[UNKNOWN_RUNTIME_KEY] == "2"
    assert back.jobs.extra["wait"].tolist() == [0.0, 0.25, -1.0, 3.0]
    assert back.jobs.extra["status"].tolist() == [1, 0, 0, -1]
    assert back.jobs.extra["user"].tolist() == [-1] * 4


def test_write_empty_schedule_and_multiline_comment(tmp_path: Path) -> None:
    path = tmp_path / "empty.swf"
    none = np.zeros(0)
    write_swf(path, job_id=none, submit=none, wait=none, runtime=none, processors=none, estimate=none,
              status=none, header_comments=["Note: first line\nsecond line"])
    back = read_swf(path)
    assert len(back.jobs) == 0 and back.header["MaxJobs"] == "0"
    assert back.comments[-2:] == ["; Note: first line", "; second line"]


def test_write_rejects_bad_input(tmp_path: Path) -> None:
    cols = dict(job_id=[1, 2], submit=[0, 1], wait=[0, 0], runtime=[1, 1], processors=[1, 1],
                estimate=[1, 1], status=[1, 1])
    with pytest.raises(ValueError, match="column submit"):
        write_swf(tmp_path / "x.swf", **{**cols, "submit": [0, 1, 2]})
    with pytest.raises(ValueError, match="unknown extra"):
        write_swf(tmp_path / "x.swf", **cols, extra={"colour": [1, 2]})
    assert not (tmp_path / "x.swf").exists()


def test_swf_status_mapping() -> None:
    engine = np.array([STATUS_COMPLETED, STATUS_KILLED, STATUS_FAILED, STATUS_REJECTED, STATUS_UNFINISHED])
    assert swf_status(engine).tolist() == [1, 0, 0, 5, -1]


# ---------------------------------------------------------------------------------------------
# GWF
# ---------------------------------------------------------------------------------------------


def gwf_line(job: int, submit: float, *, site: str = "siteA", last: str = "-1", run: float = 60,
             nprocs: int = 2, req: int = -1, req_time: float = -1, user: str = "1") -> str:
    fields = [job, submit, 0, run, nprocs, -1, -1, req, req_time, -1, 1, user, 1, -1, -1, -1, site, last,
              "UNITARY"] + [-1] * 10
    assert len(fields) == 29
    return " ".join(str(f) for f in fields) + "\n"


GWF_HEADER = "# Version: 1.0\n# MaxProcs: 96\n# JobID SubmitTime WaitTime RunTime NProcs ...\n"


def test_gwf_sites_by_first_appearance(tmp_path: Path) -> None:
    text = (GWF_HEADER
            + gwf_line(1, 0, site="delft", req=4, req_time=100)
            + gwf_line(2, 10, site="leiden")
            + gwf_line(3, 20, site="-1", last="vu")  # OrigSiteID unknown: LastRunSiteID
            + gwf_line(4, 30, site="delft", nprocs=-1, req=-1)  # skipped: no processors
            + gwf_line(5, 40, site="-1", last="-1")  # no site at all: the policy chooses
            + gwf_line(6, 5, site="leiden", run=-1))
    for name in ("t.gwf", "t.gwf.gz"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
        trace = read_trace(path)
        assert trace.format == "gwf" and trace.max_procs == 96
        assert trace.sites == ["delft", "leiden", "vu"]
        assert trace.jobs.job_id.tolist() == [1, 6, 2, 3, 5]  # sorted by submit
        assert trace.jobs.cluster.tolist() == [0, 1, 1, 2, -1]
        assert trace.jobs.processors.tolist() == [4, 2, 2, 2, 2]
        assert trace.jobs.estimate.tolist() == [100, 0, 60, 60, 60]
        assert trace.skipped == 1 and trace.skipped_lines == [7]
        assert trace.header[UNKNOWN_RUNTIME_KEY] == "1"
        assert len(trace.comments) == 3 and trace.header["Version"] == "1.0"
        assert trace.jobs.extra["user"].dtype == np.int64


def test_gwf_site_map_and_unknown_site(tmp_path: Path) -> None:
    text = GWF_HEADER + gwf_line(1, 0, site="delft") + gwf_line(2, 10, site="leiden") + gwf_line(3, 20, site="-1",
                                                                                            last="vu")
    path = write_text(tmp_path / "m.gwf", text)
    trace = read_gwf(path, site_map={"leiden": 0, "delft": 1, "vu": 2})
    assert trace.jobs.cluster.tolist() == [1, 0, 2]
    assert trace.sites == ["delft", "leiden", "vu"]
    with pytest.raises(TraceError) as err:
        read_gwf(path, site_map={"delft": 0})
    assert err.value.file == str(path) and err.value.line == 5
    assert "OrigSiteID" in err.value.field and "'leiden'" in err.value.reason
    with pytest.raises(TraceError) as err:
        read_trace(path, site_map={"delft": 0, "leiden": 1})
    assert err.value.line == 6 and "LastRunSiteID" in err.value.field and "'vu'" in err.value.reason
    # limit stops before the unknown site is reached
    assert len(read_gwf(path, site_map={"delft": 0}, limit=1).jobs) == 1


def test_gwf_malformed_and_string_ids(tmp_path: Path) -> None:
    short = write_text(tmp_path / "short.gwf", GWF_HEADER + gwf_line(1, 0) + "1 2 3\n")
    with pytest.raises(TraceError) as err:
        read_gwf(short)
    assert (err.value.line, err.value.field) == (5, "4 (RunTime)") and "3 fields" in err.value.reason
    bad = write_text(tmp_path / "bad.gwf", GWF_HEADER + gwf_line(1, 0).replace(" 60 ", " 1m ", 1))
    with pytest.raises(TraceError) as err:
        read_gwf(bad)
    assert (err.value.line, err.value.field) == (4, "4 (RunTime)")
    named = read_gwf(write_text(tmp_path / "named.gwf", gwf_line(1, 0, user="U7") + gwf_line(2, 1, user="U8")))
    assert named.jobs.extra["user"].tolist() == ["U7", "U8"]


def test_example_tiny_gwf() -> None:
    trace = read_trace(TINY_GWF)
    assert len(trace.jobs) == 10 and trace.skipped == 0
    assert trace.sites == ["fs0", "fs1"]
    assert set(trace.jobs.cluster.tolist()) == {0, 1}
    assert trace.max_procs == 64


@pytest.mark.parametrize("fmt", ["swf", "gwf"])
def test_read_caps_stop_a_file_at_the_first_bound_it_passes(tmp_path: Path, fmt: str) -> None:
    from simengine.traces import ReadCaps, read_trace

    mark = ";" if fmt == "swf" else "#"
    job = (" ".join(["1", "0", "0", "100", "4", "-1", "-1", "4", "100", "-1", "1"] + ["1"] * 5 + ["-1", "-1"])
           if fmt == "swf" else gwf_line(1, 0.0))
    path = tmp_path / f"t.{fmt}"
    path.write_text(f"{mark} header\n" * 3 + (job + "\n") * 50)
    assert len(read_trace(path).jobs) == 50  # no caps: anything goes
    assert len(read_trace(path, caps=ReadCaps(bytes=10**6, line_bytes=4096, comment_lines=3, jobs=50)).jobs) == 50
    for caps, words in ((ReadCaps(comment_lines=2), "more than 2 comment lines"), (ReadCaps(jobs=49), "more than 49 jobs"),
                        (ReadCaps(bytes=200), r"more than 200 bytes \(decompressed\)")):
        with pytest.raises(TraceError, match=words):
            read_trace(path, caps=caps)
    endless = tmp_path / f"line.{fmt}.gz"
    endless.write_bytes(gzip.compress(b"1" * (1 << 21)))
    with pytest.raises(TraceError, match="line 1: a line longer than 4,096 bytes"):
        read_trace(endless, format=fmt, caps=ReadCaps(line_bytes=4096))
