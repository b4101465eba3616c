"""Policies written in plain Python (docs/write-a-policy.md): every decision of the seeds' models.

Each kind of policy is a base class (a :class:`PolicyKind`) that names its registry;
:func:`register` files a subclass there under its ``name``, so scenarios, the CLI (``python -m
simengine schedulers``), the API schema and the builder's forms (from its ``Params`` model) know it.
Here: local schedulers on the event API (:class:`EventScheduler`: callbacks and actions on the
cluster, run as the event core's scheduling pass, simengine.local.external) and in its simple form
(:class:`LocalScheduler`: ``schedule(now, queue, free, running)``), grid placement
(:class:`PlacementPolicy`) and static site allocation (:class:`SiteAllocationPolicy`). The model
packages declare the others (stateful site allocation, KOALA claiming, Cao's reservation admission,
the pybatsim shape); :data:`ELSEWHERE` makes them importable from here.

Installed packages register their policies through the ``simengine.policies`` entry point
group (:func:`load_entry_points`); nothing is ever uploaded through the web.
"""
from __future__ import annotations

import math
import warnings
from importlib.metadata import entry_points
from typing import Collection, Iterable, Sequence

import numpy as np
from pydantic import BaseModel

from simengine.policy_kind import PolicyKind, register
from simengine.policy_types import Job, PolicyError, policy_raised
from simengine.registry import GRID_PLACEMENT, LOCAL_SCHEDULERS, SITE_ALLOCATION
from simengine.schedulers.base import ClusterSchedule, ClusterSteps, check_inputs

__all__ = ["PolicyKind", "Job", "EventScheduler", "LocalScheduler", "GridJob", "Grid", "PlacementPolicy", "SiteAllocationPolicy", "PolicyError",
           "policy_raised", "register", "load_entry_points", "ENTRY_POINT_GROUP"]

#: the entry point group installed packages register their policies under
ENTRY_POINT_GROUP = "simengine.policies"


class EventScheduler(PolicyKind):
    """A local scheduler on the event API (docs/write-a-policy.md): subclass this, set ``name``
    (``Params``, ``summary``) and write :meth:`decide` -- and any of the ``on_*`` callbacks. The
    engine calls them at each instant something happened on the cluster, in this order: the
    callbacks of what happened, then ``decide(now)``. ``self.cluster``
    (simengine.local.external.Cluster) is what the policy sees -- ``queue``, ``running``,
    ``reservations``, ``free``, ``profile()``, ``victims()`` -- and how it acts: ``start(job,
    processors=None)``, ``reject``, ``kill``, ``requeue``, ``suspend``, ``wake_me_up_at(t)``. It
    runs with advance reservations, priorities and preemption. One instance schedules one cluster
    of one replication."""

    kind_registry = LOCAL_SCHEDULERS
    kind_methods = ("decide", "on_submit", "on_complete", "on_preempted", "on_reservation", "on_timer",
                    "on_cancelled")

    def __init__(self, params: BaseModel, cluster):
        self.params, self.cluster = params, cluster
        self.processors = cluster.processors

    @classmethod
    def create(cls, params: BaseModel, cluster) -> "EventScheduler":
        """The policy for one cluster of one replication (the engine calls this)."""
        return cls(params, cluster)

    @classmethod
    def implementation_of(cls, policy: type) -> object:
        return PythonScheduler(policy)

    @classmethod
    def capabilities_of(cls, policy: type) -> tuple[str, ...]:
        return ("event_driven", *policy.capabilities)

    def on_submit(self, now: float, jobs: list[Job]) -> None:
        """``jobs`` arrived (they are in ``cluster.queue``)."""

    def on_complete(self, now: float, jobs: list[Job]) -> None:
        """``jobs`` finished their work."""

    def on_cancelled(self, now: float, jobs: list[Job]) -> None:
        """The trace's users cancelled ``jobs`` (docs/traces.md, "Cancelled jobs"; status
        ``cancelled``): a waiting one left ``cluster.queue``, a running one was killed and its
        processors are free (``start`` says whether it ran)."""

    def on_preempted(self, now: float, jobs: list[Job]) -> None:
        """A reservation's window took the processors of ``jobs`` (their ``status`` says what became
        of them under the cluster's preemption mode: suspended, waiting again, or killed)."""

    def on_reservation(self, now: float, reservation, event: str) -> None:
        """An advance reservation was ``accepted``, ``rejected``, ``moved`` (a relaxed one slid
        earlier), ``started`` (its window opened) or ``ended``."""

    def on_timer(self, now: float) -> None:
        """A time asked for with ``cluster.wake_me_up_at`` came."""

    def decide(self, now: float) -> None:
        """Act on the cluster now (called after the callbacks, at every instant something happened)."""


