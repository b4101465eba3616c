"""The compiled event core of the event-driven cluster simulator (simengine.local.cluster).

One cluster's whole state lives in one numba StructRef (:class:`State`): per-job arrays,
the processors' owners, the queue, an event heap, the conservative profile, the advance
reservations and the pieces drawn so far. :func:`advance` runs the event loop until nothing
is left, until a given time (the live Gantt's slices) or until a progress report is due, and
can be called again to go on; nothing of the loop runs in Python.

The rules are those of the module docstring of simengine.local.cluster (docs/reservations.md,
"Same-time events"): at each event time t, in this order, job completions and reservation ends
(in the order they were scheduled), cancellations (in job order), overrun extensions
(conservative), reservation requests, relaxed reservations sliding earlier, reservation windows
opening, arrivals, one scheduling pass. tests/simengine/test_local_core.py checks every schedule against the plain-Python
simulator the core replaced (tests/simengine/reference_cluster.py).

Internally a reservation is known by its position in request order (the Python side maps it
to the scenario's index); a processor's owner is a job id, -2 - position, or -1 (free).

An outage (resource failures, maintenance: docs/failures.md) is a reservation the core cannot
refuse, requested at its start (nobody foresees it) on given processors (``ar_first``: the first
of a block of ``ar_p``): at its start the jobs on those processors are killed (requeued from
scratch or lost: ``ar_down``), a reservation holding one of them loses it (``ar_broken``), and the
processors stay down until the repair, which every scheduling view then sees, as it sees a
reservation's window. A reservation whose window opens while too few processors are up gets
what is free (``ar_held``) and is broken too.

A cancellation (a trace's user withdrawing a job: docs/traces.md, "Cancelled jobs") is an event at
the job's ``cancel`` time, handled after the completions of its instant: a waiting job leaves the
queue (its conservative reservation comes back), a running one is killed, one not yet arrived
never arrives; the job ends CANCELLED.
"""
from __future__ import annotations

import math

import numpy as np
from numba.experimental import structref

from simengine.gantt import KIND_DOWN, KIND_KILLED, KIND_RESERVATION, KIND_RUN, KIND_SUSPENDED
from simengine.jit import njit, types
from simengine.local.profile import (_min_free_lo, first_backfill_within, fit_limits, give_window, queue_delete,
                                     queue_insert, replan_queue, steps_of_points)
from simengine.policy_types import AR_ACCEPTED, AR_ACTIVE, AR_DONE, AR_PENDING, AR_REJECTED  # noqa: F401
from simengine.preemption import order_victims
from simengine.profile import prof_add, prof_find_start
from simengine.schedulers._linked_profile import (HEAD, LB, NEXT, lp_activate, lp_advance,
                                                  lp_deactivate, lp_fit, lp_new_classes,
                                                  lp_new, lp_release, lp_seek)
from simengine.schedulers.base import planned_end
from simengine.schedulers.conservative import compress, end_plan, plan_from_now, reserve, take_window

INF = math.inf

WAITING, QUEUED, RUNNING, SUSPENDED, DONE, KILLED, REJECTED, CANCELLED = range(8)
#: ar_down: an advance reservation, or an outage whose victims are requeued (restart from scratch) or lost
AR_RESERVATION, DOWN_REQUEUE, DOWN_LOSE = range(3)
EV_JOB_END, EV_AR_END, EV_OVERRUN, EV_TIMER, EV_CANCEL = range(5)
#: the scheduling pass: a compiled strategy, or EXTERNAL -- the pass is the caller's (a Python
#: policy, simengine.local.external): advance() stops with DECIDE once the events of an instant are
#: handled, the caller acts through the act_* functions and calls advance() again
FCFS, EASY, CONSERVATIVE, EXTERNAL = range(4)
#: what advance() stopped for
FINISHED, REACHED_UNTIL, REPORT_DUE, DECIDE = range(4)
#: what an EXTERNAL pass is told (the event log, log_kind/log_id, reset by the caller)
LOG_SUBMIT, LOG_END, LOG_PREEMPTED, LOG_AR_ACCEPTED, LOG_AR_REJECTED, LOG_AR_MOVED, LOG_AR_START, LOG_AR_END, \
    LOG_TIMER, LOG_CANCELLED = range(10)
#: ctl[]: the scalars an EXTERNAL caller reads and writes without a call
CTL_NLOG, CTL_NFREE, CTL_TIMER_LOGGED, CTL_QH, CTL_QN = range(5)


@structref.register
class StateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class State(structref.StructRefProxy):
    """A cluster's simulation state (fields: :data:`FIELDS`); made by :func:`new_state`."""


#: the State's fields, in constructor order
FIELDS = (
    # configuration
    "P", "policy", "cons", "step", "horizon", "preempts", "restarts", "resumes", "overhead", "n",
    # per job: inputs
    "submit", "runtime", "size", "prio", "plan0",
    # per job: outcome
    "state", "first_start", "end", "preemptions", "resumes_n", "lost", "failures",
    # per job: the current (or next) run
    "run_start", "pplan", "pact", "off", "gen", "susp_at", "pend", "rstart", "rank", "after", "excl",
    "run_seq",
    # conservative job classes (the compression's bounds)
    "cls", "csize", "cdlo",
    # running jobs (unordered; run_seq gives the order they started in), suspended count
    "running", "rpos", "nrun", "nseq", "nsusp",
    # processors
    "owner", "pin", "pinned", "nfree",
    # the queue (qbuf[qh:qh + qn]: the head moves instead of the queue), completions
    "qbuf", "qh", "qn", "comp", "ncomp",
    # the event heap: (time, seq) ordered
    "ev_t", "ev_seq", "ev_kind", "ev_id", "ev_gen", "nev", "seq",
    # conservative: the kernels' linked profile of free processors (simengine.schedulers._linked_profile),
    # the job classes' earliest-fit bounds and which classes have queued jobs (act[:nact], ccount),
    # the nodes each queued reservation, running plan and advance reservation holds
    "nt", "nf", "L", "fs", "S", "CI", "CF", "act", "nact", "ccount", "snode", "enode", "ar_snode", "ar_enode",
    # advance reservations, in request order
    "ar_p", "ar_start", "ar_end", "ar_req", "ar_est", "ar_lft", "ar_jrt", "ar_status", "ar_off", "ar_at", "nar",
    # outages among them (AR_RESERVATION, DOWN_*), their first processor, processors each holds, and lost
    "ar_down", "ar_first", "ar_held", "ar_broken",
    # jobs over (done, killed, rejected) and reservations not over: outages alone do not keep a run
    # without a horizon going
    "nover", "nlive_ar", "nuser_ar",
    # pieces (owner: job id, or -1 - reservation position) and the processor lists they point into
    "pc_owner", "pc_t0", "pc_t1", "pc_kind", "pc_off", "pc_len", "npc", "pool", "npool",
    # the loop's own scalars
    "next_start", "early", "repaired", "below_zero", "arrived", "requested", "finished", "countdown", "report_t",
    # EXTERNAL: the event log since the last decision, ctl (CTL_*), the decision's time
    # (``lazy``: it only acts when jobs wait and processors are free -- the simple form -- so the
    # core goes on until then, the log holding several instants; ``nwait``: jobs waiting)
    "logging", "log_kind", "log_id", "ctl", "decide_t", "lazy", "nwait",
)

structref.define_proxy(State, StateType, list(FIELDS))


