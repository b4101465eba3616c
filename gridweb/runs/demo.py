"""Demo data: the real workload traces shipped in ``gridweb/demo/`` replayed as curated runs,
and curated runs of the reproduction recipes (docs/reproductions.md).

``load_demo()`` (the ``gridweb_demo`` command) is idempotent: it creates the ``gridweb-demo``
user, stores each shipped trace as a public ``TraceFile`` (through the upload path,
``gridweb.scenarios.traces.store_trace``, which checks it with the engine's reader and finds a
trace it stored before by its sha256), and creates one public curated run per demo that does
not exist yet (found again by its name):

* each trace replayed with EASY backfilling on a cluster of the trace's own size (its
  ``MaxProcs``, as in ``examples/das2-replay.yaml`` and docs/traces.md);
* the reproduction recipes (:data:`RECIPES`), each a modest run of one setting of a paper's
  experiments — Zikos & Karatza's Random and SB-Deferred site allocation at high load;
  Ballier et al.'s co-allocation with start deadlines under Wait-10 and under pure RPP; KOALA's
  Close-to-Files placement with incremental claiming in the W30 experiment of Mohamed's thesis
  (the setting of ``examples/koala-w30.yaml``). Each description names the paper, the figure or
  claim the run illustrates and the ``python -m simengine reproduce NAME`` command that runs the
  full reproduction;
* the feature showcases (:data:`SHOWCASES`): advance reservations with preemption and priorities
  (:func:`reservations_demo_spec`); Cao's SCOJO-PECT clusters with RARS-HEFT workflows
  (:func:`cao_demo_spec`).

Provenance of the traces: ``gridweb/demo/PROVENANCE.txt``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.db import transaction

from gridweb.scenarios.traces import store_trace
from gridweb.sharing import Visibility
from simengine import presets
from simengine.reproductions import koala as koala_recipe

from .execution import dispatch, execute_run
from .models import FINISHED, Run, Status
from .services import create_run

DEMO_USER = "gridweb-demo"
DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"
PROVENANCE = (DEMO_DIR / "PROVENANCE.txt").read_text() if (DEMO_DIR / "PROVENANCE.txt").exists() else ""


@dataclass(frozen=True)
class DemoTrace:
    """A shipped trace and the machine it was recorded on."""

    file: str
    cluster: str
    processors: int  # the trace's MaxProcs header
    title: str
    about: str
    tags: tuple[str, ...] = field(default=())


TRACES = (
    DemoTrace("DAS2-fs1-2003-1.swf.gz", "fs1", 64, "DAS-2 fs1 (Leiden) 2003, EASY",
              "The DAS-2 fs1 cluster at Leiden in 2003 (32 dual-CPU nodes = 64 processors, about 40,000 jobs), "
              "replayed as recorded (real runtimes, walltimes not enforced) under EASY backfilling.",
              ("das2",)),
    DemoTrace("NASA-iPSC-1993-3.1-cln.swf.gz", "ipsc", 128, "NASA Ames iPSC/860 1993, EASY",
              "The 128-node Intel iPSC/860 at NASA Ames in 1993 (18,239 jobs of the cleaned log), replayed "
              "under EASY backfilling. The log has no requested times: EASY plans with the real runtimes.",
              ("nasa",)),
    DemoTrace("HPC2N-2002-2.2-cln.first3171.swf.gz", "seth", 240, "HPC2N Seth 2002 (first 3,170 jobs), EASY",
              "The first 3,170 jobs of the HPC2N Seth Linux cluster (120 dual nodes = 240 processors) "
              "replayed under EASY backfilling.",
              ("hpc2n",)),
    DemoTrace("LCG-2005-1.swf.gz", "lcg", 24515, "LCG grid 2005 (188,041 jobs), EASY",
              "The LHC Computing Grid log of 2005: 188,041 one-processor jobs over 170 sites, replayed on one "
              "pool of its 24,515 processors under EASY — a large run: zoomed out, the Gantt shows utilisation.",
              ("lcg", "large")),
)


def trace_spec(trace: DemoTrace, stored_name: str) -> dict[str, Any]:
    """The scenario replaying ``trace`` (stored as ``stored_name``) under EASY on its own machine."""
    return {
        "name": trace.title,
        "description": trace.about,
        "platform": {"clusters": [{"name": trace.cluster, "processors": trace.processors,
                                   "scheduler": {"name": "easy"}}]},
        "workload": {"streams": [{"kind": "trace", "name": trace.cluster, "path": stored_name, "format": "swf",
                                  "target": trace.cluster}]},
        "run": {"seed": 1, "enforce_walltime": False},
    }


def zikos_spec() -> dict[str, Any]:
    return copy.deepcopy(presets.SCENARIOS["grid-4site-zikos"])


# --- Reproduction recipes ---------------------------------------------------------------------------

ZIKOS_PAPER = ("Zikos & Karatza, site allocation of jobs with highly variable service demands (PMEO 2010; "
               "MODELS.md §5)")
ZIKOS_SETTING = ("4 LWR sites of 8, 16, 24 and 32 processors; one-processor jobs with bounded-Pareto demands "
                 "(alpha 1.5, H 100, mean 1); 1/lambda = 0.014, about 90% load. ")
ZIKOS_SIZE = ("This run: 5 replications of 80,000 completions (the first 5,000 are warm-up), seed 1 — the same "
              "arrivals and demands for both policies. The full reproduction (28 configurations, 100 "
              "replications each, figures 3-12 and the stated outcomes with PASS/FAIL) is "
              "python -m simengine reproduce zikos (docs/reproductions.md).")
BALLIER_PAPER = ("Ballier, Caron, Epema & Mohamed, Simulating Grid Schedulers with Deadlines and Co-Allocation "
                 "(INRIA RR-5815, 2006; MODELS.md §3)")
BALLIER_SETTING = ("4 FCFS clusters of 32 processors, each with local jobs (RSD(1,32,0.9) processors, "
                   "exponential runtimes of mean 100 s, local load 30%); global co-allocated jobs of 2-4 "
                   "components of RSD(4,32,0.9) processors, runtime mean 200 s, global load 20%, a start "
                   "deadline uniform on [1, 3599] s after submission; Worst-Fit placement, RPP with L_p 0.7 "
                   "and M_p 10 tries, GP (local jobs are killed at the deadline to make room). ")
BALLIER_SIZE = ("This run: 5 replications of 200,000 s (the first 10,000 s warm-up) — a tenth of the paper's "
                "run length. The full reproduction (194 configurations, Figures 1-9 and the stated outcomes with "
                "PASS/FAIL) is python -m simengine reproduce ballier (docs/reproductions.md).")
KOALA_THESIS = ("Mohamed, The Design and Implementation of the KOALA Grid Resource Management System (PhD "
                "thesis, TU Delft, 2007; MODELS.md §4), §5.1, the W30 experiment")
KOALA_SETTING = ("DAS-2 as at the start of the experiments (144, 56, 56, 64 and 64 processors); 200 KOALA jobs "
                 "of 1, 2 or 4 components of 8 or 16 processors (runtime 192 s or 90 s) at 30% of the system, "
                 "each with one input file of 2, 4 or 6 GB at one random site (the five clusters; wide-area "
                 "bandwidths of 50-125 MB/s, our decision as the thesis gives none); background jobs keep every "
                 "cluster 30-40% busy. Close-to-Files (CF) placement, incremental claiming with L 0.75, all or "
                 "nothing (T 1), a scan every 60 s. ")
KOALA_GANTT = ("The Gantt shows, per KOALA component, the input file's transfer (transfer segments: the "
               "processors are not held yet, local jobs may use them), then the processors claimed but idle "
               "until the job start time (claimed segments: the processor wasted time, PWT), then the run; "
               "around them the background jobs of the band controller. ")
KOALA_SIZE = ("This run: 5 replications of the W30 workload with CF (the Gantt shows the first), as "
              "examples/koala-w30.yaml. The full reproduction (CF and Worst-Fit, with and without replicated "
              "files, 20 replications, figures 5.1-5.4 and 5.8 and the stated outcomes with PASS/FAIL) is "
              "python -m simengine reproduce koala-w30 (docs/reproductions.md).")


@dataclass(frozen=True)
class Recipe:
    """A curated run of one setting of a reproduction (the run is found again by ``name``)."""

    name: str
    build: Callable[[], dict[str, Any]]  # the scenario document
    description: str
    tags: tuple[str, ...]


def zikos_recipe_spec(policy: str) -> dict[str, Any]:
    """The Zikos preset (Random, high load, alpha 1.5) with ``policy`` as the site allocation
    (SB-Deferred with SDT 4 and A_I 1, as the reproduction's figures 7-12) and 5 replications."""
    spec = zikos_spec()
    if policy == "sb_deferred":
        spec["grid"] = {"site_allocation": {"name": "sb_deferred", "params": {"allocation_interval": 1.0, "sdt": 4}}}
    spec["run"]["replications"] = 5
    return spec


def ballier_recipe_spec(wait_x: float | None) -> dict[str, Any]:
    """The Ballier preset (``multicluster-4x32``: Wait-10, GP) with Wait-``wait_x`` (None = pure
    RPP, Wait-infinity) and 5 replications of its 200,000 s."""
    spec = presets.scenario("multicluster-4x32")
    spec["grid"]["deadline_policy"]["params"]["wait_x"] = wait_x
    spec["run"]["replications"] = 5
    return spec


def koala_recipe_spec() -> dict[str, Any]:
    """The reproduction's W30 scenario with Close-to-Files and one file replica (the setting of
    ``examples/koala-w30.yaml``), 5 replications: a run takes well under a second."""
    spec = koala_recipe.scenario(0.3, "close-to-files", 1)
    spec["run"]["replications"] = 5
    return spec


RECIPES = (
    Recipe("Zikos & Karatza: Random site allocation, high load", lambda: zikos_recipe_spec("random"),
           f"{ZIKOS_PAPER}. {ZIKOS_SETTING}Random sends each job to site k with probability c_k/80. Compare it "
           "with the SB-Deferred run: the paper's claim that SB-Deferred gives the lowest mean response time "
           f"and slowdown at high load (figures 10-12, alpha 1.5). {ZIKOS_SIZE}",
           ("demo", "reproduction", "zikos", "lwr")),
    Recipe("Zikos & Karatza: SB-Deferred site allocation (SDT 4), high load",
           lambda: zikos_recipe_spec("sb_deferred"),
           f"{ZIKOS_PAPER}. {ZIKOS_SETTING}SB-Deferred: a job whose demand exceeds SDT = 4 waits at the grid "
           "scheduler and is dispatched every A_I = 1 to the least-loaded site; smaller jobs go to a random "
           "site. It illustrates the paper's claim that SB-Deferred beats Random (and Deferred) at high load: "
           f"lower mean response time and slowdown than the Random run (figures 10-12, alpha 1.5). {ZIKOS_SIZE}",
           ("demo", "reproduction", "zikos", "lwr", "sb_deferred")),
    Recipe("Ballier et al.: co-allocation with start deadlines, Wait-10, GP", lambda: ballier_recipe_spec(10),
           f"{BALLIER_PAPER}. {BALLIER_SETTING}Wait-10 ignores a global job until 10 s before its deadline. "
           "It illustrates Figures 4 and 5: Wait-10 succeeds more often than pure RPP (compare the Wait-infinity "
           "run: about 92% against 86% of global jobs start at their deadline in the full reproduction) and "
           f"does not waste processors on early claims. {BALLIER_SIZE}",
           ("demo", "reproduction", "ballier", "coallocation")),
    Recipe("Ballier et al.: co-allocation with start deadlines, pure RPP (Wait-infinity), GP",
           lambda: ballier_recipe_spec(None),
           f"{BALLIER_PAPER}. {BALLIER_SETTING}Pure RPP (Wait-infinity) starts trying at once and claims "
           "processors long before the deadline. It illustrates the paper's conclusion that considering jobs "
           "too early wastes processor time (claimed but idle processors: the 'claimed' segments of the Gantt) "
           f"and Figure 5's lower success rate than Wait-10 (compare the Wait-10 run). {BALLIER_SIZE}",
           ("demo", "reproduction", "ballier", "coallocation")),
    Recipe("KOALA W30: Close-to-Files placement and incremental claiming", koala_recipe_spec,
           f"{KOALA_THESIS}. {KOALA_SETTING}{KOALA_GANTT}It illustrates Figure 5.1's claims for W30: KOALA's "
           "load about 30%, claimed-but-idle processors (PWT) about 2% of the system, about one claiming try "
           f"per job. {KOALA_SIZE}",
           ("demo", "reproduction", "koala", "coallocation", "close-to-files")),
)


# --- Feature demos (not reproductions: they show what the engine models) ------------------------------

RESERVATIONS_DEMO = "Advance reservations and preemption"
RESERVATIONS_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reservations-preemption.yaml"
RESERVATIONS_GANTT = (
    "On the Gantt (colour by kind) the accepted reservation windows are the 'reservation' segments (hover: "
    "the reservation's name), the 'suspended' segments are the gaps of batch jobs preempted by interactive "
    "ones, and the runs fill in around them; the rejected reservation has no window and counts as a "
    "rejected job. Metrics: reservations accepted and rejected, preemptions. This run: "
    "examples/reservations-preemption.yaml as it is (python -m simengine run "
    "examples/reservations-preemption.yaml --out DIR); the model: docs/reservations.md.")


def reservations_demo_spec() -> dict[str, Any]:
    """The curated run :data:`RESERVATIONS_DEMO`: ``examples/reservations-preemption.yaml``
    (two clusters, a rigid, a relaxed and a rejected reservation, two priorities, suspend/resume
    with a 60 s overhead; well under a second of simulation) under the demo's name."""
    spec = yaml.safe_load(RESERVATIONS_EXAMPLE.read_text())
    about = " ".join(str(spec.get("description", "")).split())
    spec["name"] = RESERVATIONS_DEMO
    spec["description"] = f"{about} {RESERVATIONS_GANTT}".strip()
    return spec


CAO_DEMO = "Cao: SCOJO-PECT clusters and RARS-HEFT workflows"
CAO_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cao-scojo-rars.yaml"
CAO_GANTT = (
    "On the Gantt (colour by kind) the 'run' pieces of each job are cut at its class's slice ends, with "
    "'suspended' gaps on the processors it keeps until its class's next slice (60 s overhead per resume); "
    "each workflow task shows its relaxed reservation frame [EST, LFT] as a 'reservation' segment on the "
    "processors it ran on (component = task 0-4). Metrics: Cao's RR per class for local jobs and tasks "
    "(rr_medium_local, rr_long_task, ...), grid_makespan, reservation_share, preemptions. This run: "
    "examples/cao-scojo-rars.yaml as it is (python -m simengine run examples/cao-scojo-rars.yaml --out DIR); "
    "the model: docs/cao.md; the reproduction: python -m simengine reproduce cao.")


def cao_demo_spec() -> dict[str, Any]:
    """The curated run :data:`CAO_DEMO`: ``examples/cao-scojo-rars.yaml`` (4 x 128 SCOJO-PECT
    clusters, one Lublin stream each, 40 % of the eligible jobs as RARS-HEFT workflows; well
    under a second of simulation) under the demo's name."""
    spec = yaml.safe_load(CAO_EXAMPLE.read_text())
    about = " ".join(str(spec.get("description", "")).split())
    spec["name"] = CAO_DEMO
    spec["description"] = f"{about} {CAO_GANTT}".strip()
    return spec


#: Curated runs that show a feature of the engine: (build the document, tags).
SHOWCASES: tuple[tuple[Callable[[], dict[str, Any]], tuple[str, ...]], ...] = (
    (reservations_demo_spec, ("demo", "reservations", "preemption", "priority", "easy", "conservative")),
    (cao_demo_spec, ("demo", "cao", "scojo-pect", "rars-heft", "workflows", "reservations", "preemption",
                     "lublin")),
)


def demo_user():
    user, created = get_user_model().objects.get_or_create(username=DEMO_USER)
    if created:
        user.set_unusable_password()  # nobody logs in as the demo user
        user.save(update_fields=["password"])
    return user


def store_demo_trace(user, trace: DemoTrace):
    """The public TraceFile of a shipped trace (stored once; found again by its bytes)."""
    path = DEMO_DIR / trace.file
    with open(path, "rb") as handle:
        stored = store_trace(user, File(handle, name=trace.file), name=trace.file, visibility=Visibility.PUBLIC,
                             format="swf", description=f"{trace.about}\n\nProvenance:\n{PROVENANCE}".strip(),
                             tags=["demo", *trace.tags])
    if stored.visibility != Visibility.PUBLIC:
        stored.visibility = Visibility.PUBLIC
        stored.save(update_fields=["visibility", "updated"])
    return stored


@dataclass
class DemoOutcome:
    created: list[Run] = field(default_factory=list)
    existing: list[Run] = field(default_factory=list)
    executed: list[tuple[Run, str]] = field(default_factory=list)


def demo_specs(user) -> list[tuple[dict[str, Any], str, list[str]]]:
    """(scenario document, description, tags) of every demo run, storing the traces they replay.
    The run's name is the document's."""
    specs = []
    for trace in TRACES:
        stored = store_demo_trace(user, trace)
        specs.append((trace_spec(trace, stored.stored_name), trace.about, ["demo", "trace", "easy", *trace.tags]))
    for recipe in RECIPES:
        spec = recipe.build()
        spec["name"] = recipe.name
        specs.append((spec, recipe.description, list(recipe.tags)))
    for build, tags in SHOWCASES:
        spec = build()
        specs.append((spec, spec.get("description", ""), list(tags)))
    return specs


def load_demo(*, run_now: bool = False, reset: bool = False,
              say: Callable[[str], None] = lambda text: None) -> DemoOutcome:
    """Create what is missing of the demo data (see the module docstring).

    ``run_now`` executes queued demo runs here and now (``execution.execute_run``); otherwise
    they are dispatched — to Celery in full-stack mode; in embedded mode they stay queued for the
    server's embedded worker, which picks queued runs up when it starts (a worker thread of this
    short-lived command would die with it, half-way through a run). ``reset`` deletes the demo
    runs first, so they are simulated again.
    """
    user = demo_user()
    outcome = DemoOutcome()
    if reset:
        deleted, _ = Run.objects.filter(owner=user, curated=True).delete()
        say(f"deleted {deleted} demo objects")
    for spec, description, tags in demo_specs(user):
        run = Run.objects.filter(owner=user, curated=True, name=spec["name"]).order_by("pk").first()
        if run is None:
            with transaction.atomic():
                run = create_run(user, spec, name=spec["name"], description=description,
                                 visibility=Visibility.PUBLIC, tags=tags, curated=True, dispatch_now=False)
            outcome.created.append(run)
            say(f"created run #{run.pk}: {run.name}")
            if not run_now and not settings.GRIDWEB_EMBEDDED_WORKER:
                dispatch(run.pk)
        else:
            outcome.existing.append(run)
            say(f"run #{run.pk} exists ({run.status}): {run.name}")
            if run.spec != spec:
                say("  it was made from an older version of this demo; --reset simulates it again")
            elif (run.description, run.tags) != (description, tags):
                # Same scenario: only what the gallery says about it follows this file.
                run.description, run.tags = description, tags
                run.save(update_fields=["description", "tags", "updated"])
        if run_now and run.status == Status.QUEUED:
            result = execute_run(run.pk)
            run.refresh_from_db()
            outcome.executed.append((run, result))
            say(f"  executed run #{run.pk}: {result}" + (f" — {run.error}" if run.error else ""))
        elif run.status not in FINISHED and not run_now and settings.GRIDWEB_EMBEDDED_WORKER:
            say(f"  run #{run.pk} is {run.status}: the server's embedded worker runs it when it starts")
    return outcome