class LocalScheduler(EventScheduler):
    """The simple form of the event API: subclass this, set ``name`` (and ``Params``, a pydantic
    model, when the policy takes parameters; ``summary`` for the listings) and write
    :meth:`schedule`, which the engine calls whenever something happened on the cluster and jobs
    wait and processors are free. One instance schedules one cluster of one replication: it may
    keep state between calls."""

    kind_registry = LOCAL_SCHEDULERS
    kind_methods = ("schedule",)

    def __init__(self, params: BaseModel, processors: int):
        self.params, self.processors = params, processors
        self.cluster = None  # set by the engine

    @classmethod
    def create(cls, params: BaseModel, cluster) -> "LocalScheduler":
        self = cls(params, cluster.processors)
        self.cluster = cluster
        return self

    def schedule(self, now: float, queue: list[Job], free: int, running: Collection[Job]) -> Iterable[Job]:
        """The jobs of ``queue`` to start at ``now`` (together they must fit in ``free``)."""
        raise NotImplementedError

    def decide(self, now: float) -> None:
        cluster = self.cluster
        queue, free = cluster.queue, cluster.free
        if not queue or free == 0:  # (every job needs a processor)
            return
        try:
            chosen = self.schedule(now, queue, free, cluster.running.values())
            if not chosen:
                return
            chosen = list(chosen)  # (a generator runs the policy's code here)
        except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
            raise policy_raised(self.name, f"schedule() at t={now:g} ({len(queue)} waiting, {free} processors "
                                           f"free)", exc) from exc
        for job in chosen:
            if not (isinstance(job, Job) and job.start != job.start and job.status in ("waiting", "suspended")):
                raise PolicyError(f"{self.name}: at t={now:g} it started {job!r}, which is not a waiting job")
            if job.size > free:
                raise PolicyError(f"{self.name}: at t={now:g} it started job {job.id} needing {job.size} "
                                  f"processors with {free} free")
            if job.status == "suspended" and not cluster.own_processors_free(job):
                continue  # it resumes on its own processors only: it waits until they are free
            free -= job.size
            cluster.start(job)