def new_state(processors: int, policy: int, step: float, horizon: float, preempts: bool, restarts: bool,
              resumes: bool, overhead: float, submit, runtime, size, prio, plan0, classes,
              ar_p, ar_start, ar_end, ar_req, ar_est, ar_lft, ar_jrt, lazy: bool = False,
              ar_down=None, ar_first=None, cancel=None) -> tuple[State, dict]:
    """A fresh State, and the arrays it shares with the caller by name (they stay current:
    only the growable buffers -- heap, profile, pieces, pool -- are replaced as the run goes).
    ``ar_down``/``ar_first``: which reservations are outages, and their first processor;
    ``cancel``: when each job is cancelled (inf: never; not before its submission)."""
    n = len(submit)
    nar = len(ar_p)
    nuser = int(np.sum(np.asarray(ar_down, np.int64) == AR_RESERVATION)) if ar_down is not None else nar
    f = np.float64
    arrays = dict(
        submit=np.ascontiguousarray(submit, f), runtime=np.ascontiguousarray(runtime, f),
        size=np.ascontiguousarray(size, np.int64), prio=np.ascontiguousarray(prio, np.int64),
        plan0=np.ascontiguousarray(plan0, f),
        state=np.full(n, WAITING, np.int64), first_start=np.full(n, np.nan), end=np.full(n, np.nan),
        preemptions=np.zeros(n, np.int64), resumes_n=np.zeros(n, np.int64), lost=np.zeros(n),
        failures=np.zeros(n, np.int64),
        run_start=np.full(n, np.nan), pplan=np.array(plan0, f), pact=np.array(runtime, f),
        off=np.full(n, -1, np.int64), gen=np.zeros(n, np.int64), susp_at=np.full(n, np.nan),
        pend=np.full(n, INF), rstart=np.full(n, INF), rank=np.ones(n, np.int64), after=np.full(n, -INF),
        excl=np.zeros(n, np.bool_), run_seq=np.zeros(n, np.int64),
        cls=np.ascontiguousarray(classes[0], np.int64), csize=np.ascontiguousarray(classes[1], np.int64),
        cdlo=np.ascontiguousarray(classes[2], f),
        running=np.empty(max(n, 1), np.int64), rpos=np.full(n, -1, np.int64),
        owner=np.full(processors, -1, np.int64), pin=np.zeros(processors, np.int64),
        qbuf=np.empty(2 * n + 1, np.int64), comp=np.empty(max(n, 1), np.int64),
        ar_p=np.ascontiguousarray(ar_p, np.int64), ar_start=np.ascontiguousarray(ar_start, f),
        ar_end=np.ascontiguousarray(ar_end, f), ar_req=np.ascontiguousarray(ar_req, f),
        ar_est=np.ascontiguousarray(ar_est, f), ar_lft=np.ascontiguousarray(ar_lft, f),
        ar_jrt=np.ascontiguousarray(ar_jrt, f), ar_status=np.full(len(ar_p), AR_PENDING, np.int64),
        ar_off=np.full(len(ar_p), -1, np.int64), ar_at=np.full(len(ar_p), np.nan),
        ar_down=np.zeros(nar, np.int64) if ar_down is None else np.ascontiguousarray(ar_down, np.int64),
        ar_first=np.zeros(nar, np.int64) if ar_first is None else np.ascontiguousarray(ar_first, np.int64),
        ar_held=np.zeros(nar, np.int64), ar_broken=np.zeros(nar, np.int64),
        # an instant logs each job at most twice (arrival, end or preemption), each reservation four
        # times, and one timer; room for two instants' worth: a lazy pass is woken when half is used
        log_kind=np.empty(2 * (2 * n + 4 * len(ar_p) + 1) + 16 if policy == EXTERNAL else 1, np.int64),
        log_id=np.empty(2 * (2 * n + 4 * len(ar_p) + 1) + 16 if policy == EXTERNAL else 1, np.int64),
        ctl=np.zeros(5, np.int64), decide_t=np.full(1, np.nan),
    )
    cap = max(16, 2 * n)
    # the cancellations are the heap's first events: sorted by (time, job), which is a heap
    cancel = np.full(n, INF) if cancel is None else np.ascontiguousarray(cancel, f)
    when = np.flatnonzero(cancel < INF)
    when = when[np.argsort(cancel[when], kind="stable")]
    ev_t, ev_seq, ev_kind, ev_id, ev_gen = (np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64),
                                            np.empty(cap, np.int64), np.empty(cap, np.int64))
    m = len(when)
    ev_t[:m], ev_seq[:m], ev_kind[:m], ev_id[:m], ev_gen[:m] = cancel[when], np.arange(m), EV_CANCEL, when, 0
    values = dict(
        P=int(processors), policy=int(policy), cons=policy == CONSERVATIVE, step=float(step),
        horizon=float(horizon), preempts=bool(preempts), restarts=bool(restarts), resumes=bool(resumes),
        overhead=float(overhead), n=n, nrun=0, nseq=0, nsusp=0, pinned=0, nfree=int(processors), qh=0, qn=0, ncomp=0,
        ev_t=ev_t, ev_seq=ev_seq, ev_kind=ev_kind, ev_id=ev_id, ev_gen=ev_gen, nev=m, seq=m,
        nar=len(ar_p), nover=0, nlive_ar=nuser, nuser_ar=nuser,
        **_linked_state(policy == CONSERVATIVE, processors, n, len(ar_p), arrays),
        pc_owner=np.empty(cap, np.int64), pc_t0=np.empty(cap), pc_t1=np.empty(cap),
        pc_kind=np.empty(cap, np.int64), pc_off=np.empty(cap, np.int64), pc_len=np.empty(cap, np.int64), npc=0,
        pool=np.empty(max(16, int(arrays["size"].sum()) + int(arrays["ar_p"].sum())), np.int64), npool=0,
        next_start=INF, early=False, repaired=False, below_zero=False, arrived=0, requested=0, finished=False,
        countdown=0,
        report_t=np.nan, logging=policy == EXTERNAL, lazy=bool(lazy), nwait=0, **arrays)
    return _make(*(values[k] for k in FIELDS)), arrays


def _linked_state(cons: bool, processors: int, n: int, nar: int, arrays: dict) -> dict:
    """The conservative profile's fields (a token one for the other policies): a node for each
    reservation's two ends, each running plan's end and each class bound, one more a job while a
    replan keeps its old window's start (replan_queue), and a few spare."""
    nclass = len(arrays["csize"]) if cons else 0
    nt, nf, L, fs, S = lp_new(3 * n + 2 * nar + nclass + 16 if cons else 2, -INF, int(processors))
    CI, CF = lp_new_classes(arrays["csize"][:nclass], arrays["cdlo"][:nclass])
    m = n if cons else 0
    return dict(nt=nt, nf=nf, L=L, fs=fs, S=S, CI=CI, CF=CF, act=np.empty(nclass, np.int64), nact=0,
                ccount=np.zeros(nclass, np.int64), snode=np.full(m, -1, np.int64), enode=np.full(m, -1, np.int64),
                ar_snode=np.full(nar if cons else 0, -1, np.int64), ar_enode=np.full(nar if cons else 0, -1, np.int64))


@njit(cache=True)
def _make(*fields):
    """The State (built in compiled code, so its constructor comes from numba's cache too)."""
    return State(*fields)


@njit(cache=True)
def buffers(s):
    """The growable buffers and counters the Python side reads after a call of advance()."""
    return (s.pc_owner, s.pc_t0, s.pc_t1, s.pc_kind, s.pc_off, s.pc_len, s.npc, s.pool, _queue(s), s.qn,
            s.running, s.nrun, s.ncomp, s.finished, s.arrived, s.report_t)


# ---- small pieces of state --------------------------------------------------------------------------


@njit(cache=True)
def _grown(a, k):
    """A copy of a with room for at least k entries (twice its size when that is more)."""
    b = np.empty(max(2 * a.shape[0], k), a.dtype)
    b[:a.shape[0]] = a
    return b


# The event heap and the piece buffer keep room for one more entry (grown after a push, not
# before): a check before the reads, or a field assigned where they are read, puts a decref between
# the reads' increfs and decrefs, and numba's pruning then keeps them all -- two atomic operations
# per array per call on the core's most frequent calls.


@njit(cache=True)
def _grow_events(s):
    s.ev_t = _grown(s.ev_t, 16)
    s.ev_seq = _grown(s.ev_seq, 16)
    s.ev_kind = _grown(s.ev_kind, 16)
    s.ev_id = _grown(s.ev_id, 16)
    s.ev_gen = _grown(s.ev_gen, 16)


@njit(cache=True)
def _grow_pieces(s):
    s.pc_owner = _grown(s.pc_owner, 16)
    s.pc_t0 = _grown(s.pc_t0, 16)
    s.pc_t1 = _grown(s.pc_t1, 16)
    s.pc_kind = _grown(s.pc_kind, 16)
    s.pc_off = _grown(s.pc_off, 16)
    s.pc_len = _grown(s.pc_len, 16)


