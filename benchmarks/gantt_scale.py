"""The Gantt at scale, in Chromium, against the page before the live Gantt (the peer), side by side.

    .venv/bin/python benchmarks/gantt_scale.py [--sizes 100000,1000000,10000000] [--peer REV]
                                                [--no-peer] [--peer-timeout 240] [--update-docs]

For each size (segments of replication 0), on this machine, for GridWeb (this checkout) and for
the peer (the same repository at ``--peer``, default the commit before the live Gantt, checked out
into a temporary git worktree and run with this checkout's virtualenv):

1. an embedded-mode site of its own (temporary SQLite database and data folder, the ASGI server
   with its in-process worker) on a free port;
2. a **finished run**: a 2-cluster EASY scenario with about that many segments, simulated once
   with ``execute_run``; Chromium opens its page in a fresh context and the script records
   * ``open``: milliseconds from navigation until the full overview is drawn (GridWeb: the first
     tile painted; the peer: every segment appended and drawn), two animation frames after;
   * ``frames``: once the page's one-time loading after the chart is done (its plots and jobs
     table), during 4 s of zooming and panning (the x range changed at every animation frame,
     as a wheel or a drag does), the time between animation frames: median and 95th percentile;
   * ``heap``: the page's JavaScript heap afterwards (Chrome DevTools Protocol, JSHeapUsedSize);
3. a **live run** of the same scenario, started through the REST API, whose page opens while it
   waits behind a few seconds of another run: from the moment the site has stored replication 0's
   last segments (GridWeb: the time its worker stored the final chunk, ``RunChunk.created``; the
   peer, which does not record it: the script polls the site's database every 10 ms) to the
   moment the page's view holds every segment (GridWeb: the streamed
   rows, or a tile of all of them; the peer: every segment appended);
4. the **ingestion rate**: a page opened on a live run of the same replication 0 and enough more
   replications to last about ten more seconds, once replication 0's segments are all stored, so that the stream is limited by the
   page, the websocket and the server, not by the engine: segments in the page's view per second
   from its first segment to its complete view.

A peer that has the live Gantt itself (its tree holds gridweb/runs/gantt_tiles.py, e.g. an earlier
commit of this page) is measured exactly as GridWeb is, so ``--peer <commit>`` compares two versions
of the live page; the table then names the peer's commit.

Targets (issue 11): open < 2 s, frame median < 50 ms and 95th percentile < 100 ms, heap < 400 MB,
live view complete < 2 s after the engine's last segment, ingestion >= 500,000 segments/s. Every
number is measured in this run. Results go to ``benchmarks/results/gantt_scale.json`` and, with
``--update-docs``, into docs/performance.md ("Web: Gantt at scale").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from worktree import checkout  # (benchmarks/: this script's folder)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "gantt_scale.json"
DOCS = ROOT / "docs" / "performance.md"
DEFAULT_PEER = "25d41d0"  # the page before the live Gantt (segments.json and JSON chunks)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--enable-precise-memory-info"]
MODE_VARIABLES = ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL")
SEGMENTS_PER_COMPLETION = 2.9  # this scenario's, measured: completions = size / this
TARGETS = {"open_ms": 2000, "frame_median_ms": 50, "frame_p95_ms": 100, "heap_mb": 400, "live_ms": 2000,
           "ingest_per_s": 500_000}


def scenario(segments: int, name: str) -> dict:
    return {
        "name": name,
        "platform": {"clusters": [{"name": "big", "processors": 128, "scheduler": {"name": "easy"}},
                                  {"name": "small", "processors": 64, "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{
            "kind": "synthetic", "name": "jobs", "target": "grid", "arrival": {"target_load": 0.85},
            "size": {"kind": "rsd", "low": 1, "high": 32, "q": 0.9},
            "runtime": {"kind": "exponential", "mean": 600},
            "estimate": {"kind": "factor", "factor": {"kind": "uniform", "low": 1, "high": 5}}}]},
        "run": {"seed": 3, "replications": 1, "stop": {"completions": max(100, int(segments / SEGMENTS_PER_COMPLETION))}},
    }


#: a run of a few seconds that keeps the site's one in-process worker busy while the page of the
#: measured run (queued behind it) opens and connects: the page then watches that run from its start
BLOCKER = {
    "name": "keeps the worker busy",
    "platform": {"clusters": [
        {"name": "east", "processors": 64, "scheduler": {"name": "easy"},
         "preemption": {"name": "suspend", "params": {"overhead": 60}}},
        {"name": "west", "processors": 64, "scheduler": {"name": "easy"},
         "preemption": {"name": "suspend", "params": {"overhead": 60}}}]},
    "workload": {"streams": [
        {"kind": "synthetic", "name": "batch", "target": "grid", "priority": 0, "arrival": {"target_load": 0.7},
         "size": {"kind": "uniform", "low": 1, "high": 16, "integer": True},
         "runtime": {"kind": "exponential", "mean": 1800}},
        {"kind": "synthetic", "name": "interactive", "target": "grid", "priority": 10,
         "arrival": {"mean_interarrival": 600},
         "size": {"kind": "uniform", "low": 4, "high": 24, "integer": True},
         "runtime": {"kind": "exponential", "mean": 300}}]},
    "run": {"seed": 1, "replications": 1, "stop": {"completions": 30_000}},
}


def live_scenario(segments: int, name: str, replication_seconds: float) -> dict:
    """The same run, with enough replications after replication 0 (whose Gantt streams first) to
    go on for about ten more seconds: the run is still going when a page opens on it once
    replication 0 is done, and while the page takes the stream in."""
    spec = scenario(segments, name)
    spec["run"]["replications"] = int(min(60, max(3, 1 + math.ceil(10 / max(replication_seconds, 0.05)))))
    return spec


def watch_final_chunk(site: "Site", run: int, found: dict) -> threading.Thread:
    """Polls the site's database (every 10 ms) for the moment replication 0's last segments are
    stored -- GridWeb: its chunk marked final; the peer: the progress chunk that follows them --
    and puts that wall-clock time in ``found["at"]`` (the engine's last segment, as the site has it)."""
    import sqlite3

    def watch() -> None:
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline and "at" not in found:
            try:
                with sqlite3.connect(site.folder / "db.sqlite3", timeout=1) as db:
                    rows = db.execute("SELECT kind, payload FROM runs_runchunk WHERE run_id = ? AND (kind = 'progress'"
                                      " OR json_extract(payload, '$.final') = 1)", [run]).fetchall()
            except sqlite3.Error:
                rows = []
            for kind, payload in rows:
                if kind == "segments" or json.loads(payload).get("fraction", 0) > 0:
                    found["at"] = time.time()
                    return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Site:
    """An embedded-mode GridWeb (this checkout or the peer's worktree) in a temporary folder."""

    def __init__(self, name: str, code: Path, tmp: Path):
        self.name, self.code = name, code
        #: the live Gantt's page (tiles, binary frames): measured as GridWeb is; else the old page
        self.live_gantt = (code / "gridweb" / "runs" / "gantt_tiles.py").exists()
        self.folder = tmp / name
        self.folder.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if k not in MODE_VARIABLES}
        self.env.update(DJANGO_SETTINGS_MODULE="gridweb.settings", GRIDWEB_DATA_DIR=str(self.folder / "data"),
                        DATABASE_URL=f"sqlite:///{self.folder / 'db.sqlite3'}", GRIDWEB_EMBEDDED_WORKER_AUTOSTART="1",
                        PYTHONPATH=str(code))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = None

    def python(self, code: str, timeout: float = 1800):
        """Run ``code`` with Django set up for this site; it prints one JSON document last."""
        result = subprocess.run([sys.executable, "-c", "import django; django.setup()\n" + code], cwd=self.code,
                                env=self.env, capture_output=True, text=True, timeout=timeout)
        if result.returncode:
            raise RuntimeError(f"{self.name}: {result.stderr[-3000:]}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def start(self) -> None:
        self.python("from django.core.management import call_command\n"
                    "call_command('migrate', verbosity=0, interactive=False)\n"
                    "from django.contrib.auth.models import User\n"
                    "from rest_framework.authtoken.models import Token\n"
                    "u, _ = User.objects.get_or_create(username='bench')\n"
                    "print(__import__('json').dumps(Token.objects.get_or_create(user=u)[0].key))\n")
        self.token = self.python("from rest_framework.authtoken.models import Token\n"
                                 "print(__import__('json').dumps(Token.objects.get().key))\n")
        log_file = open(self.folder / "server.log", "w")  # noqa: SIM115 - closed with the process
        self.server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}",
                                        "--noreload"], cwd=self.code, env=self.env, stdout=log_file,
                                       stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=5):
                    return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"{self.name}: the server did not start:\n{(self.folder / 'server.log').read_text()}")

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(20)
            except subprocess.TimeoutExpired:
                self.server.kill()

    def finished_run(self, spec: dict) -> dict:
        return self.python(
            "import json\nfrom django.contrib.auth.models import User\n"
            "from gridweb.runs.services import create_run\nfrom gridweb.runs.execution import execute_run\n"
            "from gridweb.runs.models import Run\n"
            f"run = create_run(User.objects.get(username='bench'), json.loads({json.dumps(spec)!r}),"
            " visibility='public', dispatch_now=False)\n"
            "outcome = execute_run(run.pk)\nrun = Run.objects.get(pk=run.pk)\n"
            "print(json.dumps({'id': run.pk, 'outcome': outcome, 'segments': run.segments_count,"
            " 'last_seq': run.last_seq, 'engine_seconds': run.summary.get('engine_seconds'), 'error': run.error}))\n")

    def start_run(self, spec: dict) -> int:
        request = urllib.request.Request(f"{self.url}/api/runs/", data=json.dumps(
            {"spec": spec, "visibility": "public"}).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Token {self.token}"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())["id"]

    def final_chunk_stored(self, run: int) -> float | None:
        """When the site stored the run's last segments chunk (epoch seconds; None: not recorded)."""
        return self.python(
            "import json\nfrom gridweb.runs.models import RunChunk\n"
            f"c = RunChunk.objects.filter(run_id={run}, kind='segments').order_by('-seq').first()\n"
            "print(json.dumps(c.created.timestamp() if c is not None and getattr(c, 'created', None) else None))\n")

    def run_state(self, run: int) -> dict:
        return self.python(
            "import json\nfrom gridweb.runs.models import Run\n"
            f"run = Run.objects.get(pk={run})\n"
            "print(json.dumps({'status': run.status, 'segments': run.segments_count, 'last_seq': run.last_seq,"
            " 'started': run.started_at.timestamp() if run.started_at else None, 'progress': run.progress,"
            " 'engine_seconds': (run.summary or {}).get('engine_seconds'), 'error': run.error}))\n")


# --- In the page --------------------------------------------------------------------------------------

PAINTED = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now()))))"
# Zoom and pan for a while, the x range changed at every animation frame; the frame intervals.
INTERACT = """async (seconds) => {
  const g = window.gridwebGantt;
  const [a0, b0] = g.xRange();
  const span0 = b0 - a0;
  const frames = [];
  let last = null;
  const start = performance.now();
  await new Promise((done) => {
    const step = (now) => {
      if (last !== null) frames.push(now - last);
      last = now;
      const k = (now - start) / 1000;
      if (k > seconds) return done();
      const zoom = 0.02 + 0.98 * (0.5 + 0.5 * Math.cos(k * 1.3));  // from the whole run to a 50th of it
      const span = span0 * zoom;
      const centre = a0 + span0 * (0.5 + 0.4 * Math.sin(k * 0.9));
      g.zoomTo(centre - span / 2, centre + span / 2);
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
  return frames;
}"""
SETTLED = """() => {
  const plots = document.getElementById("plots");
  const table = document.getElementById("jobs-table");
  return (!plots || plots.dataset.ready === "true") && (!table || table.dataset.ready === "true");
}"""
# Records (in sessionStorage, which survives the page's reload when the run ends) the wall-clock
# time of the first segment and of the complete view.
WATCH_LIVE = """(args) => {
  const [total, gridweb] = args;
  const store = (k, v) => { if (!sessionStorage.getItem(k)) sessionStorage.setItem(k, String(v)); };
  const check = () => {
    const g = window.gridwebGantt;
    if (g && g.segmentsCount && g.segmentsCount() > 0) {
      store("bench-first", Date.now());
      store("bench-streamed", String(!g.finished()));  // the page took the stream in, not a finished run
    }
    let complete = false;
    if (g && g.segmentsCount && g.segmentsCount() >= total) {
      if (!gridweb) complete = true;
      else {
        // every segment in the view, as final: the stream's last chunk came and the rows held (or
        // the tile drawn, read from that chunk on) hold them all; or the stored result's tile
        const t = g.tile();
        const last = g.finalSeq();
        complete = (last !== null && (g.heldCount() >= total
                                      || (t !== null && t.count >= total && g.mode() === "raster" && t.seq >= last)))
          || (t !== null && t.count >= total && t.seq === -1);
      }
    }
    if (complete) { store("bench-complete", Date.now()); return; }
    requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
}"""


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    if not values:
        return float("nan")
    k = (len(values) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def measure_open(browser, site: Site, run: int, gridweb: bool, timeout: float) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    try:
        page.goto(f"{site.url}/runs/{run}/", timeout=timeout * 1000)
        ready = ("() => window.gridwebGantt && gridwebGantt.ready && gridwebGantt.tile && gridwebGantt.tile() !== null"
                 if gridweb else "() => window.gridwebGantt && gridwebGantt.ready")
        page.wait_for_function(ready, timeout=timeout * 1000, polling="raf")
        open_ms = page.evaluate(PAINTED)
        # the page's one-time loading after the chart (plots, the jobs table) is over before the
        # chart is zoomed and panned: frame times are the chart's, on both sites
        try:
            page.wait_for_function(SETTLED, timeout=20_000, polling=200)
        except Exception:  # noqa: BLE001 - a page without plots or table: go on
            pass
        page.wait_for_timeout(1000)
        frames = page.evaluate(INTERACT, 4)
        page.wait_for_timeout(500)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        return {"open_ms": open_ms, "frame_median_ms": statistics.median(frames),
                "frame_p95_ms": percentile(frames, 95), "frames": len(frames),
                "heap_mb": metrics.get("JSHeapUsedSize", float("nan")) / 2**20}
    except Exception as exc:  # noqa: BLE001 - a peer that cannot cope is a result, not a crash
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
    finally:
        context.close()


def safe_eval(page, expression: str, tries: int = 40):
    """``page.evaluate`` that waits out a reload of the page."""
    for _ in range(tries):
        try:
            return page.evaluate(expression)
        except Exception:  # noqa: BLE001 - the page is navigating
            time.sleep(0.25)
    return page.evaluate(expression)


def watch_page(browser, site: Site, run: int, total: int, gridweb: bool):
    """A page on the run that records (in sessionStorage, which survives the page's reload when the
    run ends) the wall-clock times of its first segment and of its complete view."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.add_init_script(f"window.addEventListener('load', () => ({WATCH_LIVE})({json.dumps([total, gridweb])}))")
    page.goto(f"{site.url}/runs/{run}/")
    return context, page


def wait_complete(page, timeout: float) -> tuple[float | None, float | None]:
    deadline = time.monotonic() + timeout
    complete = None
    while time.monotonic() < deadline:
        complete = safe_eval(page, "sessionStorage.getItem('bench-complete')")
        if complete is not None:
            break
        time.sleep(0.25)
    first = safe_eval(page, "sessionStorage.getItem('bench-first')")
    return (None if first is None else float(first)), (None if complete is None else float(complete))


def measure_live(browser, site: Site, size: int, total: int, gridweb: bool, timeout: float,
                 replication_seconds: float) -> dict:
    """Latency: a page open on a one-replication run before it starts (queued behind BLOCKER; the
    engine's end is then the end of replication 0). Ingestion: a page opened on a
    three-replication run of the same replication 0 once that replication's segments are stored."""
    out: dict = {}
    contexts = []
    try:
        site.start_run(BLOCKER)
        run = site.start_run(scenario(size, f"gantt scale {size} live"))
        final = {}
        if not gridweb:
            watch_final_chunk(site, run, final)
        context, page = watch_page(browser, site, run, total, gridweb)
        contexts.append(context)
        first, complete = wait_complete(page, timeout)
        state = site.run_state(run)
        while state["status"] in ("queued", "running"):
            time.sleep(1)
            state = site.run_state(run)
        if gridweb:
            stored = site.final_chunk_stored(run)
            if stored is not None:
                final["at"] = stored
        if complete is None:
            held = safe_eval(page, "window.gridwebGantt ? gridwebGantt.segmentsCount() : 0")
            out["live_ms_error"] = f"incomplete after {timeout:.0f} s ({held:,} of {total:,} segments in the view)"
        elif "at" not in final:
            out["live_ms_error"] = "the run's last segments were never seen stored"
        else:
            out["live_ms"] = complete - final["at"] * 1000
            out["first_after_start_ms"] = first - state["started"] * 1000  # small: the page watched from the start

        run = site.start_run(live_scenario(size, f"gantt scale {size} replay", replication_seconds))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = site.run_state(run)
            if state["progress"] >= 1 / 3 - 1e-9 or state["status"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        context, page = watch_page(browser, site, run, total, gridweb)
        contexts.append(context)
        first, complete = wait_complete(page, timeout)
        streamed = safe_eval(page, "sessionStorage.getItem('bench-streamed')")
        if streamed != "true":
            out["ingest_per_s_error"] = "the run ended before the page took the stream in (lengthen it)"
        elif complete is None:
            held = safe_eval(page, "window.gridwebGantt ? gridwebGantt.segmentsCount() : 0")
            out["ingest_per_s_error"] = f"incomplete after {timeout:.0f} s ({held:,} of {total:,} segments)"
        else:
            out["ingest_per_s"] = total / max((complete - first) / 1000, 1e-3)
        state = site.run_state(run)
        while state["status"] in ("queued", "running"):
            time.sleep(1)
            state = site.run_state(run)
        return out
    finally:
        for context in contexts:
            context.close()


def fmt(value, unit: str) -> str:
    if value is None or value != value:
        return "—"
    if unit == "ms":
        return f"{value:,.0f} ms" if value < 10_000 else f"{value / 1000:,.1f} s"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "/s":
        return f"{value:,.0f}/s"
    return str(value)


ROWS = (("open_ms", "finished run: full overview drawn", "ms", "<"),
        ("frame_median_ms", "zoom/pan frame time, median", "ms", "<"),
        ("frame_p95_ms", "zoom/pan frame time, 95th percentile", "ms", "<"),
        ("heap_mb", "JavaScript heap", "MB", "<"),
        ("live_ms", "live run: view complete after the engine's last segment", "ms", "<"),
        ("ingest_per_s", "live run: ingestion into the page", "/s", ">"))


def markdown(results: dict) -> str:
    old_page = results.get("peer_page", "old page") == "old page"
    out = [f"Run of {results['date']}, commit {results['commit']} against the peer {results['peer']} "
           f"({'the page before the live Gantt' if old_page else 'an earlier live Gantt'}), "
           f"Chromium {results['chromium']}, {results['cpus']} cores; "
           f"load average {results['load'][0]:.2f} before and {results['load'][1]:.2f} after."]
    for line in results.get("merged", []):
        out.append(f"Measured again and put in: {line}.")
    out.append("")
    out += [f"| segments | measure | GridWeb | peer ({'old page' if old_page else results['peer']}) | target | status |",
            "|---|---|---|---|---|---|"]
    for size in results["sizes"]:
        g, p = size["gridweb"], size.get("peer") or {}
        for key, label, unit, sense in ROWS:
            gv, pv = g.get(key), p.get(key)
            target = TARGETS[key]
            ok = gv is not None and (gv < target if sense == "<" else gv >= target)
            peer_text = fmt(pv, unit) if pv is not None else (p.get(f"{key}_error") or p.get("error")
                                                             or "not run")
            gw_text = fmt(gv, unit) if gv is not None else (g.get(f"{key}_error") or g.get("error") or "—")
            out.append(f"| {size['segments']:,} | {label} | {gw_text} | {peer_text} | "
                       f"{sense} {fmt(target, unit)} | {'PASS' if ok else 'MISS'} |")
    loads = [f"{size['segments']:,}: " + ", ".join(f"{name} {size[name]['load']:.2f}" for name in ("gridweb", "peer")
                                                     if "load" in (size.get(name) or {}))
             for size in results["sizes"]]
    out += ["", "Load average (1 min) as each site's measurements began (each site runs only while it is "
            "measured): " + "; ".join(loads) + "."]
    return "\n".join(out) + "\n"


def update_docs(text: str) -> None:
    begin, end = "<!-- gantt_scale:begin -->", "<!-- gantt_scale:end -->"
    doc = DOCS.read_text()
    if begin in doc:
        head, rest = doc.split(begin, 1)
        doc = head + begin + "\n" + text + end + rest.split(end, 1)[1]
    else:
        doc += f"\n## Web: Gantt at scale\n\nMeasured by `benchmarks/gantt_scale.py`.\n\n{begin}\n{text}{end}\n"
    DOCS.write_text(doc)


def measure_site(browser, site: Site, spec: dict, size: int, entry: dict, args) -> dict:
    """Every measure of one size on one (started) site; a site that cannot cope is a result."""
    gridweb = site.live_gantt  # (a peer with the live Gantt is measured as this checkout is)
    timeout = args.timeout if site.name == "gridweb" else args.peer_timeout
    log(f"{site.name}: {size:,} segments: simulating and storing the finished run")
    try:
        done = site.finished_run(spec)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:160]}"}
    if done["outcome"] != "done":
        return {"error": f"the run {done['outcome']}: {done['error'][:200]}"}
    entry["segments"] = done["segments"]
    log(f"{site.name}: {done['segments']:,} segments, engine {done['engine_seconds']:.1f} s; opening it")
    measured = {"load": os.getloadavg()[0]}
    measured.update(measure_open(browser, site, done["id"], gridweb, timeout))
    log(f"{site.name}: open {measured}")
    try:
        live = measure_live(browser, site, size, done["segments"], gridweb, timeout, done["engine_seconds"])
    except Exception as exc:  # noqa: BLE001 - a site that cannot cope is a result
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1][:160]}"
        live = {"live_ms_error": reason, "ingest_per_s_error": reason}
    log(f"{site.name}: live {live}")
    measured.update(live)
    return measured


