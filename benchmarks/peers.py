"""Peer models the benchmarks run side by side with GridWeb on the same input.

Everything here is deliberately independent of ``simengine`` (its own SWF parser,
its own bounded-Pareto solver) and written the way a modeller would write it with
each tool, so that agreement between a peer and GridWeb is a real cross-check:

- :func:`read_swf_jobs` -- a plain line-by-line SWF reader.
- :func:`simpy_fcfs` -- strict FCFS on one cluster in SimPy: a ``Container`` of
  processors behind a FIFO "queue head" lock.
- :func:`python_easy` -- a straightforward pure-Python EASY backfilling simulator.
- :func:`simpy_lwr` / :func:`ciw_lwr` -- the Zikos & Karatza grid (Random site
  allocation, LWR per-processor FCFS queues) in SimPy and in Ciw.

Every simulator returns its results plus the wall time of its own simulation call
(``env.run()``, the event loop, ``simulate_until_max_customers``); building inputs
and reading results afterwards is not timed.
"""
from __future__ import annotations

import bisect
import gzip
import math
import random
import time
from dataclasses import dataclass

# ---- SWF --------------------------------------------------------------------------------------


@dataclass
class SwfJobs:
    """Jobs of an SWF trace in submit order (stable: file order breaks ties)."""

    job_id: list[int]
    submit: list[float]
    runtime: list[float]
    estimate: list[float]
    size: list[int]
    skipped: int


def read_swf_jobs(path: str) -> SwfJobs:
    """Read an SWF file (plain or gzipped) the simple way.

    runtime = field 4 (negative -> 0); size = field 8 if > 0 else field 5 (jobs with
    neither are skipped); estimate = field 9 if > 0 else the runtime.
    """
    opener = gzip.open if path.endswith(".gz") else open
    rows = []
    skipped = 0
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(";"):
                continue
            v = line.split()
            req, alloc = int(float(v[7])), int(float(v[4]))
            size = req if req > 0 else alloc
            if size <= 0:
                skipped += 1
                continue
            runtime = max(float(v[3]), 0.0)
            est = float(v[8])
            rows.append((float(v[1]), int(float(v[0])), runtime, est if est > 0 else runtime, size))
    rows.sort(key=lambda r: r[0])  # stable: file order breaks ties
    return SwfJobs([r[1] for r in rows], [r[0] for r in rows], [r[2] for r in rows],
                   [r[3] for r in rows], [r[4] for r in rows], skipped)


# ---- SimPy FCFS -------------------------------------------------------------------------------


def simpy_fcfs(submit, runtime, size, processors: int) -> tuple[list[float], float]:
    """Strict FCFS in SimPy; returns (start time of every job, seconds spent in env.run()).

    The cluster is a ``Container`` of processors. A job needs several processors at
    once, so jobs pass a FIFO gate (a ``Resource`` of capacity 1, the queue head) one
    at a time, in submit order, and hold it until ``container.get(size)`` succeeds.
    """
    import simpy

    env = simpy.Environment()
    cpus = simpy.Container(env, capacity=processors, init=processors)
    head = simpy.Resource(env, capacity=1)
    n = len(submit)
    start = [math.nan] * n

    def job(i):
        with head.request() as turn:
            yield turn
            yield cpus.get(size[i])
        start[i] = env.now
        yield env.timeout(runtime[i])
        yield cpus.put(size[i])

    def source():
        for i in range(n):
            delay = submit[i] - env.now
            if delay > 0:
                yield env.timeout(delay)
            env.process(job(i))

    env.process(source())
    t0 = time.perf_counter()
    env.run()
    return start, time.perf_counter() - t0


# ---- pure-Python EASY -------------------------------------------------------------------------


