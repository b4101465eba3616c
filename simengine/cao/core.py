"""The compiled event loop of Cao's system (MODELS.md §6; the rules: simengine/cao/engine.py's
module docstring and docs/cao.md).

The whole simulation -- every cluster's slice calendar, its three class layers with their
plans in virtual time, the class queues, RARS-HEFT's placement of workflow tasks and the
propagation on task completion -- lives in one numba StructRef (:class:`State`) and runs in
compiled code: :func:`advance` handles events until none is left, until a given time (the live
Gantt's slices) or until a progress report is due, and can be called again to go on.

It is a line-by-line translation of the plain-Python event loop it replaced, kept as the tests'
oracle (tests/simengine/reference_cao.py); tests/simengine/test_cao_core.py checks that both
give the same schedules. Python lists became arrays: a class layer ``L = cluster * 3 + class``
owns one row of the plan arrays (breakpoints ``pt``, free processors ``pf``), of the queue
(``qb``, in queue order), of the started own-class jobs (``ab``) and foreign jobs (``fb``), and
of the free processors (``freeb``: taking the lowest free ones is what the sorted free list did).
A job's processors are ``pool[poff[j]:poff[j] + n[j]]``; run pieces are appended as they close
(``pc_j``, ``pc_t0``, ``pc_t1``), so each job's pieces are in time order.
"""
from __future__ import annotations

import math

import numpy as np
from numba.experimental import structref

from simengine.cao.engine import (DONE, EPS, EV_ARRIVE, EV_DONE, EV_GRID, EV_SLICE, EV_WAKE, LONG, MEDIUM, QUEUED,
                                  RUNNING, SHORT, SUSPENDED)
from simengine.jit import njit, types

INF = math.inf
#: what advance() stopped for (ADMISSION_DUE: a workflow arrived and the admission is Python's,
#: simengine.cao.admission; ``admit_w`` names it)
FINISHED, REACHED_UNTIL, REPORT_DUE, ADMISSION_DUE = range(4)


@structref.register
class CaoStateType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class State(structref.StructRefProxy):
    """The simulation's state (fields: :data:`FIELDS`); made by :func:`new_state`."""


#: the State's fields, in constructor order
FIELDS = (
    # configuration (CaoParams)
    "C", "P", "I", "ov", "cross_bf", "slpa", "slpb", "maf", "nbp_medium", "nbp_long", "short_limit",
    "medium_limit", "short_slice_max", "medium_share", "propagation", "prop_queue", "late_replan", "Lnom", "offs",
    # (py_admit: workflows' arrivals stop advance() with ADMISSION_DUE instead of the compiled RARS-HEFT)
    "py_admit",
    # jobs (local jobs, then each workflow's tasks): inputs
    "N", "cls", "n", "est", "submit", "wf", "pred_ptr", "pred_j", "pred_comm", "succ_ptr", "succ_j",
    # jobs: state and outcome
    "rem", "rem_est", "lb", "lbv", "jseq", "vstart", "vend", "layer", "state", "run_t0", "foreign", "cluster",
    # (st_pred: a task's predicted start ST; a field named "st" would clash with numba's constructor)
    "st_pred", "est_frame", "lft", "ready", "start", "end", "preemptions", "poff", "promised",
    # workflows: first task, task count, arrival, HEFT order (job ids, per workflow from wf_first - N_local)
    "W", "nlocal", "wf_first", "wf_ntask", "wf_submit", "wf_order",
    # clusters
    "cnow", "vnow", "slice_v0", "cur", "sl_k", "sl_a", "sl_b", "nsl", "slice_idx", "iend", "slice_end",
    "short_slices", "wake_at", "cseq", "in_disp",
    # class layers: plans, queues, started jobs, free processors
    "pt", "pf", "pn", "qb", "qn", "ab", "an", "fb", "fn", "freeb", "nfree",
    # processors of each started job; run pieces
    "pool", "npool", "pc_j", "pc_t0", "pc_t1", "npc",
    # the event heap, ordered by (time, kind, seq)
    "ev_t", "ev_k", "ev_s", "ev_a", "ev_b", "nev",
    # the loop's scalars
    "now", "evseq", "unfinished", "begun", "countdown", "counted", "report_t", "admit_w",
)

structref.define_proxy(State, CaoStateType, list(FIELDS))