@njit(cache=True)
def _grow_pool(s, k):
    s.pool = _grown(s.pool, k)


@njit(cache=True)
def _push(s, t, kind, ident, gen):
    seq = s.seq
    s.seq += 1
    i = s.nev
    s.nev += 1
    # the arrays read once: every read of a State field counts a reference in and out
    et, es, ek, ei, eg = s.ev_t, s.ev_seq, s.ev_kind, s.ev_id, s.ev_gen
    while i > 0:
        p = (i - 1) // 2
        if et[p] < t or (et[p] == t and es[p] < seq):
            break
        et[i], es[i], ek[i], ei[i], eg[i] = et[p], es[p], ek[p], ei[p], eg[p]
        i = p
    et[i], es[i], ek[i], ei[i], eg[i] = t, seq, kind, ident, gen
    if s.nev == et.shape[0]:
        _grow_events(s)


@njit(cache=True)
def _pop(s):
    """Take the earliest event off the heap: (kind, id, gen)."""
    et, es, ek, ei, eg = s.ev_t, s.ev_seq, s.ev_kind, s.ev_id, s.ev_gen
    kind, ident, gen = ek[0], ei[0], eg[0]
    s.nev -= 1
    m = s.nev
    if m > 0:
        t, seq = et[m], es[m]
        k2, i2, g2 = ek[m], ei[m], eg[m]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= m:
                break
            if c + 1 < m and (et[c + 1] < et[c] or (et[c + 1] == et[c] and es[c + 1] < es[c])):
                c += 1
            if t < et[c] or (t == et[c] and seq < es[c]):
                break
            et[i], es[i], ek[i], ei[i], eg[i] = et[c], es[c], ek[c], ei[c], eg[c]
            i = c
        et[i], es[i], ek[i], ei[i], eg[i] = t, seq, k2, i2, g2
    return kind, ident, gen


@njit(cache=True)
def _piece(s, owner, t0, t1, kind, off, length):
    k = s.npc
    po, p0, p1, pk, pf, pl = s.pc_owner, s.pc_t0, s.pc_t1, s.pc_kind, s.pc_off, s.pc_len
    po[k], p0[k], p1[k], pk[k], pf[k], pl[k] = owner, t0, t1, kind, off, length
    s.npc += 1
    if s.npc == p0.shape[0]:
        _grow_pieces(s)


@njit(cache=True)
def _pool_room(s, k):
    """The offset of k new entries of the processor pool."""
    if s.npool + k > s.pool.shape[0]:
        _grow_pool(s, s.npool + k)
    off = s.npool
    s.npool += k
    return off


@njit(cache=True)
def _log(s, kind, ident):
    """Tell an EXTERNAL pass what happened (nothing is logged for the compiled ones)."""
    if s.logging:
        k = s.ctl[CTL_NLOG]
        s.log_kind[k] = kind
        s.log_id[k] = ident
        s.ctl[CTL_NLOG] = k + 1


@njit(cache=True)
def _take(s, k):
    """The k lowest free processors, avoiding suspended jobs' checkpoints when possible,
    written to the pool; their offset."""
    off = _pool_room(s, k)
    pool, owner, pin = s.pool, s.owner, s.pin
    if k == 0:
        return off
    w = 0
    if s.pinned:
        for p in range(s.P):  # free and without a checkpoint
            if owner[p] == -1 and pin[p] == 0:
                pool[off + w] = p
                w += 1
                if w == k:
                    return off
        w = 0
    for p in range(s.P):  # the lowest free ones (checkpoints or not, when there are too few without)
        if owner[p] == -1:
            pool[off + w] = p
            w += 1
            if w == k:
                return off
    raise RuntimeError("fewer processors free than needed")


@njit(cache=True)
def _hold(s, off, k, who):
    owner, pool = s.owner, s.pool
    for i in range(off, off + k):
        owner[pool[i]] = who
    s.nfree -= k


@njit(cache=True)
def _release(s, off, k):
    owner, pool = s.owner, s.pool
    for i in range(off, off + k):
        owner[pool[i]] = -1
    s.nfree += k


@njit(cache=True)
def _procs_free(s, j, use_excl):
    """Are suspended job j's processors free (counting ``excl`` jobs' as free when asked)?"""
    owner, pool, excl = s.owner, s.pool, s.excl
    for i in range(s.off[j], s.off[j] + s.size[j]):
        o = owner[pool[i]]
        if o != -1 and not (use_excl and o >= 0 and excl[o]):
            return False
    return True


@njit(cache=True)
def _run_add(s, j):
    s.rpos[j] = s.nrun
    s.running[s.nrun] = j
    s.nrun += 1
    s.run_seq[j] = s.nseq
    s.nseq += 1


@njit(cache=True)
def _run_remove(s, j):
    i = s.rpos[j]
    s.nrun -= 1
    last = s.running[s.nrun]
    s.running[i] = last
    s.rpos[last] = i
    s.rpos[j] = -1


@njit(cache=True)
def _give_reservation(s, j, t):
    """Queued job j's reservation comes off the profile."""
    if s.snode[j] < 0:
        return
    give_window(s.snode[j], s.enode[j], s.rstart[j], s.pend[j], s.size[j], t, s.nt, s.nf, s.L, s.fs, s.S,
                s.CI, s.CF, s.act, s.nact)
    s.snode[j] = -1
    s.enode[j] = -1


@njit(cache=True)
def _next_start(s):
    m = INF
    qbuf, rstart = _queue(s), s.rstart
    for q in range(s.qn):
        x = rstart[qbuf[q]]
        if x < m:
            m = x
    return m


@njit(cache=True)
def _any_live_ar(s, t):
    status, end = s.ar_status, s.ar_end
    for r in range(s.nar):
        if (status[r] == AR_ACCEPTED or status[r] == AR_ACTIVE) and end[r] > t:
            return True
    return False


@njit(cache=True)
def _view(s, t, still_running, use_excl, skip_ar):
    """The step function of free processors from t: running jobs (but ``excl`` ones when asked)
    until their planned end, and the live reservations (but ``skip_ar``)."""
    running, excl, pend, run_start, pplan, size = s.running, s.excl, s.pend, s.run_start, s.pplan, s.size
    status, a_start, a_end, a_p = s.ar_status, s.ar_start, s.ar_end, s.ar_p
    cons, step = s.cons, s.step
    nrun, nar = s.nrun, s.nar
    # the points of _steps' intervals, built here at once: [max(start, t), end) when not empty
    pts = np.empty(2 * (nrun + nar) + 1)
    delta = np.empty(2 * (nrun + nar) + 1, np.int64)
    pts[0] = t
    delta[0] = 0
    k = 1
    for i in range(nrun):
        j = running[i]
        if use_excl and excl[j]:
            continue
        e = pend[j] if cons else planned_end(run_start[j], pplan[j], t, step, still_running)
        if e > t:
            pts[k] = t
            delta[k] = -size[j]
            pts[k + 1] = e
            delta[k + 1] = size[j]
            k += 2
    for r in range(nar):
        if r != skip_ar and (status[r] == AR_ACCEPTED or status[r] == AR_ACTIVE) and a_end[r] > t:
            a = a_start[r] if a_start[r] > t else t
            if a_end[r] > a:
                pts[k] = a
                delta[k] = -a_p[r]
                pts[k + 1] = a_end[r]
                delta[k + 1] = a_p[r]
                k += 2
    return steps_of_points(s.P, pts, delta, k)


@njit(cache=True)
def _fits(times, free, t, d, p):
    """Do p processors stay free on [t, t + d) by plan? A job asking for no time holds nothing."""
    return d <= 0 or _min_free_lo(times, free, 0, times.shape[0], t, t + d) >= p


@njit(cache=True)
def _earliest(times, free, after, duration, size, limit):
    return prof_find_start(times, free, 0, times.shape[0], after, duration, size, limit, 0.0, 0.0, 0)