def python_easy(submit, runtime, estimate, size, processors: int,
                overrun_step: float = 60.0) -> tuple[list[float], float]:
    """EASY backfilling as a plain Python event loop; returns (starts, seconds).

    Running jobs sit in a list sorted by end time. At every event time the queue head
    starts while it fits; otherwise it gets a reservation at the shadow time (the
    earliest planned end at which enough processors are free) and later jobs, scanned
    linearly in arrival order, start now if they end by the shadow time or use only
    the extra processors the head will not need.

    Planned end of a running job = start + estimate; a job that outlived its estimate
    is planned to end overrun_step, then 2*overrun_step ... later (GridWeb's rule for
    traces where walltimes are not enforced).
    """
    t_begin = time.perf_counter()
    n = len(submit)
    start = [math.nan] * n
    running = []  # (actual end, job), sorted
    queue = []  # waiting jobs in arrival order
    free = processors
    nxt = 0
    inf = math.inf

    def planned_end(j, now):
        end = start[j] + estimate[j]
        if end >= now:
            return end
        ext = overrun_step
        while end + ext <= now:
            end += ext
            ext *= 2.0
        return end + ext

    def begin(j, now):
        nonlocal free
        start[j] = now
        free -= size[j]
        bisect.insort(running, (now + runtime[j], j))

    while nxt < n or running:
        t = submit[nxt] if nxt < n else inf
        if running and running[0][0] < t:
            t = running[0][0]
        k = 0
        while k < len(running) and running[k][0] <= t:
            free += size[running[k][1]]
            k += 1
        del running[:k]
        while nxt < n and submit[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        while queue and size[queue[0]] <= free:
            begin(queue.pop(0), t)
        if not queue or free == 0:
            continue
        # the head's reservation: shadow time and extra processors
        head = queue[0]
        plan = sorted((planned_end(j, t), size[j]) for _, j in running)
        avail = free
        shadow = inf
        for end, s in plan:
            if avail >= size[head] and end > shadow:
                break
            avail += s
            if avail >= size[head] and shadow == inf:
                shadow = end
        extra = avail - size[head] if shadow < inf else 0
        started = []
        for q in range(1, len(queue)):
            if free == 0:
                break
            j = queue[q]
            if size[j] > free:
                continue
            before_shadow = t + estimate[j] <= shadow
            if before_shadow or size[j] <= extra:
                if not before_shadow:
                    extra -= size[j]
                begin(j, t)
                started.append(q)
        for q in reversed(started):
            del queue[q]
    return start, time.perf_counter() - t_begin


# ---- the Zikos & Karatza grid -----------------------------------------------------------------


def bounded_pareto_low(alpha: float, high: float, mean: float) -> float:
    """L such that BP(alpha, L, high) has the given mean (bisection; the mean grows with L)."""
    def bp_mean(low):
        r = low / high
        if abs(alpha - 1) < 1e-12:
            return low * math.log(high / low) / (1 - r)
        scale = alpha * low ** alpha / (1 - r ** alpha) / (alpha - 1)
        return scale * (low ** (1 - alpha) - high ** (1 - alpha))

    lo, hi = 1e-12, mean
    for _ in range(200):
        mid = (lo + hi) / 2
        if bp_mean(mid) < mean:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass
class GridModel:
    """The Zikos & Karatza Random + LWR grid."""

    site_processors: tuple[int, ...] = (8, 16, 24, 32)
    mean_interarrival: float = 0.014
    alpha: float = 1.5
    high: float = 100.0
    mean_demand: float = 1.0

    @property
    def low(self) -> float:
        return bounded_pareto_low(self.alpha, self.high, self.mean_demand)

    @property
    def site_weights(self) -> list[float]:
        total = sum(self.site_processors)
        return [c / total for c in self.site_processors]

    def site_first_processor(self) -> list[int]:
        first, out = 0, []
        for c in self.site_processors:
            out.append(first)
            first += c
        return out


@dataclass
class LwrOutcome:
    seconds: float
    completions: int
    mean_response: float  # over completions after the warm-up ones
    start: list[float] | None = None  # per job, when the run was given a workload


def _mean_after_warmup(ends_and_responses, warmup: int) -> float:
    ends_and_responses.sort()
    rest = [r for _, r in ends_and_responses[warmup:]]
    return sum(rest) / len(rest) if rest else math.nan


def least_work_processor(drain: list[float], first: int, count: int, now: float, demand: float) -> int:
    """LWR inside one site: the processor (of first..first+count-1) whose queue drains first
    (ties: lowest index); its drain time is advanced by ``demand``. Shared by both peers."""
    best, best_work = first, max(0.0, drain[first] - now)
    for p in range(first + 1, first + count):
        w = max(0.0, drain[p] - now)
        if w < best_work:
            best, best_work = p, w
    drain[best] = max(now, drain[best]) + demand
    return best


def simpy_lwr(model: GridModel, completions: int, warmup: int, seed: int = 0,
              workload: tuple | None = None, records: bool = True) -> LwrOutcome:
    """The grid in SimPy: every processor a ``Resource(capacity=1)`` with its own FIFO queue.

    An arriving job picks a site at random (p_k = c_k / 80), then joins the processor
    of that site with the least remaining work (ties: lowest index). Remaining work is
    tracked per processor as the time its queue drains. Interarrival times, demands
    and sites are drawn per job with Python's ``random`` -- unless ``workload``
    (submit, demand, site) is given, then those jobs are replayed instead (for the
    exact cross-check). The run stops at ``completions`` completions.

    ``records``: keep (end, response) of every job, as GridWeb keeps a row per job; without
    them the model only sums the response times after the first ``warmup`` completions.
    """
    import simpy

    rng = random.Random(seed)
    low, high, alpha = model.low, model.high, model.alpha
    shape = 1 - (low / high) ** alpha
    inv_alpha = 1 / alpha
    sites = list(range(len(model.site_processors)))
    weights = model.site_weights
    first = model.site_first_processor()
    counts = list(model.site_processors)
    env = simpy.Environment()
    cpus = [simpy.Resource(env, capacity=1) for _ in range(sum(counts))]
    drain = [0.0] * len(cpus)
    done = env.event()
    kept = [] if records else None  # (end, response)
    ended = [0, 0.0]  # completions, sum of the responses after the warm-up ones
    start_of = {} if workload is not None else None

    def job(i, submitted, p, demand):
        with cpus[p].request() as req:
            yield req
            if start_of is not None:
                start_of[i] = env.now
            yield env.timeout(demand)
        ended[0] += 1
        if kept is not None:
            kept.append((env.now, env.now - submitted))
        elif ended[0] > warmup:
            ended[1] += env.now - submitted
        if ended[0] == completions and not done.triggered:
            done.succeed()

    def dispatch(i, demand, site):
        now = env.now
        best = least_work_processor(drain, first[site], counts[site], now, demand)
        env.process(job(i, now, best, demand))

    def source():
        i = 0
        while True:
            yield env.timeout(rng.expovariate(1 / model.mean_interarrival))
            demand = low / (1 - rng.random() * shape) ** inv_alpha
            site = rng.choices(sites, weights)[0]
            dispatch(i, demand, site)
            i += 1

    def replay():
        submit, demand, site = workload
        for i in range(len(submit)):
            delay = submit[i] - env.now
            if delay > 0:
                yield env.timeout(delay)
            dispatch(i, demand[i], site[i])

    env.process(source() if workload is None else replay())
    t0 = time.perf_counter()
    env.run(until=done if workload is None else None)
    seconds = time.perf_counter() - t0
    start = None
    if workload is not None:
        start = [start_of.get(i, math.nan) for i in range(len(workload[0]))]
    mean = _mean_after_warmup(kept, warmup) if kept is not None else \
        (ended[1] / (ended[0] - warmup) if ended[0] > warmup else math.nan)
    return LwrOutcome(seconds, ended[0], mean, start)


def ciw_lwr(model: GridModel, completions: int, warmup: int, seed: int = 0,
            workload: tuple | None = None) -> LwrOutcome:
    """The grid in Ciw.

    Node 1 is the grid scheduler: Poisson arrivals, infinitely many servers, zero
    service time. Nodes 2..81 are the 80 processors, one server each (FIFO). A custom
    router on node 1 picks a site at random (p_k = c_k / 80), draws the job's demand
    (known at dispatch: LWR is clairvoyant) and sends the job to the site's processor
    with the least remaining work (ties: lowest index); each processor's service time
    distribution returns the demand the job carries. Processors route to the exit.
    With ``workload`` (submit, demand, site) those jobs are replayed (sequential
    interarrival times) instead of drawn.
    """
    import ciw

    low, high, alpha = model.low, model.high, model.alpha
    shape = 1 - (low / high) ** alpha
    inv_alpha = 1 / alpha
    first = model.site_first_processor()
    counts = list(model.site_processors)
    n_proc = sum(counts)
    sites = list(range(len(counts)))
    weights = model.site_weights

    class LeastWorkRemaining(ciw.routing.NodeRouting):
        def __init__(self):
            self.drain = [0.0] * n_proc

        def next_node(self, ind):
            now = self.simulation.current_time
            if workload is None:
                site = ciw.random_choice(sites, weights)
                demand = low / (1 - random.random() * shape) ** inv_alpha
            else:
                site = workload[2][ind.id_number - 1]
                demand = workload[1][ind.id_number - 1]
            ind.demand = demand
            best = least_work_processor(self.drain, first[site], counts[site], now, demand)
            return self.simulation.nodes[best + 2]  # nodes[0] is the arrival node

    class CarriedDemand(ciw.dists.Distribution):
        def sample(self, t=None, ind=None):
            return ind.demand

    if workload is None:
        arrivals = ciw.dists.Exponential(rate=1 / model.mean_interarrival)
    else:
        submit = workload[0]
        gaps = [submit[0]] + [b - a for a, b in zip(submit, submit[1:])]
        arrivals = ciw.dists.Sequential(gaps + [math.inf])  # no arrivals after the last job
    network = ciw.create_network(
        arrival_distributions=[arrivals] + [None] * n_proc,
        service_distributions=[ciw.dists.Deterministic(0.0)] + [CarriedDemand() for _ in range(n_proc)],
        number_of_servers=[float("inf")] + [1] * n_proc,
        routing=ciw.routing.NetworkRouting(
            [LeastWorkRemaining()] + [ciw.routing.Leave() for _ in range(n_proc)]),
    )
    ciw.seed(seed)
    sim = ciw.Simulation(network)
    t0 = time.perf_counter()
    sim.simulate_until_max_customers(completions, method="Complete")
    seconds = time.perf_counter() - t0
    records = [r for r in sim.get_all_records() if r.node > 1 and r.record_type == "service"]
    ends = [(r.exit_date, r.exit_date - r.arrival_date) for r in records]
    start = None
    if workload is not None:
        start = [math.nan] * len(workload[0])
        for r in records:
            start[r.id_number - 1] = r.service_start_date
    return LwrOutcome(seconds, len(records), _mean_after_warmup(ends, warmup), start)