def new_state(p, cls, n, runtime, est, submit, cluster, wf, preds, succs, wf_first, wf_ntask, wf_submit, wf_order,
              nlocal, py_admit=False) -> State:
    """A fresh State for CaoParams ``p`` and the jobs' arrays (``cluster``: each local job's
    cluster, -1 for tasks; ``preds``: CSR (ptr, job, comm) in edge order; ``succs``: CSR (ptr, job)).
    ``py_admit``: the workflows' reservations are admitted in Python (see ADMISSION_DUE)."""
    N = len(cls)
    C, P = int(p.clusters), int(p.processors)
    f = np.float64
    S = p.short_slice_max
    med = p.medium_share * (p.interval - S)
    Lnom = np.array([S if S > 0 else p.interval, med, p.interval - S - med], f)
    offs = np.array([0.0, S, S + med], f)
    L = 3 * C
    cap = max(16, 4 * N + 4 * C + 16)
    values = dict(
        C=C, P=P, I=float(p.interval), ov=float(p.overhead), cross_bf=bool(p.cross_slice_backfill),
        slpa=float(p.slpa), slpb=float(p.slpb), maf=float(p.maf), nbp_medium=float(p.nbp_medium),
        nbp_long=float(p.nbp_long), short_limit=float(p.short_limit), medium_limit=float(p.medium_limit),
        short_slice_max=float(p.short_slice_max), medium_share=float(p.medium_share),
        propagation=bool(p.propagation), prop_queue=p.propagation_replan == "queue",
        late_replan=p.late_task == "replan", Lnom=Lnom, offs=offs, py_admit=bool(py_admit),
        N=N, cls=np.ascontiguousarray(cls, np.int64), n=np.ascontiguousarray(n, np.int64),
        est=np.ascontiguousarray(est, f), submit=np.ascontiguousarray(submit, f),
        wf=np.ascontiguousarray(wf, np.int64),
        pred_ptr=np.ascontiguousarray(preds[0], np.int64), pred_j=np.ascontiguousarray(preds[1], np.int64),
        pred_comm=np.ascontiguousarray(preds[2], f), succ_ptr=np.ascontiguousarray(succs[0], np.int64),
        succ_j=np.ascontiguousarray(succs[1], np.int64),
        rem=np.array(runtime, f), rem_est=np.array(est, f), lb=np.array(submit, f), lbv=np.zeros(N),
        jseq=np.zeros(N, np.int64), vstart=np.zeros(N), vend=np.zeros(N), layer=np.array(cls, np.int64),
        state=np.full(N, QUEUED, np.int64), run_t0=np.zeros(N), foreign=np.zeros(N, np.bool_),
        cluster=np.array(cluster, np.int64), st_pred=np.full(N, np.nan), est_frame=np.full(N, np.nan),
        lft=np.full(N, np.nan), ready=np.array(submit, f), start=np.full(N, np.nan), end=np.full(N, np.nan),
        preemptions=np.zeros(N, np.int64), poff=np.full(N, -1, np.int64), promised=np.full(N, np.nan),
        W=len(wf_first), nlocal=int(nlocal), wf_first=np.ascontiguousarray(wf_first, np.int64),
        wf_ntask=np.ascontiguousarray(wf_ntask, np.int64),
        wf_submit=np.ascontiguousarray(wf_submit, f), wf_order=np.ascontiguousarray(wf_order, np.int64),
        cnow=np.zeros(C), vnow=np.zeros((C, 3)), slice_v0=np.zeros(C), cur=np.full(C, -1, np.int64),
        sl_k=np.zeros((C, 3), np.int64), sl_a=np.zeros((C, 3)), sl_b=np.zeros((C, 3)),
        nsl=np.zeros(C, np.int64), slice_idx=np.full(C, -1, np.int64), iend=np.zeros(C),
        slice_end=np.zeros(C), short_slices=np.zeros(C, np.int64), wake_at=np.full(C, INF),
        cseq=np.zeros(C, np.int64), in_disp=np.zeros(C, np.bool_),
        pt=np.zeros((L, 64)), pf=np.full((L, 64), P, np.int64), pn=np.ones(L, np.int64),
        qb=np.empty((L, max(N, 1)), np.int64), qn=np.zeros(L, np.int64),
        ab=np.empty((L, P), np.int64), an=np.zeros(L, np.int64),
        fb=np.empty((L, P), np.int64), fn=np.zeros(L, np.int64),
        freeb=np.ones((L, P), np.bool_), nfree=np.full(L, P, np.int64),
        pool=np.empty(max(1, int(np.sum(n))), np.int64), npool=0,
        pc_j=np.empty(cap, np.int64), pc_t0=np.empty(cap), pc_t1=np.empty(cap), npc=0,
        ev_t=np.empty(cap), ev_k=np.empty(cap, np.int64), ev_s=np.empty(cap, np.int64),
        ev_a=np.empty(cap, np.int64), ev_b=np.empty(cap, np.int64), nev=0,
        now=0.0, evseq=0, unfinished=N, begun=False, countdown=0, counted=False, report_t=np.nan, admit_w=-1,
    )
    return _make(*(values[k] for k in FIELDS))


@njit(cache=True)
def _make(*fields):
    """The State (built in compiled code, so its constructor comes from numba's cache too)."""
    return State(*fields)


@njit(cache=True)
def outputs(s):
    """What the Python side reads after a call of advance(): the pieces so far, the job
    arrays that change, and the loop's counters."""
    return (s.pc_j[:s.npc], s.pc_t0[:s.npc], s.pc_t1[:s.npc], s.pool, s.poff, s.state, s.start, s.end,
            s.run_t0, s.cluster, s.layer, s.ready, s.preemptions, s.foreign, s.st_pred, s.est_frame, s.lft,
            s.promised, s.short_slices, s.evseq, s.unfinished, s.now, s.report_t)


# ---- small helpers ----------------------------------------------------------------------------------


@njit(cache=True)
def _mx(a, b):
    """Python's max(a, b): the first unless the second is greater."""
    return b if b > a else a


@njit(cache=True)
def _mn(a, b):
    """Python's min(a, b)."""
    return b if b < a else a