@njit(cache=True)
def _add(times, free, a, b, delta):
    """A copy of the step function with delta added on [a, b)."""
    t2 = np.empty(times.shape[0] + 2)
    f2 = np.empty(times.shape[0] + 2, np.int64)
    t2[:times.shape[0]] = times
    f2[:times.shape[0]] = free
    t2, f2, _, n = prof_add(t2, f2, 0, times.shape[0], a, b, delta)
    return t2[:n], f2[:n]


@njit(cache=True)
def _identity_free_at(s, j, t):
    """When every processor of suspended job j is expected to be free (by plan)."""
    at = t
    owner, pool, pend, run_start, pplan, a_end = s.owner, s.pool, s.pend, s.run_start, s.pplan, s.ar_end
    cons, step = s.cons, s.step
    for i in range(s.off[j], s.off[j] + s.size[j]):
        o = owner[pool[i]]
        if o >= 0:
            e = pend[o] if cons else planned_end(run_start[o], pplan[o], t, step, True)
            if e > at:
                at = e
        elif o <= -2:
            e = a_end[-2 - o]
            if e > at:
                at = e
    return at


# ---- starting, ending, preempting -------------------------------------------------------------------


@njit(cache=True)
def _start(s, j, t, chosen=-1):
    """Start waiting job j now: on the processors at pool offset ``chosen`` when its caller chose
    them (simengine.local.external), else on its own (suspended) or the lowest free ones."""
    p = s.size[j]
    if chosen >= 0:
        off = chosen
    elif s.state[j] == SUSPENDED:
        off = s.off[j]
        _piece(s, j, s.susp_at[j], t, KIND_SUSPENDED, off, p)
        pin, pool = s.pin, s.pool
        for i in range(off, off + p):
            pin[pool[i]] -= 1
        s.pinned -= 1
        s.resumes_n[j] += 1
        s.nsusp -= 1
    elif s.cons and s.pact[j] == 0:
        # holds nothing: drawn on the lowest free processors (or the first ones)
        off = _pool_room(s, p)
        owner, pool = s.owner, s.pool
        w = 0
        for q in range(s.P):
            if w < p and owner[q] == -1:
                pool[off + w] = q
                w += 1
        if w < p:
            for q in range(p):
                pool[off + q] = q
    else:
        off = _take(s, p)
    if not (s.cons and s.pact[j] == 0):
        _hold(s, off, p, j)
    s.off[j] = off
    s.state[j] = RUNNING
    _run_add(s, j)
    s.run_start[j] = t
    if s.first_start[j] != s.first_start[j]:
        s.first_start[j] = t
    s.gen[j] += 1
    _push(s, t + s.pact[j], EV_JOB_END, j, s.gen[j])
    if s.cons:
        s.pend[j] = t + s.pplan[j]
        _push(s, s.pend[j], EV_OVERRUN, j, s.gen[j])


@njit(cache=True)
def _finish(s, j, t):
    _run_remove(s, j)
    s.state[j] = DONE
    s.nover += 1
    s.end[j] = t
    s.comp[s.ncomp] = j
    s.ncomp += 1
    _piece(s, j, s.run_start[j], t, KIND_RUN, s.off[j], s.size[j])
    if not (s.cons and s.pact[j] == 0):
        _release(s, s.off[j], s.size[j])
    _log(s, LOG_END, j)
    if s.cons and end_plan(j, t, s.pend, s.size, s.enode, s.nt, s.nf, s.L, s.fs, s.S, s.CI, s.CF, s.act, s.nact):
        s.early = True


@njit(cache=True)
def _victim_order(s, t, below):
    """Running jobs that may be preempted (not those ending at this very instant), of priority
    strictly below ``below``, in the order victims are taken (simengine.preemption.order_victims)."""
    running, run_start, pact, prio = s.running, s.run_start, s.pact, s.prio
    c = np.empty(s.nrun, np.int64)
    w = 0
    for i in range(s.nrun):
        j = running[i]
        if run_start[j] + pact[j] > t and prio[j] < below:
            c[w] = j
            w += 1
    c = c[:w]
    order_victims(c, prio, run_start, s.run_seq)
    return c


@njit(cache=True)
def _preempt(s, j, t, resumes, restarts, overhead, replan):
    """Stop running job j now and treat it as the mode (resumes, restarts, overhead) says;
    ``replan``: see :func:`_join_queue`."""
    _run_remove(s, j)
    s.gen[j] += 1  # its completion event no longer counts
    p = s.size[j]
    off = s.off[j]
    _release(s, off, p)
    if s.cons and end_plan(j, t, s.pend, s.size, s.enode, s.nt, s.nf, s.L, s.fs, s.S, s.CI, s.CF, s.act, s.nact):
        s.early = True
    elapsed = t - s.run_start[j]
    s.preemptions[j] += 1
    if resumes:
        _piece(s, j, s.run_start[j], t, KIND_RUN, off, p)
        rest_plan = s.pplan[j] - elapsed
        s.pact[j] = s.pact[j] - elapsed + overhead
        s.pplan[j] = (rest_plan if rest_plan > 0 else s.step) + overhead
        s.state[j] = SUSPENDED
        s.nsusp += 1
        s.susp_at[j] = t
        pin, pool = s.pin, s.pool
        for i in range(off, off + p):
            pin[pool[i]] += 1
        s.pinned += 1
        _join_queue(s, j, t, replan)
        return
    _piece(s, j, s.run_start[j], t, KIND_KILLED, off, p)
    s.lost[j] += elapsed
    if restarts:
        s.pact[j] = s.runtime[j] + overhead
        s.pplan[j] = s.plan0[j] + overhead
        s.state[j] = QUEUED
        _join_queue(s, j, t, replan)
    else:
        s.state[j] = KILLED
        s.nover += 1
        s.end[j] = t


@njit(cache=True)
def _enqueue(s, j):
    """Put j in the queue (after every job ranking before it); its position."""
    s.rank[j] = 0 if s.state[j] == SUSPENDED else 1
    if s.qh + s.qn == s.qbuf.shape[0]:  # the queue reached the buffer's end: move it to the front
        s.qbuf[:s.qn] = s.qbuf[s.qh:s.qh + s.qn].copy()
        s.qh = 0
    pos = queue_insert(s.qbuf[s.qh:], s.qn, s.prio, s.rank, j)
    s.qn += 1
    if s.cons:  # bounds are kept for the classes with queued jobs only
        c = s.cls[j]
        s.ccount[c] += 1
        if s.ccount[c] == 1:
            s.CF[c, LB] = -INF
            s.nact = lp_activate(c, s.act, s.nact, s.CI)
    return pos


@njit(cache=True)
def _dequeue_at(s, gone):
    """Take the jobs at these queue positions (ascending) off the queue: a prefix by moving the
    head, the rest by closing the gaps."""
    if s.cons:
        q = _queue(s)
        for g in gone:
            c = s.cls[q[g]]
            s.ccount[c] -= 1
            if s.ccount[c] == 0:
                s.nact = lp_deactivate(c, s.act, s.nact, s.CI)
    k = 0
    while k < gone.shape[0] and gone[k] == k:
        k += 1
    s.qh += k
    s.qn -= k
    if k < gone.shape[0]:
        s.qn = queue_delete(s.qbuf[s.qh:], s.qn, gone[k:] - k)
    if s.qn == 0:
        s.qh = 0


@njit(cache=True)
def _queue(s):
    """The queue, job ids in queue order (a view: valid until the queue changes)."""
    return s.qbuf[s.qh:s.qh + s.qn]


@njit(cache=True)
def _join_queue(s, j, t, replan):
    """Put j in the queue; conservative: it gets the earliest reservation that fits, and the
    queued jobs it now ranks before are placed again after it, in queue order -- unless not
    ``replan``: a replan from an earlier place follows before anything reads the reservations.
    An EXTERNAL pass keeps the queue in order only (qbuf: what a vectorized policy reads, through
    ctl's CTL_QH/CTL_QN) and decides itself."""
    if s.policy == EXTERNAL:
        s.nwait += 1
        _enqueue(s, j)
        return
    pos = _enqueue(s, j)
    if s.cons and replan:
        q = _queue(s)
        _replan(s, t, q[pos + 1:].copy(), q[pos:].copy())