class PythonScheduler:
    """The registry's implementation of an :class:`EventScheduler` (or :class:`LocalScheduler`)
    subclass: the policy as the scheduling pass of the event core (simengine.local.external), on
    the event-driven model (reservations, priorities, preemption) and -- the simple form, which
    can neither reject nor preempt -- on the kernel path too (the compiled schedulers' interface:
    ``steps`` and a call)."""

    #: it runs on the event-driven cluster; it is not compiled
    event_driven = True
    compiled = False

    def __init__(self, policy: type[EventScheduler]):
        self.policy = policy
        self.__doc__ = policy.__doc__
        #: the simple form gives a start per job and nothing else: the kernel path can run it
        self.kernel_path = issubclass(policy, LocalScheduler)

    def steps(self, submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSteps:
        from simengine.local.cluster import ClusterSim  # (the local model imports this module)
        check_inputs(submit, size, processors)
        sim = ClusterSim(int(processors), self.policy.name, submit, runtime, estimate, size, horizon=horizon,
                         params=params, python=self.policy)
        _, until = ClusterSteps.outputs(len(submit))

        def slices():  # pauses before each event at or after until[0], as the compiled kernels do
            while not sim.run(until=float(until[0])).finished:
                yield

        return ClusterSteps(slices(), sim.first_start, until)

    def __call__(self, submit, runtime, estimate, size, processors, params, horizon=math.inf) -> ClusterSchedule:
        return self.steps(submit, runtime, estimate, size, processors, params, horizon).to_end()


class GridJob:
    """A grid job as a placement policy sees it: ``sizes`` (the processors of each component to
    place, largest first), ``submit``, ``priority`` (0 super-high .. 3 super-low), ``file_size``
    (MB of input, 0: none) and ``file_sites`` (indices into ``grid.files`` holding the file)."""

    __slots__ = ("sizes", "submit", "priority", "file_size", "file_sites")

    def __init__(self, sizes: tuple[int, ...], submit: float, priority: int = 1, file_size: float = 0.0,
                 file_sites: tuple[int, ...] = ()):
        self.sizes, self.submit, self.priority = sizes, submit, priority
        self.file_size, self.file_sites = file_size, file_sites

    def __repr__(self) -> str:
        return f"GridJob(sizes={self.sizes}, submit={self.submit}, priority={self.priority})"


class Grid:
    """What a placement policy knows of the grid: ``processors`` per cluster and ``files`` (None
    without file sites; else ``files.site_cluster[f]``, the cluster file site f is at,
    ``files.names``, and ``files.time(megabytes, f, cluster)``, the transfer time)."""

    __slots__ = ("processors", "files")

    def __init__(self, processors: np.ndarray, files=None):
        self.processors, self.files = processors, files


class PlacementPolicy(PolicyKind):
    """Subclass this, set ``name`` (``Params``, ``summary`` as for a LocalScheduler) and write
    :meth:`place`. One instance places the jobs of one simulation: it may keep state (e.g.
    Close-to-Files' history table). ``capabilities``: "compiled" only with a ``code`` of the
    co-allocation kernel."""

    kind_registry = GRID_PLACEMENT
    kind_methods = ("place",)

    def __init__(self, params: BaseModel, grid: Grid):
        self.params, self.grid = params, grid

    def place(self, job: GridJob, idle: np.ndarray) -> Sequence[int | tuple[int, int]] | None:
        """Where each of ``job.sizes`` goes, given ``idle`` processors per cluster (a copy: the
        policy may change it): a cluster index per component (the engine takes the file site
        with the shortest transfer), or a (cluster, file site) pair; None: the job does not
        fit now (it stays queued). Several components may share a cluster; together they must
        fit."""
        raise NotImplementedError


class SiteAllocationPolicy(PolicyKind):
    """Subclass this, set ``name`` (``Params``, ``summary``) and write :meth:`choose`: the
    cluster each grid-target job (``target: grid``) goes to, from the job alone -- a static
    policy, decided when the job is generated, before the simulation (a policy that looks at the
    sites' state, like Deferred, is a simengine.site_state.StatefulSiteAllocation). ``rng`` is the
    run's generator for this stream: draw from it, never from a global one, so runs reproduce."""

    kind_registry = SITE_ALLOCATION
    kind_methods = ("choose",)

    @classmethod
    def implementation_of(cls, policy: type) -> object:
        return PythonSiteAllocation(policy)

    def __init__(self, params: BaseModel, processors: np.ndarray, rng: np.random.Generator):
        self.params, self.processors, self.rng = params, processors, rng

    def choose(self, job: Job) -> int:
        """The index of the cluster ``job`` goes to (it must have at least ``job.size`` processors)."""
        raise NotImplementedError


class PythonSiteAllocation:
    """The registry's implementation of a :class:`SiteAllocationPolicy` subclass: the static
    policies' interface ``(jobs, processors, params, rng) -> cluster per job``."""

    def __init__(self, policy: type[SiteAllocationPolicy]):
        self.policy = policy
        self.__doc__ = policy.__doc__

    def __call__(self, jobs, processors, params, rng) -> np.ndarray:
        if not isinstance(params, self.policy.Params):
            params = self.policy.Params.model_validate(params or {})
        procs = np.asarray(processors, np.int64)
        policy = self.policy(params, procs, rng)
        out = np.empty(len(jobs), np.int32)
        for i, (submit, size, estimate) in enumerate(zip(jobs.submit.tolist(), jobs.processors.tolist(),
                                                         jobs.estimate.tolist())):
            try:
                c = policy.choose(Job(i, submit, size, estimate))
            except Exception as exc:  # noqa: BLE001 - the researcher's code: any failure
                raise policy_raised(self.policy.name, f"choose() for job {i} (submitted at t={submit:g})", exc) from exc
            if not (isinstance(c, (int, np.integer)) and 0 <= c < len(procs)):
                raise PolicyError(f"{self.policy.name}: job {i} was sent to {c!r}, not a cluster index "
                                  f"0..{len(procs) - 1}")
            if procs[c] < size:
                raise PolicyError(f"{self.policy.name}: job {i} needs {size} processors; it was sent to cluster "
                                  f"{c}, which has {procs[c]}")
            out[i] = c
        return out


def load_entry_points() -> list[str]:
    """Import every module registered under ENTRY_POINT_GROUP (importing registers its
    policies); returns their names. A package that fails to load is reported as a warning and
    left out: a broken plug-in must not take the engine down."""
    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - any failure of third-party code
            warnings.warn(f"policy package {ep.name!r} ({ep.value}) could not be loaded: {exc}", stacklevel=2)
            continue
        loaded.append(ep.name)
    return loaded


#: the kinds of policy (and what their policies see) declared in the model packages, importable
#: from here as well: ``from simengine.policy import <name>`` (loaded on first use, so this module
#: imports no model package). One line per name: name -> module.
ELSEWHERE: dict[str, str] = {
    "StatefulSiteAllocation": "simengine.site_state",
    "Site": "simengine.site_state",
    "SiteJob": "simengine.site_state",
    "ClaimingPolicy": "simengine.grid.claiming",
    "ClaimJob": "simengine.grid.claiming",
    "ClaimingGrid": "simengine.grid.claiming",
    "Retry": "simengine.grid.claiming",
    "Requeue": "simengine.grid.claiming",
    "Fail": "simengine.grid.claiming",
    "DeadlineJob": "simengine.grid.deadline_job",
    "ReservationAdmission": "simengine.cao.admission",
    "ReservationRequest": "simengine.cao.admission",
    "ClusterOffer": "simengine.cao.admission",
    "Grant": "simengine.cao.admission",
    "Predecessor": "simengine.cao.admission",
    "RarsKnobs": "simengine.cao.admission",
    "VictimChoice": "simengine.preemption",
}


def __getattr__(name: str):
    if name in ELSEWHERE:
        from importlib import import_module  # (only for a name of ELSEWHERE: rare)
        return getattr(import_module(ELSEWHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