@njit(cache=True)
def _grown(a, k):
    b = np.empty(max(2 * a.shape[0], k), a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(cache=True)
def _pfss(w, L, ov):
    """Preemptions of a job with ``w`` s of work that starts at a slice start, slices >= ``L``."""
    if w <= L + EPS:
        return 0
    return math.ceil((w - L) / (L - ov) - EPS)


@njit(cache=True)
def _push(s, t, kind, a, b):
    if s.nev == s.ev_t.shape[0]:
        s.ev_t = _grown(s.ev_t, 16)
        s.ev_k = _grown(s.ev_k, 16)
        s.ev_s = _grown(s.ev_s, 16)
        s.ev_a = _grown(s.ev_a, 16)
        s.ev_b = _grown(s.ev_b, 16)
    s.evseq += 1
    seq = s.evseq
    i = s.nev
    s.nev += 1
    et, ek, es = s.ev_t, s.ev_k, s.ev_s
    while i > 0:
        p = (i - 1) // 2
        if et[p] < t or (et[p] == t and (ek[p] < kind or (ek[p] == kind and es[p] < seq))):
            break
        et[i], ek[i], es[i], s.ev_a[i], s.ev_b[i] = et[p], ek[p], es[p], s.ev_a[p], s.ev_b[p]
        i = p
    et[i], ek[i], es[i], s.ev_a[i], s.ev_b[i] = t, kind, seq, a, b


@njit(cache=True)
def _pop(s):
    """Take the earliest event off the heap: (time, kind, a, b)."""
    et, ek, es, ea, eb = s.ev_t, s.ev_k, s.ev_s, s.ev_a, s.ev_b
    out = (et[0], ek[0], ea[0], eb[0])
    s.nev -= 1
    m = s.nev
    if m > 0:
        t, k, q, a, b = et[m], ek[m], es[m], ea[m], eb[m]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= m:
                break
            if c + 1 < m and (et[c + 1] < et[c] or (et[c + 1] == et[c] and (
                    ek[c + 1] < ek[c] or (ek[c + 1] == ek[c] and es[c + 1] < es[c])))):
                c += 1
            if t < et[c] or (t == et[c] and (k < ek[c] or (k == ek[c] and q < es[c]))):
                break
            et[i], ek[i], es[i], ea[i], eb[i] = et[c], ek[c], es[c], ea[c], eb[c]
            i = c
        et[i], ek[i], es[i], ea[i], eb[i] = t, k, q, a, b
    return out


@njit(cache=True)
def _piece(s, j, t0, t1):
    if s.npc == s.pc_t0.shape[0]:
        s.pc_j = _grown(s.pc_j, 16)
        s.pc_t0 = _grown(s.pc_t0, 16)
        s.pc_t1 = _grown(s.pc_t1, 16)
    s.pc_j[s.npc] = j
    s.pc_t0[s.npc] = t0
    s.pc_t1[s.npc] = t1
    s.npc += 1


# ---- plans: step functions of free processors over a class's virtual time (one row per layer) ------


@njit(cache=True)
def _bisect_left(t, n, x):
    a, b = 0, n
    while a < b:
        m = (a + b) // 2
        if t[m] < x:
            a = m + 1
        else:
            b = m
    return a


@njit(cache=True)
def _bisect_right(t, n, x):
    a, b = 0, n
    while a < b:
        m = (a + b) // 2
        if x < t[m]:
            b = m
        else:
            a = m + 1
    return a


@njit(cache=True)
def _grow_plans(s, cols):
    """Room for ``cols`` breakpoints in every layer's plan."""
    m = s.pt.shape[1]
    pt = np.empty((s.pt.shape[0], cols))
    pf = np.empty((s.pt.shape[0], cols), np.int64)
    pt[:, :m] = s.pt
    pf[:, :m] = s.pf
    s.pt = pt
    s.pf = pf


@njit(cache=True)
def _split(s, L, x):
    """The breakpoint index at ``x`` (one within EPS is reused), inserted when missing."""
    t = s.pt[L]
    n = s.pn[L]
    if x <= t[0]:
        return 0
    i = _bisect_left(t, n, x)
    if i < n and t[i] - x <= EPS:
        return i
    if t[i - 1] >= x - EPS:
        return i - 1
    if n == s.pt.shape[1]:
        _grow_plans(s, 2 * n)
        t = s.pt[L]
    f = s.pf[L]
    for k in range(n, i, -1):
        t[k] = t[k - 1]
        f[k] = f[k - 1]
    t[i] = x
    f[i] = f[i - 1]
    s.pn[L] = n + 1
    return i


@njit(cache=True)
def _add(s, L, a, b, k):
    """``k`` more free processors on [a, b) (negative: allocate)."""
    if b - a <= EPS or k == 0:
        return
    i = _split(s, L, a)
    j = _split(s, L, b)
    f = s.pf[L]
    for x in range(i, j):
        f[x] += k


@njit(cache=True)
def _release(s, L, a, b, k):
    t0 = s.pt[L, 0]
    _add(s, L, a if a > t0 else t0, b, k)


@njit(cache=True)
def _min_free(s, L, a, b):
    t, f, n = s.pt[L], s.pf[L], s.pn[L]
    i = _bisect_right(t, n, a + EPS) - 1
    if i < 0:
        i = 0
    m = f[i]
    i += 1
    while i < n and t[i] < b - EPS:
        if f[i] < m:
            m = f[i]
        i += 1
    return m


@njit(cache=True)
def _any_free(s, L, a, b, k):
    """Whether ``k`` processors are free at some instant of [a, b)."""
    t, f, n = s.pt[L], s.pf[L], s.pn[L]
    i = _bisect_right(t, n, a + EPS) - 1
    if i < 0:
        i = 0
    if f[i] >= k:
        return True
    i += 1
    while i < n and t[i] < b - EPS:
        if f[i] >= k:
            return True
        i += 1
    return False


@njit(cache=True)
def _fit(s, L, lb, k, d_first, d_later, first):
    """Earliest (start, end), start >= lb, with ``k`` processors free on [start, end); the
    duration is ``d_first`` for a start at ``first`` (or before), ``d_later`` after."""
    t, f, nt = s.pt[L], s.pf[L], s.pn[L]
    x = _mx(lb, t[0])
    i = _bisect_right(t, nt, x + EPS) - 1
    if i < 0:
        i = 0
    while True:
        e = x + (d_first if x <= first + EPS else d_later)
        q = i
        ok = True
        while True:
            if f[q] < k:
                ok = False
                break
            q += 1
            if q >= nt or t[q] >= e - EPS:
                break
        if ok:
            return x, e
        x = t[q + 1]
        i = q + 1


@njit(cache=True)
def _set_plan(s, L, origin, a, b, k, m):
    """The plan of layer L: ``k[i]`` processors taken on each [a[i], b[i]) of the first m."""
    P = s.P
    xs = np.empty(2 * m)
    ds = np.empty(2 * m, np.int64)
    w = 0
    for i in range(m):
        if b[i] - a[i] > EPS and k[i] != 0:
            xs[w] = a[i]
            ds[w] = -k[i]
            xs[w + 1] = b[i]
            ds[w + 1] = k[i]
            w += 2
    if w + 1 > s.pt.shape[1]:
        _grow_plans(s, 2 * (w + 1))
    t, f = s.pt[L], s.pf[L]
    t[0] = origin
    f[0] = P
    nt = 1
    if w:
        # by time (the order of equal times does not matter: they end up in one breakpoint)
        order = np.argsort(xs[:w], kind="mergesort")
        x2 = xs[:w][order]
        d2 = ds[:w][order]
        cur = P
        for r in range(w):
            cur += d2[r]
            if x2[r] - t[nt - 1] <= EPS:
                f[nt - 1] = cur
            else:
                t[nt] = x2[r]
                f[nt] = cur
                nt += 1
    s.pn[L] = nt


# ---- a cluster's time: virtual time of each class ------------------------------------------------------


@njit(cache=True)
def _advance_to(s, ci, t):
    if t > s.cnow[ci]:
        if s.cur[ci] >= 0:
            s.vnow[ci, s.cur[ci]] += t - s.cnow[ci]
        s.cnow[ci] = t


@njit(cache=True)
def _v_of(s, ci, c, t):
    """Virtual time of class ``c`` at real time ``t`` (calendar: this interval, then nominal)."""
    now = s.cnow[ci]
    if t <= now:
        return s.vnow[ci, c]
    v = s.vnow[ci, c]
    for x in range(s.nsl[ci]):
        if s.sl_k[ci, x] == c:
            a, b = s.sl_a[ci, x], s.sl_b[ci, x]
            lo = a if a > now else now
            hi = b if b < t else t
            if hi > lo:
                v += hi - lo
    if t <= s.iend[ci]:
        return v
    r = t - s.iend[ci]
    k = math.floor(r / s.I)
    rr = r - k * s.I
    L = s.Lnom[c]
    return v + k * L + _mn(_mx(rr - s.offs[c], 0.0), L)


@njit(cache=True)
def _t_of(s, ci, c, v, end):
    """Real time of class ``c``'s virtual ``v`` (a start maps to a slice start, an end to a slice end)."""
    now = s.cnow[ci]
    r = v - s.vnow[ci, c]
    if r < 0:
        r = 0.0
    for x in range(s.nsl[ci]):
        a, b = s.sl_a[ci, x], s.sl_b[ci, x]
        if s.sl_k[ci, x] != c or b <= now:
            continue
        a2 = a if a > now else now
        ln = b - a2
        if r < ln - EPS or (end and r <= ln + EPS):
            return a2 + r
        r -= ln
    L = s.Lnom[c]
    k = math.floor(r / L + EPS)
    rr = r - k * L
    if rr < EPS:
        rr = 0.0
        if end and k > 0:
            k -= 1
            rr = L
    return s.iend[ci] + k * s.I + s.offs[c] + rr


@njit(cache=True)
def _dur(s, ci, c, x, w):
    """Upper bound on the virtual time a job of class ``c`` with ``w`` s of work needs from ``x``."""
    if w <= 0:
        return 0.0
    L = s.Lnom[c]
    ov = s.ov
    if x <= s.vnow[ci, c] + EPS:
        if s.cur[ci] == c:
            a = s.slice_end[ci] - s.cnow[ci]
            if w <= a + EPS:
                return w
            y = w - a + ov
            return a + y + ov * _pfss(y, L, ov)
        return w + ov * _pfss(w, L, ov)
    y = w + ov
    return y + ov * _pfss(y, L, ov)


# ---- dependencies ------------------------------------------------------------------------------------


@njit(cache=True)
def _dep_time(s, j, predicted):
    d = -INF
    for q in range(s.pred_ptr[j], s.pred_ptr[j + 1]):
        pj = s.pred_j[q]
        comm = s.pred_comm[q]
        if s.state[pj] == DONE:
            d = _mx(d, s.end[pj] + comm)
        elif predicted:
            c = s.cluster[pj]
            if c < 0:
                c += s.C  # (a task not placed yet: the reference's clusters[-1])
            d = _mx(d, _t_of(s, c, s.layer[pj], s.vend[pj], True) + comm)
        else:
            return INF
    return d


@njit(cache=True)
def _deps_met(s, j, t):
    r = -INF
    for q in range(s.pred_ptr[j], s.pred_ptr[j + 1]):
        pj = s.pred_j[q]
        if s.state[pj] != DONE:
            return False
        r = _mx(r, s.end[pj] + s.pred_comm[q])
    return r <= t + EPS


@njit(cache=True)
def _preds_done(s, j):
    for q in range(s.pred_ptr[j], s.pred_ptr[j + 1]):
        if s.state[s.pred_j[q]] != DONE:
            return False
    return True


# ---- planning ----------------------------------------------------------------------------------------


@njit(cache=True)
def _vbound(s, ci, j):
    """Earliest virtual start the plan may give j: its frame's EST and its predecessors'
    predicted finish + comm."""
    c = s.cls[j]
    b = _mx(s.lbv[j], s.vnow[ci, c])
    if s.pred_ptr[j + 1] > s.pred_ptr[j]:
        d = _dep_time(s, j, True)
        if d > s.cnow[ci]:
            b = _mx(b, _v_of(s, ci, c, d))
    return b


@njit(cache=True)
def _place(s, ci, j, cap, lb, has_lb):
    """Plan j at its earliest fit from its bound (or ``lb``), the bound capped by ``cap``."""
    c = s.cls[j]
    x = _mn(lb if has_lb else _vbound(s, ci, j), cap)
    vn = s.vnow[ci, c]
    a, b = _fit(s, ci * 3 + c, x, s.n[j], _dur(s, ci, c, vn, s.rem_est[j]), _dur(s, ci, c, INF, s.rem_est[j]), vn)
    _add(s, ci * 3 + c, a, b, -s.n[j])
    s.vstart[j] = a
    s.vend[j] = b


@njit(cache=True)
def _held(s, ci, c, extra):
    """Virtual intervals of layer c held from now by started (active, foreign) jobs, with room
    for ``extra`` more; sets their planned ends. Returns (starts, ends, sizes, count)."""
    L = ci * 3 + c
    vn = s.vnow[ci, c]
    now = s.cnow[ci]
    m = s.an[L] + s.fn[L]
    a = np.empty(m + extra)
    b = np.empty(m + extra)
    k = np.empty(m + extra, np.int64)
    w = 0
    for q in range(s.an[L]):
        j = s.ab[L, q]
        if s.state[j] == SUSPENDED:
            e = vn + _dur(s, ci, c, vn, s.rem_est[j])
        else:
            left = s.rem_est[j] - (now - s.run_t0[j])
            e = vn + _dur(s, ci, s.cls[j], s.vnow[ci, s.cls[j]], _mx(left, 0.0))
        a[w], b[w], k[w] = vn, e, s.n[j]
        s.vend[j] = e
        w += 1
    for q in range(s.fn[L]):
        j = s.fb[L, q]
        left = _mx(s.rem_est[j] - (now - s.run_t0[j]), 0.0)
        a[w], b[w], k[w] = vn, vn + left, s.n[j]
        s.vend[j] = vn + left
        w += 1
    return a, b, k, w


@njit(cache=True)
def _replan(s, ci, c, late, nlate):
    """Plan class c's queue again from scratch, in queue order (each job at its earliest fit
    from its bound); a task of ``late[:nlate]`` whose bound has passed waits one virtual second."""
    L = ci * 3 + c
    vn = s.vnow[ci, c]
    a, b, k, m = _held(s, ci, c, 0)
    _set_plan(s, L, vn, a, b, k, m)
    for q in range(s.qn[L]):
        j = s.qb[L, q]
        x = _vbound(s, ci, j)
        if x <= vn + EPS:
            for y in range(nlate):
                if late[y] == j:
                    x = vn + 1.0
                    break
        _place(s, ci, j, INF, x, True)


@njit(cache=True)
def _rebuild(s, ci, c):
    """Compress class c's plan: started jobs from now, then each queued job (in queue order)
    to its earliest fit, never later than its current slot."""
    L = ci * 3 + c
    vn = s.vnow[ci, c]
    nq = s.qn[L]
    a, b, k, m = _held(s, ci, c, nq)
    for q in range(nq):
        j = s.qb[L, q]
        x = _mx(s.vstart[j], vn)
        s.vstart[j] = x
        s.vend[j] = x + _dur(s, ci, c, x, s.rem_est[j])
        a[m], b[m], k[m] = s.vstart[j], s.vend[j], s.n[j]
        m += 1
    _set_plan(s, L, vn, a, b, k, m)
    for q in range(nq):
        j = s.qb[L, q]
        x = _vbound(s, ci, j)
        if ((s.vstart[j] <= x + EPS or not _any_free(s, L, x, s.vstart[j], s.n[j]))
                and _min_free(s, L, s.vstart[j], s.vend[j]) >= 0):
            continue  # its slot holds and nothing is free before it: it cannot move
        _release(s, L, s.vstart[j], s.vend[j], s.n[j])
        _place(s, ci, j, s.vstart[j], 0.0, False)


@njit(cache=True)
def _submit(s, ci, j):
    """A local job or a reserved task joins its class queue (planned at its earliest fit)."""
    c = s.cls[j]
    L = ci * 3 + c
    s.cseq[ci] += 1
    s.jseq[j] = s.cseq[ci]
    s.lbv[j] = _v_of(s, ci, c, s.lb[j])
    s.qb[L, s.qn[L]] = j
    s.qn[L] += 1
    _place(s, ci, j, INF, 0.0, False)
    s.promised[j] = _t_of(s, ci, c, s.vstart[j], False)


# ---- slices ------------------------------------------------------------------------------------------


@njit(cache=True)
def _new_interval(s, ci, t):
    L = ci * 3 + SHORT
    has = False
    big = 0.0
    for q in range(s.qn[L]):
        x = s.est[s.qb[L, q]]
        if not has or x > big:
            big = x
        has = True
    for q in range(s.an[L]):
        x = s.rem_est[s.ab[L, q]]
        if not has or x > big:
            big = x
        has = True
    S = _mn(s.short_slice_max, big) if has else 0.0
    rest = s.I - S
    m = s.medium_share * rest
    s.iend[ci] = t + s.I
    w = 0
    if S > 0:
        s.sl_k[ci, 0], s.sl_a[ci, 0], s.sl_b[ci, 0] = SHORT, t, t + S
        w = 1
        s.short_slices[ci] += 1
    s.sl_k[ci, w], s.sl_a[ci, w], s.sl_b[ci, w] = MEDIUM, t + S, t + S + m
    s.sl_k[ci, w + 1], s.sl_a[ci, w + 1], s.sl_b[ci, w + 1] = LONG, t + S + m, t + s.I
    s.nsl[ci] = w + 2
    s.slice_idx[ci] = -1


@njit(cache=True)
def _end_slice(s, ci, t):
    c = s.cur[ci]
    L = ci * 3 + c
    ov = s.ov
    s.vnow[ci, c] = s.slice_v0[ci] + (t - s.sl_a[ci, s.slice_idx[ci]])  # no drift
    for q in range(s.an[L]):
        j = s.ab[L, q]
        if s.state[j] != RUNNING:
            continue
        ran = t - s.run_t0[j]
        if ran > EPS:
            _piece(s, j, s.run_t0[j], t)
        s.rem[j] -= ran
        s.rem_est[j] -= ran
        s.state[j] = SUSPENDED
        s.rem[j] += ov
        s.rem_est[j] += ov
        s.preemptions[j] += 1
    if s.fn[L]:
        raise RuntimeError("a foreign job still running at the end of a slice")


@njit(cache=True)
def _next_slice(s, ci, t):
    """End the current slice (suspending its running jobs) and begin the next; returns its end."""
    _advance_to(s, ci, t)
    if s.cur[ci] >= 0:
        _end_slice(s, ci, t)
    s.slice_idx[ci] += 1
    if s.slice_idx[ci] >= s.nsl[ci]:
        _new_interval(s, ci, t)
        s.slice_idx[ci] = 0
    x = s.slice_idx[ci]
    c, b = s.sl_k[ci, x], s.sl_b[ci, x]
    s.cur[ci] = c
    s.slice_end[ci] = b
    s.slice_v0[ci] = s.vnow[ci, c]
    s.wake_at[ci] = INF
    L = ci * 3 + c
    for q in range(s.an[L]):
        j = s.ab[L, q]
        s.state[j] = RUNNING
        s.run_t0[j] = t
        if s.rem[j] <= b - t + EPS:
            _push(s, _mn(t + s.rem[j], b), EV_DONE, ci, j)  # never after the slice end
    _dispatch(s, ci)
    return b


# ---- jobs --------------------------------------------------------------------------------------------


@njit(cache=True)
def _start(s, ci, j, layer):
    t = s.cnow[ci]
    L = ci * 3 + layer
    s.layer[j] = layer
    off = s.npool
    s.npool += s.n[j]
    w = 0
    fr = s.freeb[L]
    for p in range(s.P):  # the lowest free processors of the layer
        if w == s.n[j]:
            break
        if fr[p]:
            fr[p] = False
            s.pool[off + w] = p
            w += 1
    s.nfree[L] -= s.n[j]
    s.poff[j] = off
    s.state[j] = RUNNING
    s.run_t0[j] = t
    s.start[j] = t
    s.cluster[j] = ci
    if layer == s.cls[j]:
        s.ab[L, s.an[L]] = j
        s.an[L] += 1
        if s.rem[j] <= s.slice_end[ci] - t + EPS:
            _push(s, _mn(t + s.rem[j], s.slice_end[ci]), EV_DONE, ci, j)
    else:
        s.foreign[j] = True
        s.fb[L, s.fn[L]] = j
        s.fn[L] += 1
        _push(s, _mn(t + s.rem[j], s.slice_end[ci]), EV_DONE, ci, j)


@njit(cache=True)
def _complete(s, ci, j):
    t = s.cnow[ci]
    if t - s.run_t0[j] > EPS:
        _piece(s, j, s.run_t0[j], t)
    s.rem[j] = 0.0
    s.state[j] = DONE
    s.end[j] = t
    c = s.layer[j]
    L = ci * 3 + c
    fr = s.freeb[L]
    for i in range(s.poff[j], s.poff[j] + s.n[j]):
        fr[s.pool[i]] = True
    s.nfree[L] += s.n[j]
    early = s.vend[j] - s.vnow[ci, c] > EPS
    if s.foreign[j]:
        buf, m = s.fb[L], s.fn[L]
        s.fn[L] -= 1
    else:
        buf, m = s.ab[L], s.an[L]
        s.an[L] -= 1
    k = 0
    while buf[k] != j:
        k += 1
    for x in range(k, m - 1):
        buf[x] = buf[x + 1]
    if early:
        _rebuild(s, ci, c)  # processors freed before the plan expected: compress
    _job_done(s, j)


@njit(cache=True)
def _job_done(s, j):
    s.unfinished -= 1
    for q in range(s.succ_ptr[j], s.succ_ptr[j + 1]):
        x = s.succ_j[q]
        if s.state[x] != QUEUED or not _preds_done(s, x):
            continue
        s.ready[x] = _dep_time(s, x, False)
        ci = s.cluster[x]
        _advance_to(s, ci, s.now)
        if s.propagation:
            # Algorithm 2: the successor's EST becomes its predecessors' finish + comm
            c = s.cls[x]
            s.lb[x] = s.ready[x]
            s.lbv[x] = _v_of(s, ci, c, s.ready[x])
            s.est_frame[x] = s.ready[x]
            L = ci * 3 + c
            queued = False
            for y in range(s.qn[L]):
                if s.qb[L, y] == x:
                    queued = True
                    break
            if queued:
                if s.prop_queue:
                    _replan(s, ci, c, np.empty(0, np.int64), 0)  # it takes the place its queue position gives it
                else:
                    _rebuild(s, ci, c)  # it may slide earlier into holes
        if s.ready[x] > s.now + EPS:
            _push(s, s.ready[x], EV_WAKE, ci, -1)
        elif ci != s.cluster[j]:
            _dispatch(s, ci)


@njit(cache=True)
def _dispatch(s, ci):
    """Start what the plan of the active class says is due, then cross-slice backfill."""
    if s.in_disp[ci]:
        return
    s.in_disp[ci] = True
    c = s.cur[ci]
    L = ci * 3 + c
    t = s.cnow[ci]
    vn = s.vnow[ci, c]
    late = np.empty(s.qn[L] + 1, np.int64)
    for attempt in range(3):
        mismatch = False
        nlate = 0
        i = 0
        while i < s.qn[L]:
            j = s.qb[L, i]
            if s.vstart[j] > vn + EPS:
                i += 1
                continue
            if s.pred_ptr[j + 1] > s.pred_ptr[j] and not _deps_met(s, j, t):
                if _preds_done(s, j):
                    i += 1  # only the communication is left: it waits in its slot
                    continue
                if s.late_replan:  # it keeps its queue position: the class is re-planned below
                    if nlate == late.shape[0]:
                        late = _grown(late, 16)
                    late[nlate] = j
                    nlate += 1
                    i += 1
                    continue
                # due before its predecessors have finished: its earliest fit after their
                # predicted finish (+ comm), around everybody else's slots
                _release(s, L, s.vstart[j], s.vend[j], s.n[j])
                _place(s, ci, j, INF, 0.0, False)
                if s.vstart[j] <= vn + EPS:  # predicted finish already passed: wait for it
                    _release(s, L, s.vstart[j], s.vend[j], s.n[j])
                    s.vstart[j] = vn + 1.0
                    s.vend[j] = vn + 1.0 + _dur(s, ci, c, vn + 1.0, s.rem_est[j])
                    _add(s, L, s.vstart[j], s.vend[j], -s.n[j])
                i += 1
                continue
            if s.nfree[L] < s.n[j]:
                mismatch = True  # the plan no longer matches the layer: re-plan
                i += 1
                continue
            for x in range(i, s.qn[L] - 1):
                s.qb[L, x] = s.qb[L, x + 1]
            s.qn[L] -= 1
            if abs(s.vstart[j] - vn) > EPS:  # started off its planned slot (a late task)
                _release(s, L, s.vstart[j], s.vend[j], s.n[j])
                s.vstart[j] = vn
                s.vend[j] = vn + _dur(s, ci, c, vn, s.rem_est[j])
                _add(s, L, s.vstart[j], s.vend[j], -s.n[j])
                if _min_free(s, L, s.vstart[j], s.vend[j]) < 0:
                    mismatch = True  # it overlaps later slots: they move
            _start(s, ci, j, c)
        if nlate:
            _replan(s, ci, c, late, nlate)  # the late tasks now start after their predecessors
            if attempt < 2:
                continue  # start what the re-plan made due
            break
        if not mismatch or attempt == 2:
            break
        _rebuild(s, ci, c)
    if s.cross_bf:
        _cross_backfill(s, ci, c, t, vn)
    _schedule_wake(s, ci, c, t, vn)
    s.in_disp[ci] = False


@njit(cache=True)
def _cross_backfill(s, ci, c, t, vn):
    L = ci * 3 + c
    left = s.slice_end[ci] - t
    for d in range(3):
        shortest = 0.0 if d == SHORT else (s.short_limit if d == MEDIUM else s.medium_limit)
        Ld = ci * 3 + d
        if d == c or shortest > left + EPS or s.qn[Ld] == 0:
            continue
        moved = False
        i = 0
        while i < s.qn[Ld]:
            j = s.qb[Ld, i]
            nf = s.nfree[L]
            if nf == 0:
                break
            if (s.est[j] <= left + EPS and s.n[j] <= nf
                    and (s.lbv[j] <= s.vnow[ci, d] + EPS or _t_of(s, ci, d, s.lbv[j], False) <= t + EPS)
                    and (s.pred_ptr[j + 1] == s.pred_ptr[j] or _deps_met(s, j, t))
                    and _min_free(s, L, vn, vn + s.est[j]) >= s.n[j]):
                for x in range(i, s.qn[Ld] - 1):
                    s.qb[Ld, x] = s.qb[Ld, x + 1]
                s.qn[Ld] -= 1
                _release(s, Ld, s.vstart[j], s.vend[j], s.n[j])
                _add(s, L, vn, vn + s.est[j], -s.n[j])
                s.vstart[j] = vn
                s.vend[j] = vn + s.est[j]
                _start(s, ci, j, c)
                moved = True
                continue
            i += 1
        if moved:
            _rebuild(s, ci, d)


@njit(cache=True)
def _schedule_wake(s, ci, c, t, vn):
    L = ci * 3 + c
    nxt = INF
    for q in range(s.qn[L]):
        x = s.vstart[s.qb[L, q]]
        if vn + EPS < x < nxt:
            nxt = x
    if nxt < INF:
        w = t + (nxt - vn)
        if w < s.slice_end[ci] - EPS and w < s.wake_at[ci] - EPS:
            s.wake_at[ci] = w
            _push(s, w, EV_WAKE, ci, -1)


# ---- RARS-HEFT ---------------------------------------------------------------------------------------


@njit(cache=True)
def _admission_begin(s):
    """Every cluster's clock to now, before a workflow's tasks are admitted."""
    for ci in range(s.C):
        _advance_to(s, ci, s.now)


@njit(cache=True)
def _task_request(s, t):
    """What task t asks for: (ST_dep, its earliest start by eq. (6): max over predecessors of
    LFT + comm, or now for an entry task; its estimate EXC; its class; its class's NBP)."""
    if s.pred_ptr[t + 1] == s.pred_ptr[t]:
        st_dep = s.now
    else:  # eq. (6)
        q0 = s.pred_ptr[t]
        st_dep = s.lft[s.pred_j[q0]] + s.pred_comm[q0]
        for q in range(q0 + 1, s.pred_ptr[t + 1]):
            st_dep = _mx(st_dep, s.lft[s.pred_j[q]] + s.pred_comm[q])
    c = s.cls[t]
    nbp = s.nbp_long if c == LONG else (s.nbp_medium if c == MEDIUM else 0.0)
    return st_dep, s.est[t], c, nbp


@njit(cache=True)
def _offer(s, t, ci, st_dep):
    """Cluster ci's prediction for task t from ``st_dep`` (the "reservation prediction" of
    §4.6): its class plan's earliest fit, as real (start ST, finish PRT)."""
    c = s.cls[t]
    exc = s.est[t]
    vn = s.vnow[ci, c]
    a, e = _fit(s, ci * 3 + c, _mx(_v_of(s, ci, c, st_dep), vn), s.n[t], _dur(s, ci, c, vn, exc),
                _dur(s, ci, c, INF, exc), vn)
    return _t_of(s, ci, c, a, False), _t_of(s, ci, c, e, True)


@njit(cache=True)
def _grant(s, t, ci, est, lft, st):
    """Task t reserved on cluster ci with the frame [est, lft] (``st``: the predicted start recorded)."""
    s.lft[t], s.est_frame[t], s.st_pred[t], s.lb[t] = lft, est, st, est
    s.cluster[t] = ci
    _submit(s, ci, t)


@njit(cache=True)
def _admission_end(s):
    for ci in range(s.C):
        _dispatch(s, ci)


@njit(cache=True)
def _schedule_workflow(s, w):
    """Reserve every task of workflow w (RARS-HEFT) at its arrival: the compiled admission
    (simengine.cao.admission's ``earliest-lft``)."""
    now = s.now
    _admission_begin(s)
    base = s.wf_first[w] - s.nlocal
    for r in range(s.wf_ntask[w]):
        t = s.wf_order[base + r]
        st_dep, exc, c, nbp = _task_request(s, t)
        b_lft, b_est, b_st, b_c = INF, 0.0, 0.0, -1
        for ci in range(s.C):
            st, prt = _offer(s, t, ci, st_dep)
            est = _mx(st - exc * s.slpa - s.maf * nbp * (st - now), now)  # eq. (5)
            lft = prt + exc * s.slpb  # eq. (4)
            if b_c < 0 or lft < b_lft - EPS:
                b_lft, b_est, b_st, b_c = lft, est, st, ci
        _grant(s, t, b_c, b_est, b_lft, b_st)
    _admission_end(s)


# ---- the admission asked of Python (simengine.cao.admission): entry points called between two
# ---- calls of advance() that stopped with ADMISSION_DUE


@njit(cache=True)
def admission_begin(s):
    """The workflow due (its index) and now, with every cluster's clock at now."""
    _admission_begin(s)
    return s.admit_w, s.now


@njit(cache=True)
def task_request(s, t):
    return _task_request(s, t)


@njit(cache=True)
def offers(s, t, st_dep):
    """Every cluster's (ST, PRT) for task t from ``st_dep`` (arrays by cluster)."""
    st = np.empty(s.C)
    prt = np.empty(s.C)
    for ci in range(s.C):
        st[ci], prt[ci] = _offer(s, t, ci, st_dep)
    return st, prt


@njit(cache=True)
def offer(s, t, ci, st_dep):
    return _offer(s, t, ci, st_dep)


@njit(cache=True)
def grant(s, t, ci, est, lft, st):
    _grant(s, t, ci, est, lft, st)


@njit(cache=True)
def admission_end(s):
    _admission_end(s)
    s.admit_w = -1


@njit(cache=True)
def availability(s, ci, c):
    """Class c's plan on cluster ci in real time: (breakpoints, free processors from each on);
    the last value holds for ever."""
    L = ci * 3 + c
    m = s.pn[L]
    t = np.empty(m)
    f = np.empty(m, np.int64)
    for q in range(m):
        t[q] = _t_of(s, ci, c, s.pt[L, q], False) if q else s.cnow[ci]
        f[q] = s.pf[L, q]
    return t, f


@njit(cache=True)
def class_jobs(s, ci, c):
    """Class c's jobs on cluster ci: queued ones in queue order, then started ones (running or
    suspended): (job rows, planned start, planned end (real time), started)."""
    L = ci * 3 + c
    m = s.qn[L] + s.an[L]
    j = np.empty(m, np.int64)
    a = np.empty(m)
    b = np.empty(m)
    run = np.zeros(m, np.bool_)
    for q in range(s.qn[L]):
        x = s.qb[L, q]
        j[q], a[q], b[q] = x, _t_of(s, ci, c, s.vstart[x], False), _t_of(s, ci, c, s.vend[x], True)
    for q in range(s.an[L]):
        x = s.ab[L, q]
        k = s.qn[L] + q
        j[k], a[k], b[k], run[k] = x, s.start[x], _t_of(s, ci, c, s.vend[x], True), True
    return j, a, b, run


# ---- the loop ----------------------------------------------------------------------------------------


@njit(cache=True)
def advance(s, until, report_every):
    """Handle the events in order until none is left (FINISHED), until the next is at or after
    ``until`` (REACHED_UNTIL), or, when ``report_every`` > 0, before every ``report_every``-th
    event (REPORT_DUE, with ``report_t``: its time). Call again to go on."""
    if not s.begun:
        s.begun = True
        for j in range(s.nlocal):
            _push(s, s.submit[j], EV_ARRIVE, s.cluster[j], j)
        for w in range(s.W):
            _push(s, s.wf_submit[w], EV_GRID, w, -1)
        for ci in range(s.C):
            _push(s, 0.0, EV_SLICE, ci, -1)
        s.countdown = report_every
    while s.nev and s.unfinished > 0:
        t = s.ev_t[0]
        if t >= until:
            return REACHED_UNTIL
        if report_every > 0 and not s.counted:
            s.countdown -= 1
            if s.countdown <= 0:
                s.countdown = report_every
                s.counted = True  # this event is not counted again on the way back
                s.report_t = t
                return REPORT_DUE
        s.counted = False
        t, kind, a, b = _pop(s)
        s.now = t
        if kind == EV_DONE:
            _advance_to(s, a, t)
            if s.state[b] == DONE:
                continue
            _complete(s, a, b)
            _dispatch(s, a)
        elif kind == EV_SLICE:
            end = _next_slice(s, a, t)
            _push(s, end, EV_SLICE, a, -1)
        elif kind == EV_ARRIVE:
            _advance_to(s, a, t)
            _submit(s, a, b)
            _dispatch(s, a)
        elif kind == EV_GRID:
            if s.py_admit:
                s.admit_w = a
                return ADMISSION_DUE  # the caller admits its tasks (admission_begin ... admission_end)
            _schedule_workflow(s, a)
        else:
            _advance_to(s, a, t)
            if s.wake_at[a] <= t + EPS:
                s.wake_at[a] = INF
            _dispatch(s, a)
    for ci in range(s.C):
        _advance_to(s, ci, s.now)
    return FINISHED


@njit(cache=True)
def busy_time(pc_j, pc_t0, pc_t1, order, cluster, n, clusters, w0, w1):
    """Per cluster, processor-seconds of the pieces (taken in ``order``: job by job) over the
    whole run and within [w0, w1], summed in the order the reference summed them."""
    busy = np.zeros(clusters)
    busy_all = np.zeros(clusters)
    for q in range(order.shape[0]):
        k = order[q]
        j = pc_j[k]
        a, b = pc_t0[k], pc_t1[k]
        busy_all[cluster[j]] += n[j] * (b - a)
        lo = _mx(a, w0)
        hi = _mn(b, w1)
        if hi > lo:
            busy[cluster[j]] += n[j] * (hi - lo)
    return busy, busy_all