@njit(cache=True)
def _set_after(s, t, place, use_place):
    """Set ``after`` (when its processors are expected free) for the suspended jobs a replan
    will place (``place``) or a compression may move (queued after t); the jobs set."""
    if s.nsusp == 0:
        return np.empty(0, np.int64)
    jobs = place if use_place else _queue(s)
    state, rstart = s.state, s.rstart
    out = np.empty(jobs.shape[0], np.int64)
    w = 0
    for q in range(jobs.shape[0]):
        j = jobs[q]
        if state[j] == SUSPENDED and (use_place or rstart[j] > t):
            s.after[j] = _identity_free_at(s, j, t)
            out[w] = j
            w += 1
    return out[:w]


@njit(cache=True)
def _replan(s, t, give_back, place):
    """Give back the queued reservations of ``give_back``, then reserve the earliest fit at or
    after max(t, ``after[j]``) for each job of ``place`` in turn (simengine.local.profile.replan_queue);
    the earliest new start."""
    touched = _set_after(s, t, place, True)
    first = replan_queue(t, give_back, place, s.after, s.rstart, s.pend, s.pplan, s.size, s.cls, s.snode,
                         s.enode, s.nt, s.nf, s.L, s.fs, s.S, s.CI, s.CF, s.act, s.nact)
    s.after[touched] = -INF
    if first < s.next_start:
        s.next_start = first
    return first


@njit(cache=True)
def _repair(s, t, until):
    """If the profile went below zero before ``until``, queued reservations starting before it
    are placed again, in queue order, after all the others (the kernel's overrun repair)."""
    if until <= t:
        return
    nt, nf, L = s.nt, s.nf, s.L
    x = s.S[HEAD]
    while x >= 0 and nt[x] < until and nf[x] >= 0:
        x = L[NEXT, x]
    if x < 0 or nt[x] >= until:
        return
    # every take that can leave the profile below zero (an advance reservation's window, a running
    # plan from now) ends before ``until`` and is repaired here: the one place that learns it
    s.below_zero = True
    qj = _queue(s)
    evicted = qj[s.rstart[qj] < until].copy()
    _replan(s, t, evicted, evicted)
    s.next_start = _next_start(s)
    s.repaired = True


@njit(cache=True)
def _compress(s, t):
    """Move queued reservations earlier where the profile now allows (the kernel's pass)."""
    if s.qn == 0:
        return
    touched = _set_after(s, t, s.qbuf[:0], False)
    nt, nf, L = s.nt, s.nf, s.L
    if s.below_zero:  # _repair saw a step below zero: look whether one is left
        below_zero = False
        x = s.S[HEAD]
        while x >= 0 and not below_zero:
            below_zero = nf[x] < 0
            x = L[NEXT, x]
        s.below_zero = below_zero
    first = compress(t, _queue(s), s.qn, s.after, s.rstart, s.pend, s.pplan, s.size, s.cls, s.snode, s.enode,
                     nt, nf, L, s.fs, s.S, s.CI, s.CF, s.act, s.nact, s.below_zero)
    s.after[touched] = -INF
    if first < s.next_start:
        s.next_start = first


# ---- advance reservations ---------------------------------------------------------------------------


@njit(cache=True)
def _admit(s, r, t):
    d = s.ar_end[r] - s.ar_start[r]
    p = s.ar_p[r]
    if s.ar_down[r] != AR_RESERVATION:  # an outage: it happens (its window opens at this same instant)
        start = s.ar_start[r]
    elif s.ar_lft[r] != s.ar_lft[r]:  # rigid
        times, free = _view(s, t, True, False, -1)
        ok = _min_free_lo(times, free, 0, times.shape[0], s.ar_start[r], s.ar_end[r]) >= p
        start = s.ar_start[r] if ok else INF
    else:
        times, free = _view(s, t, True, False, -1)
        start = _earliest(times, free, s.ar_start[r], d, p, np.nextafter(s.ar_lft[r] - d, INF))
    s.ar_at[r] = t
    if start == INF:
        s.ar_status[r] = AR_REJECTED
        s.nlive_ar -= 1
        _log(s, LOG_AR_REJECTED, r)
        return
    s.ar_status[r] = AR_ACCEPTED
    _log(s, LOG_AR_ACCEPTED, r)
    if s.ar_down[r] == AR_RESERVATION:  # (an outage keeps its end to the bit: the repair time drawn)
        s.ar_start[r] = start
        s.ar_end[r] = start + d
    if s.cons:
        s.ar_snode[r], s.ar_enode[r] = take_window(s.S[HEAD], start, s.ar_end[r], p, s.nt, s.nf, s.L, s.fs, s.S)
        _repair(s, t, s.ar_end[r])


@njit(cache=True)
def _slide(s, t):
    """Relaxed reservations not yet started move to the earliest fit at or after max(EST, now)."""
    for r in range(s.nar):
        if s.ar_status[r] != AR_ACCEPTED or s.ar_lft[r] != s.ar_lft[r] or s.ar_start[r] <= t:
            continue
        times, free = _view(s, t, True, False, r)
        d = s.ar_end[r] - s.ar_start[r]
        a = s.ar_est[r] if s.ar_est[r] > t else t
        x = _earliest(times, free, a, d, s.ar_p[r], s.ar_start[r])
        if x < s.ar_start[r]:
            o0, o1 = s.ar_start[r], s.ar_end[r]
            s.ar_start[r] = x
            s.ar_end[r] = x + d
            _log(s, LOG_AR_MOVED, r)
            if s.cons:
                give_window(s.ar_snode[r], s.ar_enode[r], o0, o1, s.ar_p[r], t, s.nt, s.nf, s.L, s.fs, s.S,
                            s.CI, s.CF, s.act, s.nact)
                s.ar_snode[r], s.ar_enode[r] = take_window(s.S[HEAD], x, x + d, s.ar_p[r], s.nt, s.nf, s.L, s.fs, s.S)
                s.early = True  # its old window came free
                _repair(s, t, s.ar_end[r])


@njit(cache=True)
def _go_down(s, r, t):
    """Outage r starts: its processors' jobs are killed (requeued or lost), a reservation holding
    one loses it (broken), one already down stays with the outage that ends last."""
    first, p = s.ar_first[r], s.ar_p[r]
    off = _pool_room(s, p)
    owner, pool = s.owner, s.pool  # (after _pool_room: it may grow the pool)
    w = 0
    for x in range(first, first + p):
        o = owner[x]
        if o >= 0:
            s.failures[o] += 1
            _preempt(s, o, t, False, s.ar_down[r] == DOWN_REQUEUE, 0.0, True)
            _log(s, LOG_PREEMPTED, o)
        elif o <= -2:
            r2 = -2 - o
            if s.ar_down[r2] != AR_RESERVATION and s.ar_end[r2] >= s.ar_end[r]:
                continue  # down already, until later
            if s.ar_down[r2] == AR_RESERVATION:
                s.ar_broken[r2] += 1
            owner[x] = -1
            s.nfree += 1
        owner[x] = -2 - r
        s.nfree -= 1
        pool[off + w] = x
        w += 1
    s.ar_off[r] = off
    s.ar_held[r] = w


@njit(cache=True)
def _open_window(s, r, t):
    """Reservation r's window starts: take its processors, preempting jobs if need be (the
    cluster's mode, or killing when the cluster does not preempt); an outage takes its own."""
    if s.ar_down[r] != AR_RESERVATION:
        _go_down(s, r, t)
    else:
        _take_window_processors(s, r, t)
    s.ar_status[r] = AR_ACTIVE
    if s.cons:  # the window's start is now: only its end node is held from here on
        lp_release(s.ar_snode[r], s.nt, s.nf, s.L, s.fs, s.S)
        s.ar_snode[r] = -1
    _push(s, s.ar_end[r], EV_AR_END, r, 0)
    _log(s, LOG_AR_START, r)
    if s.ar_jrt[r] == s.ar_jrt[r]:
        _piece(s, -1 - r, t, t + s.ar_jrt[r], KIND_RUN, s.ar_off[r], s.ar_held[r])