def merge(old: dict, new: dict) -> dict:
    """``old`` results with the sites and sizes measured in ``new`` replaced (a size is matched by the
    size asked for, or by a segment count within 5% of it)."""
    for entry in new["sizes"]:
        size = entry["size"]
        same = [e for e in old["sizes"] if e.get("size", e["segments"]) == size
                or abs(e["segments"] - size) <= 0.05 * size]
        if not same:
            old["sizes"].append(entry)
            continue
        for site in ("gridweb", "peer"):
            if site in entry:
                same[0][site] = entry[site]
        same[0]["segments"] = entry["segments"]
    old["sizes"].sort(key=lambda e: e["segments"])
    old.setdefault("merged", []).append(f"{new['date']} at {new['commit']}: "
                                        + ", ".join(f"{e['segments']:,} ({'/'.join(k for k in ('gridweb', 'peer') if k in e)})"
                                                    for e in new["sizes"]))
    return old


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000")
    parser.add_argument("--extra", default="485646", help="sizes measured too (the issue's 485,646-segment run)")
    parser.add_argument("--peer", default=DEFAULT_PEER)
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument("--peer-timeout", type=float, default=240)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--update-docs", action="store_true")
    parser.add_argument("--merge", action="store_true",
                        help="measure only --sizes (and only GridWeb with --no-peer) and put the numbers into the "
                             "last results (benchmarks/results/gantt_scale.json), each marked with when and at "
                             "which commit it was measured")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",") if s] + [int(s) for s in args.extra.split(",") if s]
    sizes = sorted(set(sizes))

    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="gantt-scale-"))
    sites = [Site("gridweb", ROOT, tmp)]
    peer_code = ExitStack()  # (the peer's worktree, removed at the end)
    if not args.no_peer:
        sites.append(Site("peer", peer_code.enter_context(checkout(args.peer, tmp / "peer-code")), tmp))
    results = {"date": time.strftime("%Y-%m-%d %H:%M"), "peer": args.peer, "cpus": os.cpu_count(),
               "peer_page": "live Gantt" if len(sites) > 1 and sites[1].live_gantt else "old page",
               "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip(),
               "load": [os.getloadavg()[0]], "sizes": []}
    merged_into = json.loads(RESULTS.read_text()) if args.merge and RESULTS.exists() else None
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                                 args=CHROMIUM_ARGS)
            results["chromium"] = browser.version
            for size in sizes:
                entry = {"segments": size, "size": size}
                spec = scenario(size, f"gantt scale {size}")
                for site in sites:
                    # each site runs only while it is measured: what a site that could not keep up
                    # left running (a peer's unfinished stream) must not load the other's numbers
                    site.start()
                    try:
                        entry[site.name] = measure_site(browser, site, spec, size, entry, args)
                        entry[site.name]["measured"] = f"{time.strftime('%H:%M')} at {results['commit']}"
                    finally:
                        site.stop()
                results["sizes"].append(entry)
            browser.close()
    finally:
        for site in sites:
            site.stop()
        peer_code.close()
        shutil.rmtree(tmp, ignore_errors=True)
    results["load"].append(os.getloadavg()[0])
    if merged_into is not None:
        results = merge(merged_into, results)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    text = markdown(results)
    print(text)
    if args.update_docs:
        update_docs(text)


if __name__ == "__main__":
    main()