@njit(cache=True)
def _take_window_processors(s, r, t):
    """Reservation r's processors: the free ones, preempting jobs if need be; fewer when
    processors are down (broken)."""
    need = s.ar_p[r]
    if s.nfree < need:
        cand = _victim_order(s, t, np.iinfo(np.int64).max)
        total = s.nfree
        k = 0
        while k < cand.shape[0]:
            total += s.size[cand[k]]
            k += 1
            if total >= need:
                break
        if total >= need:
            for i in range(k):
                if s.preempts:
                    _preempt(s, cand[i], t, s.resumes, s.restarts, s.overhead, True)
                else:
                    _preempt(s, cand[i], t, False, False, 0.0, True)
                _log(s, LOG_PREEMPTED, cand[i])
    got = need if s.nfree >= need else s.nfree  # (fewer when processors are down: broken)
    s.ar_broken[r] += need - got
    off = _take(s, got)
    _hold(s, off, got, -2 - r)
    s.ar_off[r] = off
    s.ar_held[r] = got


@njit(cache=True)
def _close_window(s, r, t):
    owner, pool = s.owner, s.pool
    who = -2 - r
    for i in range(s.ar_off[r], s.ar_off[r] + s.ar_held[r]):  # (those an outage took are not its own now)
        if owner[pool[i]] == who:
            owner[pool[i]] = -1
            s.nfree += 1
    if s.cons and s.ar_enode[r] >= 0:
        lp_release(s.ar_enode[r], s.nt, s.nf, s.L, s.fs, s.S)
        s.ar_enode[r] = -1
    s.ar_status[r] = AR_DONE
    if s.ar_down[r] == AR_RESERVATION:
        s.nlive_ar -= 1
    kind = KIND_RESERVATION if s.ar_down[r] == AR_RESERVATION else KIND_DOWN
    _piece(s, -1 - r, s.ar_start[r], s.ar_end[r], kind, s.ar_off[r], s.ar_held[r])
    _log(s, LOG_AR_END, r)


# ---- cancellations ----------------------------------------------------------------------------------


@njit(cache=True)
def _cancel(s, j, t):
    """The user cancels job j now: not yet arrived, it never arrives; waiting (or suspended), it
    leaves the queue; running, it is killed; over, nothing. True if processors came free."""
    state = s.state[j]
    if state == DONE or state == KILLED or state == REJECTED or state == CANCELLED:
        return False
    if state == RUNNING:
        _preempt(s, j, t, False, False, 0.0, True)  # killed (it ends now): its processors come free
        s.preemptions[j] -= 1  # (a cancellation, not a preemption)
    else:
        s.end[j] = t
        s.nover += 1
    if state == QUEUED or state == SUSPENDED:
        if state == SUSPENDED:  # it gives up the processors it was to resume on
            off, p = s.off[j], s.size[j]
            _piece(s, j, s.susp_at[j], t, KIND_SUSPENDED, off, p)
            pin, pool = s.pin, s.pool
            for i in range(off, off + p):
                pin[pool[i]] -= 1
            s.pinned -= 1
            s.nsusp -= 1
        if s.policy == EXTERNAL:
            _leave_queue(s, j)
        else:
            if s.cons:
                _give_reservation(s, j, t)
                s.early = True  # its reservation came back: the pass compresses
            gone = np.empty(1, np.int64)
            gone[0] = _position(s, j)
            _dequeue_at(s, gone)
            if s.cons:
                s.next_start = _next_start(s)
    s.state[j] = CANCELLED
    if state != WAITING:  # (WAITING: cancelled at its submission, it never arrives: nobody heard of it)
        _log(s, LOG_CANCELLED, j)
    return state == RUNNING


# ---- preemption for a waiting job -------------------------------------------------------------------


@njit(cache=True)
def _preempt_for(s, j, t):
    """Preempt lower-priority running jobs so that j starts now (the fewest, lowest priority and
    newest first); False if that cannot be done."""
    if not s.preempts:
        return False
    p, d = s.size[j], s.pplan[j]
    suspended = s.state[j] == SUSPENDED
    cand = _victim_order(s, t, s.prio[j])
    total = s.nfree
    found = -1
    for k in range(cand.shape[0]):
        v = cand[k]
        s.excl[v] = True
        total += s.size[v]
        if total < p:
            continue
        if suspended and not _procs_free(s, j, True):
            continue
        times, free = _view(s, t, True, True, -1)
        if _fits(times, free, t, d, p):
            found = k
            break
    for k in range(cand.shape[0]):
        s.excl[cand[k]] = False
    if found < 0:
        return False
    for k in range(found + 1):
        _preempt(s, cand[k], t, s.resumes, s.restarts, s.overhead, not _ranks_before_any(s, cand[k], cand[k + 1:found + 1]))
    return True


@njit(cache=True)
def _ranks_before_any(s, v, later):
    """Does a job of ``later`` rank before v in the queue (victims of one preemption share their
    rank)? Then its replan, from its place, gives back and places again all that v's would place,
    on the profile both see (they are preempted in a row, nothing reads the reservations
    between): v joins without a replan of its own. The caller recomputes next_start after."""
    prio = s.prio
    for w in later:
        if prio[w] > prio[v] or (prio[w] == prio[v] and w < v):
            return True
    return False


# ---- FCFS and EASY ----------------------------------------------------------------------------------


@njit(cache=True)
def _can_start(s, j, t, guarded, times, free):
    if s.size[j] > s.nfree:
        return False
    if s.state[j] == SUSPENDED and not _procs_free(s, j, False):
        return False
    if guarded and not _fits(times, free, t, s.pplan[j], s.size[j]):
        return False
    return True


@njit(cache=True)
def _position(s, j):
    qbuf = _queue(s)
    for q in range(s.qn):
        if qbuf[q] == j:
            return q
    return -1


@njit(cache=True)
def _pass_queue(s, t):
    if s.qn == 0:
        return
    guarded = _any_live_ar(s, t)
    # The profile is built when a job first needs it (guarded, and enough processors free now;
    # on a long queue most passes find the head too large and nobody to backfill): nothing has
    # started in this pass before then, so it is the profile the pass would have begun with.
    # Until then: empty views of the heap's arrays (no allocation).
    times, free = s.ev_t[:0], s.ev_seq[:0]
    have_view = False
    h = 0
    while h < s.qn:
        j = _queue(s)[h]
        if guarded and not have_view and s.size[j] <= s.nfree:
            times, free = _view(s, t, False, False, -1)
            have_view = True
        if not _can_start(s, j, t, guarded, times, free):
            # every job before it has started: j is the top waiting job
            if not _preempt_for(s, j, t):
                break
            guarded = _any_live_ar(s, t)
            have_view = guarded
            if guarded:
                times, free = _view(s, t, False, False, -1)
            if not _can_start(s, j, t, guarded, times, free):
                raise RuntimeError("preemption did not make room")
            # the queue may have grown (requeued or suspended victims rank after j)
            h = _position(s, j)
        _start(s, j, t)
        if have_view:
            times, free = _add(times, free, t, t + s.pplan[j], -s.size[j])
        h += 1
    # the started jobs: the first h, and those backfilled
    if s.policy == EASY and h < s.qn and s.nfree > 0:
        gone = np.empty(s.qn, np.int64)
        for q in range(h):
            gone[q] = q
        ng = _backfill(s, t, h, gone, h, times, free, have_view)
        if ng > h:
            _dequeue_at(s, gone[:ng])
            return
    if h:
        _dequeue_head(s, h)


@njit(cache=True)
def _dequeue_head(s, h):
    """_dequeue_at of the first h positions, for FCFS and EASY (no class counts to keep)."""
    s.qh += h
    s.qn -= h
    if s.qn == 0:
        s.qh = 0


@njit(cache=True)
def _backfill(s, t, h, gone, ng, times, free, have_view):
    """Start the jobs after the blocked head (position h) that fit now without delaying it, in
    queue order; their positions go to ``gone``. Returns the new count of ``gone``. ``have_view``:
    (times, free) is the pass's profile of running jobs and reservations, this pass's starts in."""
    qj = _queue(s)
    head = qj[h]
    size, pplan, state = s.size, s.pplan, s.state
    # the profile is built when the first candidate has enough free processors now; from then
    # on each candidate's fit is read from the limits per processor count (fit_limits)
    k = h + 1
    nfree = s.nfree
    while k < qj.shape[0] and size[qj[k]] > nfree:
        k += 1
    if k >= qj.shape[0]:
        return ng
    if not have_view:
        times, free = _view(s, t, False, False, -1)
    times, free = _shadow_view(s, t, head, _head_after(s, head, t), times, free)
    lim = np.empty(s.P + 1)
    fit_limits(times, free, t, s.nfree, lim)
    while k < qj.shape[0] and s.nfree > 0:
        k = first_backfill_within(qj, k, size, pplan, s.nfree, lim, t)
        if k >= qj.shape[0]:
            break
        j = qj[k]
        p = size[j]
        if state[j] == SUSPENDED and not _procs_free(s, j, False):
            k += 1
            continue
        _start(s, j, t)
        gone[ng] = k
        ng += 1
        times, free = _add(times, free, t, t + pplan[j], -p)
        fit_limits(times, free, t, s.nfree, lim)
        k += 1
    return ng


@njit(cache=True)
def _head_after(s, head, t):
    """From when the blocked head may start: now, or a suspended head when its own processors are
    free (by plan)."""
    return _identity_free_at(s, head, t) if s.state[head] == SUSPENDED else t


@njit(cache=True)
def _shadow_view(s, t, head, after, times, free):
    """The profile of running jobs (this pass's starts too) and reservations (times, free: _view's),
    with the blocked head's reservation at its shadow time (its earliest fit at or after ``after``)."""
    shadow = _earliest(times, free, after, s.pplan[head], s.size[head], INF)
    if shadow < INF:
        # a head asking for no time still holds its processors at the shadow instant
        hold = shadow + s.pplan[head] if s.pplan[head] > 0 else np.nextafter(shadow, INF)
        times, free = _add(times, free, shadow, hold, -s.size[head])
    return times, free


# ---- conservative -----------------------------------------------------------------------------------


@njit(cache=True)
def _pass_conservative(s, t, new_lo, new_hi):
    if s.early or s.repaired:
        _compress(s, t)
    for j in range(new_lo, new_hi):
        if s.state[j] == QUEUED:
            _join_queue(s, j, t, True)
    while True:
        _start_due(s, t)
        if s.qn == 0:
            break
        top = _queue(s)[0]
        if s.rstart[top] <= t:
            break  # due but blocked (its processors): re-placed by _start_due
        if not _preempt_top(s, top, t):
            break


@njit(cache=True)
def _start_due(s, t):
    if s.next_start > t:
        return
    s.next_start = INF
    qj = _queue(s)
    rstart = s.rstart
    m = 0
    due = np.empty(qj.shape[0], np.int64)
    for q in range(qj.shape[0]):
        if rstart[qj[q]] <= t:
            due[m] = q
            m += 1
    due = due[:m]
    gone = np.empty(due.shape[0], np.int64)
    ng = 0
    for q in due:
        j = qj[q]
        if (s.size[j] > s.nfree and s.pact[j] > 0) or (s.state[j] == SUSPENDED and not _procs_free(s, j, False)):
            # its processors are still busy (a suspended job's own, or an overrun): later
            _give_reservation(s, j, t)
            after = _identity_free_at(s, j, t) if s.state[j] == SUSPENDED else t
            nxt = INF
            ev_t = s.ev_t
            for e in range(s.nev):
                if ev_t[e] > t and ev_t[e] < nxt:
                    nxt = ev_t[e]
            if nxt == INF:
                nxt = t + s.step
            a = after if after > nxt else nxt
            st, x = lp_fit(lp_seek(s.S[HEAD], a, s.nt, s.L), a, s.pplan[j], s.size[j], INF, s.nt, s.nf, s.L)
            reserve(j, st, x, s.pplan[j], s.size[j], s.rstart, s.pend, s.snode, s.enode,
                    s.nt, s.nf, s.L, s.fs, s.S)
            continue
        # the reservation becomes the running job's plan: nothing changes in the profile, the
        # plan holds only its end node
        lp_release(s.snode[j], s.nt, s.nf, s.L, s.fs, s.S)
        s.snode[j] = -1
        plan_end = s.pend[j]
        _start(s, j, t)
        s.pend[j] = plan_end
        gone[ng] = q
        ng += 1
    if ng:
        _dequeue_at(s, gone[:ng])
    s.next_start = _next_start(s)


@njit(cache=True)
def _preempt_top(s, j, t):
    if not _preempt_for(s, j, t):
        return False
    # j starts now: its reservation moves to [t, t + plan); those it now overlaps move
    _give_reservation(s, j, t)
    gone = np.empty(1, np.int64)
    gone[0] = _position(s, j)
    _dequeue_at(s, gone)
    _start(s, j, t)
    plan_from_now(j, t, s.pend, s.size, s.enode, s.nt, s.nf, s.L, s.fs, s.S)
    _repair(s, t, s.pend[j])
    _compress(s, t)
    s.next_start = _next_start(s)
    return True


# ---- what an EXTERNAL pass may do (simengine.local.external) -------------------------------------------
#: why an act_* refused: its return value (0: done)
ACT_OK, ACT_NOT_WAITING, ACT_TOO_FEW_FREE, ACT_BAD_PROCESSORS, ACT_BUSY_PROCESSORS, ACT_OWN_PROCESSORS, \
    ACT_NOT_RUNNING, ACT_PAST = range(8)


@njit(cache=True)
def act_start(s, j, t, procs):
    """Start waiting (or suspended) job j now, on ``procs`` (empty: the lowest free, as the
    compiled passes take them; a suspended job resumes on its own)."""
    state, p = s.state[j], s.size[j]
    if state != QUEUED and state != SUSPENDED:
        return ACT_NOT_WAITING
    if p > s.nfree:
        return ACT_TOO_FEW_FREE
    if state == SUSPENDED:
        if not _procs_free(s, j, False):
            return ACT_OWN_PROCESSORS
        if procs.shape[0]:
            if procs.shape[0] != p:
                return ACT_OWN_PROCESSORS
            pool, off = s.pool, s.off[j]
            for i in range(p):
                if procs[i] != pool[off + i]:
                    return ACT_OWN_PROCESSORS
        _start(s, j, t)
    elif procs.shape[0]:
        if procs.shape[0] != p:
            return ACT_BAD_PROCESSORS
        owner = s.owner
        why = ACT_OK
        k = 0
        while k < p and why == ACT_OK:
            q = procs[k]
            if q < 0 or q >= s.P:
                why = ACT_BAD_PROCESSORS
            elif owner[q] != -1:
                why = ACT_BUSY_PROCESSORS
            else:
                owner[q] = -3 - s.nar  # (marked taken for now: a processor named twice is refused)
                k += 1
        for i in range(k):
            owner[procs[i]] = -1
        if why != ACT_OK:
            return why
        off = _pool_room(s, p)
        s.pool[off:off + p] = procs
        _start(s, j, t, off)
    else:
        _start(s, j, t)
    _leave_queue(s, j)
    s.ctl[CTL_NFREE] = s.nfree
    return ACT_OK


@njit(cache=True)
def act_reject(s, j, t):
    """Waiting job j will never run: it ends now, rejected."""
    if s.state[j] != QUEUED:
        return ACT_NOT_WAITING
    s.state[j] = REJECTED
    s.nover += 1
    s.end[j] = t
    _leave_queue(s, j)
    return ACT_OK


@njit(cache=True)
def _leave_queue(s, j):
    """An EXTERNAL pass took waiting job j out of the queue (started or rejected it)."""
    s.nwait -= 1
    q = _position(s, j)
    if q == 0:  # the head: the queue's start moves
        s.qh += 1
    else:
        qbuf = s.qbuf
        for i in range(s.qh + q, s.qh + s.qn - 1):
            qbuf[i] = qbuf[i + 1]
    s.qn -= 1
    if s.qn == 0:
        s.qh = 0
    _publish_queue(s)


@njit(cache=True)
def _publish_queue(s):
    """Where the queue is in qbuf, for the Python side (simengine.local.external)."""
    s.ctl[CTL_QH] = s.qh
    s.ctl[CTL_QN] = s.qn


@njit(cache=True)
def act_preempt(s, j, t, how):
    """Stop running job j now: ``how`` 0 kills it, 1 requeues it (it restarts from scratch), 2
    suspends it (it resumes on its processors); the cluster's preemption overhead applies."""
    if s.state[j] != RUNNING:
        return ACT_NOT_RUNNING
    _preempt(s, j, t, how == 2, how == 1, s.overhead if how else 0.0, False)
    s.ctl[CTL_NFREE] = s.nfree
    _publish_queue(s)
    return ACT_OK


@njit(cache=True)
def act_timer(s, at, t):
    """Wake the pass at ``at`` (not before now)."""
    if at < t:
        return ACT_PAST
    _push(s, at, EV_TIMER, -1, 0)
    return ACT_OK


@njit(cache=True)
def victims(s, t, below):
    """Running jobs that may be preempted for a job of priority ``below``, in the order the
    compiled passes take them (simengine.local.core's one victim order)."""
    return _victim_order(s, t, below)


@njit(cache=True)
def free_profile(s, t, still_running, exclude):
    """The free processors from t by plan (running jobs until their planned end -- but the jobs
    of ``exclude`` --, accepted reservations over their windows): step times and free counts.
    ``still_running``: a job due to end now is planned one overrun step on."""
    for j in exclude:
        s.excl[j] = True
    out = _view(s, t, still_running, exclude.shape[0] > 0, -1)
    for j in exclude:
        s.excl[j] = False
    return out


@njit(cache=True)
def backfill_limits(s, t, head, after):
    """For p = 0 .. nfree: until when p processors stay free from t by plan (running jobs, live
    reservations; fit_limits), with waiting job ``head`` (-1: none) held at its earliest fit at or
    after ``after`` (NaN: from when it may start, _head_after) -- the limits the EASY pass
    backfills by."""
    times, free = _view(s, t, False, False, -1)
    if head >= 0:
        if after != after:
            after = _head_after(s, head, t)
        times, free = _shadow_view(s, t, head, after, times, free)
    lim = np.empty(s.nfree + 1)
    lim[0] = INF
    fit_limits(times, free, t, s.nfree, lim)
    return lim


@njit(cache=True)
def own_free(s, j, exclude):
    """Are suspended job j's processors free (the jobs of ``exclude`` counted as gone)?"""
    for v in exclude:
        s.excl[v] = True
    out = _procs_free(s, j, exclude.shape[0] > 0)
    for v in exclude:
        s.excl[v] = False
    return out


@njit(cache=True)
def own_free_each(s, ids):
    """For each job of ``ids``: not suspended, or its processors are free (it may start now)."""
    out = np.ones(ids.shape[0], np.bool_)
    for k in range(ids.shape[0]):
        if s.state[ids[k]] == SUSPENDED:
            out[k] = _procs_free(s, ids[k], False)
    return out


@njit(cache=True)
def own_free_at(s, j, t):
    """When every processor of suspended job j is expected to be free, by plan."""
    return _identity_free_at(s, j, t)


# ---- the loop ---------------------------------------------------------------------------------------


@njit(cache=True)
def advance(s, until, report_every, fresh):
    """Run the event loop until nothing is left to happen or the horizon (FINISHED), until the
    first event at or after ``until`` (REACHED_UNTIL), or, when ``report_every`` > 0, until that
    many event times have passed since the last report (REPORT_DUE, with ``report_t``: the
    next event's time; ``fresh``: count from this call on). Call again to go on."""
    n = s.n
    if fresh:
        s.countdown = report_every
    overruns = np.empty(16, np.int64)
    ov_gen = np.empty(16, np.int64)
    cancels = np.empty(16, np.int64)
    while True:
        t = s.submit[s.arrived] if s.arrived < n else INF
        if s.nev and s.ev_t[0] < t:
            t = s.ev_t[0]
        if s.requested < s.nar and s.ar_req[s.requested] < t:
            t = s.ar_req[s.requested]
        status, a_start = s.ar_status, s.ar_start
        for r in range(s.nar):
            if status[r] == AR_ACCEPTED and a_start[r] < t:
                t = a_start[r]
        if s.cons and s.next_start < t:
            t = s.next_start
        if t == INF or t > s.horizon or (s.nover == n and s.nlive_ar == 0 and s.horizon == INF and s.nuser_ar < s.nar):
            s.finished = True
            return FINISHED
        if t >= until:
            s.report_t = t
            return REACHED_UNTIL
        if report_every > 0:
            s.countdown -= 1
            if s.countdown <= 0:
                s.countdown = report_every + 1  # this event time is counted again on the way back
                s.report_t = t
                return REPORT_DUE
        if s.cons:
            lp_advance(t, s.nt, s.L, s.fs, s.S)
        s.early = False
        s.repaired = False
        freed = False
        ext_hi = -INF
        # 1. completions and reservation ends; cancellations; overruns (conservative)
        nov = 0
        ncan = 0
        while s.nev and s.ev_t[0] <= t:
            kind, ident, gen = _pop(s)
            if kind == EV_JOB_END:
                if gen == s.gen[ident] and s.state[ident] == RUNNING:
                    _finish(s, ident, t)
                    freed = True
            elif kind == EV_AR_END:
                _close_window(s, ident, t)
                freed = True
            elif kind == EV_CANCEL:  # (after the completions: a job ending as it is cancelled completes)
                if ncan == cancels.shape[0]:
                    cancels = _grown(cancels, 16)
                cancels[ncan] = ident
                ncan += 1
            elif kind == EV_TIMER:
                if s.ctl[CTL_TIMER_LOGGED] == 0:
                    _log(s, LOG_TIMER, -1)
                    s.ctl[CTL_TIMER_LOGGED] = 1
            else:
                if nov == overruns.shape[0]:
                    overruns = _grown(overruns, 16)
                    ov_gen = _grown(ov_gen, 16)
                overruns[nov] = ident
                ov_gen[nov] = gen
                nov += 1
        for i in range(ncan):
            if _cancel(s, cancels[i], t):
                freed = True
        for i in range(nov):
            j, gen = overruns[i], ov_gen[i]
            if gen != s.gen[j] or s.state[j] != RUNNING or s.pend[j] != t:
                continue
            new_end = planned_end(s.run_start[j], s.pplan[j], t, s.step, True)
            s.pend[j] = new_end
            plan_from_now(j, t, s.pend, s.size, s.enode, s.nt, s.nf, s.L, s.fs, s.S)
            _push(s, new_end, EV_OVERRUN, j, gen)
            if new_end > ext_hi:
                ext_hi = new_end
        if ext_hi > t:
            _repair(s, t, ext_hi)
        # 2. reservation requests
        while s.requested < s.nar and s.ar_req[s.requested] <= t:
            _admit(s, s.requested, t)
            s.requested += 1
        # 3. relaxed reservations slide earlier when processors came free
        if freed:
            _slide(s, t)
        # 4. reservation windows starting now
        for r in range(s.nar):
            if s.ar_status[r] == AR_ACCEPTED and s.ar_start[r] <= t:
                _open_window(s, r, t)
        # 5. arrivals
        first_new = s.arrived
        while s.arrived < n and s.submit[s.arrived] <= t:
            if s.state[s.arrived] == WAITING:  # (not cancelled at its submission)
                s.state[s.arrived] = QUEUED
                _log(s, LOG_SUBMIT, s.arrived)
                s.nwait += 1
            s.arrived += 1
        # 6. one scheduling pass
        if s.policy == EXTERNAL:
            for j in range(first_new, s.arrived):
                if s.state[j] == QUEUED:
                    _enqueue(s, j)
            # (a pass at every event time, as the compiled ones: a stale event's instant too -- plans
            # of overrunning jobs move with the clock)
            if not s.lazy or (s.nwait > 0 and s.nfree > 0) or 2 * s.ctl[CTL_NLOG] >= s.log_kind.shape[0]:
                s.decide_t[0] = t
                s.ctl[CTL_NFREE] = s.nfree
                _publish_queue(s)
                return DECIDE
        elif s.cons:
            _pass_conservative(s, t, first_new, s.arrived)
        else:
            for j in range(first_new, s.arrived):
                if s.state[j] == QUEUED:
                    _enqueue(s, j)
            _pass_queue(s, t)
