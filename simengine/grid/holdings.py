"""The grid layer's Gantt: which processors each holding took, at the end of a replication or
slice by slice while it runs (the live Gantt, :func:`feed_live`).

A *holding* is an interval during which a cluster's processors were held: a local job's run
(``run``, or ``killed`` when a global job's deadline attempt killed it) or one component of a
global job, from its claim (or its deadline) to its end, drawn ``claimed`` before the
deadline D and ``run`` from it. Processors are handed out by
:class:`~simengine.gantt.ProcessorAssigner`, one per cluster, whose jobs are *slots*: a local
job's slot is its index (a requeued job takes its slot again), a component's comes after the
local jobs'. Simultaneous starts take processors in slot order, a key known when the holding
starts, so the live Gantt hands out exactly the processors of the Result.
"""
from __future__ import annotations

import math

import numpy as np

from simengine.gantt import EVENT_END, EVENT_START, EVENT_ZERO, KIND_CLAIMED, KIND_KILLED, KIND_RUN, ProcessorAssigner
from simengine.grid import kernel as K
from simengine.streaming import LiveGantt, concat_rows, run_in_slices

#: ``kind`` of a global job's holding (split at D into claimed and run rows)
GLOBAL = -1


class Slots:
    """One processor assigner per cluster; holdings named by (cluster, slot)."""

    def __init__(self, processors, local_cluster: np.ndarray, local_size: np.ndarray, component_size: np.ndarray):
        n = len(local_cluster)
        self.n = n
        self.rank = np.zeros(n, np.int64)  # a local job's slot within its cluster
        self.assigners, self.locals = [], []
        for c, P in enumerate(processors):
            idx = np.flatnonzero(local_cluster == c)
            self.rank[idx] = np.arange(len(idx))
            self.locals.append(len(idx))
            self.assigners.append(ProcessorAssigner(np.concatenate([local_size[idx], component_size]), int(P)))

    def slot(self, cluster: np.ndarray, key: np.ndarray) -> np.ndarray:
        """Slots of holdings keyed by local job index (< n) or n + component index."""
        out = np.asarray(self.locals, np.int64)[cluster] + key - self.n  # components after the local jobs
        local = key < self.n
        out[local] = self.rank[key[local]]
        return out

    def events(self, cluster, slot, starts, ends, t0, t1):
        """Feed a batch: holdings ``starts`` start at ``t0`` (zero-length ones when ``t1`` is
        not later), holdings ``ends`` end at ``t1``. Returns the blocks (holding, cluster,
        first processor, count)."""
        out = []
        for c, assigner in enumerate(self.assigners):
            s = starts[cluster[starts] == c]
            e = ends[cluster[ends] == c]
            if not len(s):
                if len(e):
                    assigner.events(slot[e], np.full(len(e), EVENT_END, np.int8), t1[e])
                continue
            holding = np.concatenate([e, s])
            kinds = np.concatenate([np.full(len(e), EVENT_END, np.int8),
                                    np.where(t1[s] > t0[s], EVENT_START, EVENT_ZERO).astype(np.int8)])
            event, first, count = assigner.events_indexed(slot[holding], kinds, np.concatenate([t1[e], t0[s]]))
            out.append((holding[event], np.full(len(event), c, np.int32), first, count))
        if not out:
            z = np.zeros(0, np.int64)
            return z, np.zeros(0, np.int32), z, z
        return tuple(np.concatenate(p) for p in zip(*out))


def block_rows(h: np.ndarray, t0, t1, D, kind, parts=("local", "claimed", "run")):
    """The Gantt rows of blocks of holdings ``h`` (indices into the holding columns): for each
    part, (block mask, row t0, row t1, row kind). A local holding is one row; a global one
    is claimed before D and run from D."""
    a, b, k, d = t0[h], t1[h], kind[h], D[h]
    g = k == GLOBAL
    out = {}
    if "local" in parts:
        out["local"] = (~g, a, b, k)
    if "claimed" in parts:
        out["claimed"] = (g & (a < d), a, np.minimum(b, d), np.full(len(h), KIND_CLAIMED, np.int8))
    if "run" in parts:
        out["run"] = (g & (b >= d), np.maximum(a, d), b, np.full(len(h), KIND_RUN, np.int8))
    return out


def final_blocks(slots: Slots, cluster, key, t0, t1):
    """Every holding of a finished replication in one batch (``t1`` already cut at its end)."""
    h = np.arange(len(t0))
    positive = h[t1 > t0]
    return slots.events(cluster, slots.slot(cluster, key), h, positive, t0, t1)


class _Holdings:
    """The holdings a running replication has shown so far (columns grow slice by slice, with
    room doubled when full, so a slice costs what it adds, not what came before)."""

    COLUMNS = {"cluster": np.int64, "key": np.int64, "slot": np.int64, "t0": np.float64, "t1": np.float64,
               "D": np.float64, "kind": np.int8}

    def __init__(self):
        self.n = 0
        self.c = {name: np.zeros(1024, dt) for name, dt in self.COLUMNS.items()}

    def add(self, **cols) -> np.ndarray:
        first, m = self.n, len(cols["t0"])
        if first + m > len(self.c["t0"]):
            size = max(2 * len(self.c["t0"]), first + m)
            for name, values in self.c.items():
                grown = np.zeros(size, values.dtype)
                grown[:first] = values[:first]
                self.c[name] = grown
        for name in self.COLUMNS:
            self.c[name][first:first + m] = cols[name]
        self.n += m
        return np.arange(first, first + m)


def feed_live(live: LiveGantt, run, processors, name_local, name_component, horizon: float,
              expected_end: float) -> None:
    """Simulate ``run`` (a :class:`~simengine.grid.model.GridRun`) to its end slice by slice,
    telling ``live`` what each slice showed. ``name_local(i)`` / ``name_component(k)``:
    (job_id, stream, component) of the run's local jobs / components, for the rows.

    A slice costs what changed in it: the local and global jobs looked at are those submitted
    and not yet started or decided (both kinds are taken up roughly in submit order), plus the
    requeued ones; the holdings looked at are those not yet ended."""
    L, Gj = run.local, run.glob
    n_local = len(L)
    slots = Slots(processors, L.cluster, L.size, np.repeat(Gj.size, Gj.components))
    H = _Holdings()
    cur = np.full(n_local, -1, np.int64)  # holding of each local job's current run
    placed = np.zeros(len(Gj), bool)
    comp_job = np.repeat(np.arange(len(Gj)), Gj.components)
    scan = {"local": 0, "global": 0, "kills": 0}  # jobs before these are started (or decided); kills seen
    requeued = np.zeros(0, np.int64)  # killed and requeued: looked at until they start again
    open_holdings = np.zeros(0, np.int64)  # not ended yet
    blocks = {"h": np.zeros(0, np.int64), "cluster": np.zeros(0, np.int32), "first": np.zeros(0, np.int64),
              "count": np.zeros(0, np.int64), "left": np.zeros(0, np.int8)}  # left: parts not sent yet (bits)
    PART_BITS = {"local": 1, "claimed": 2, "run": 4}
    live.restart()
    first = min(L.submit[0] if len(L) else math.inf, Gj.submit[0] if len(Gj) else math.inf)
    live.expect(float(first) if math.isfinite(first) else 0.0, expected_end)

    def new_local_runs(T: float) -> np.ndarray:
        nonlocal requeued
        lo, hi = scan["local"], int(np.searchsorted(L.submit, T, side="left"))
        window = np.arange(lo, max(lo, hi))
        state = run.l_state[window]
        started = (state == K.L_RUNNING) | (state == K.L_DONE)
        waiting = np.flatnonzero(~started & (state != K.L_KILLED))
        scan["local"] = lo + int(waiting[0]) if len(waiting) else max(lo, hi)
        back = requeued[(run.l_state[requeued] == K.L_RUNNING) | (run.l_state[requeued] == K.L_DONE)]
        requeued = requeued[run.l_state[requeued] == K.L_WAITING]
        new = np.union1d(window[started], back)
        return new[cur[new] < 0]

    def new_global_jobs(T: float) -> np.ndarray:
        lo, hi = scan["global"], int(np.searchsorted(Gj.submit, T, side="left"))
        window = np.arange(lo, max(lo, hi))
        state = run.g_state[window]
        waiting = np.flatnonzero(state == K.G_WAITING)
        scan["global"] = lo + int(waiting[0]) if len(waiting) else max(lo, hi)
        new = window[(state == K.G_CLAIMED) | (state == K.G_RUNNING) | (state == K.G_DONE)]
        return new[~placed[new]]

    def report(T: float) -> bool:
        nonlocal blocks, requeued, open_holdings
        F = min(T, horizon)
        starts = []
        # kills: the run of a killed job ends at its kill (requeued jobs start a new run later)
        kj, ks, kt = run.kill_log
        for i, s, k in zip(kj[scan["kills"]:].tolist(), ks[scan["kills"]:].tolist(), kt[scan["kills"]:].tolist()):
            h = cur[i]
            if h >= 0 and H.c["t0"][h] == s:
                H.c["t1"][h], H.c["kind"][h] = k, KIND_KILLED
            else:
                starts.append(H.add(cluster=[L.cluster[i]], key=[i], slot=[0], t0=[s], t1=[k], D=[math.nan],
                                    kind=[KIND_KILLED]))
            cur[i] = -1
        requeued = np.union1d(requeued, kj[scan["kills"]:])  # (dropped ones leave it at once)
        scan["kills"] = len(kj)
        # runs started since the last report (planned to end at start + runtime)
        new = new_local_runs(T)
        if len(new):
            h = H.add(cluster=L.cluster[new], key=new, slot=0, t0=run.l_start[new],
                      t1=run.l_start[new] + L.runtime[new], D=math.nan, kind=KIND_RUN)
            cur[new] = h
            starts.append(h)
        # global jobs placed since the last report: one holding per component
        g_new = new_global_jobs(T)
        if len(g_new):
            placed[g_new] = True
            comps = np.concatenate([np.arange(run.comp_off[g], run.comp_off[g + 1]) for g in g_new])
            g = comp_job[comps]
            starts.append(H.add(cluster=run.comp_cluster[comps], key=n_local + comps, slot=0, t0=run.g_hold[g],
                                t1=Gj.deadline[g] + Gj.runtime[g], D=Gj.deadline[g], kind=GLOBAL))
        starts = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        c = H.c
        if len(starts):
            c["slot"][starts] = slots.slot(c["cluster"][starts], c["key"][starts])
        positive = starts[c["t1"][starts] > c["t0"][starts]]
        open_holdings = np.concatenate([open_holdings, positive])
        ending = c["t1"][open_holdings] < F
        ends, open_holdings = open_holdings[ending], open_holdings[~ending]
        h, cl, first, count = slots.events(c["cluster"], c["slot"], starts, ends, c["t0"], c["t1"])
        if len(h):
            bits = np.where(c["kind"][h] == GLOBAL, PART_BITS["claimed"] | PART_BITS["run"], PART_BITS["local"])
            blocks = {k: np.concatenate([blocks[k], v]) for k, v in
                      (("h", h), ("cluster", cl), ("first", first), ("count", count), ("left", bits.astype(np.int8)))}
        closed, opened = [], []
        for part, (mask, a, b, kind) in block_rows(blocks["h"], c["t0"], c["t1"], c["D"], c["kind"]).items():
            mask = mask & (blocks["left"] & PART_BITS[part] > 0)
            done = mask & (b < F)
            blocks["left"][done] &= ~PART_BITS[part]
            for which, into in ((done, closed), (mask & ~done & (a < F), opened)):
                sel = np.flatnonzero(which)
                if len(sel):
                    into.append(_rows(blocks, sel, a, b, kind, c["key"], n_local, name_local, name_component))
        keep = blocks["left"] != 0
        blocks = {k: v[keep] for k, v in blocks.items()}
        live.update(F, concat_rows(closed), concat_rows(opened), run.queued().tolist())
        return T >= horizon

    run_in_slices(live.begin, expected_end, run.advance, report)
    run.advance(math.inf)


def _rows(blocks, sel, a, b, kind, key, n_local, name_local, name_component):
    k = key[blocks["h"][sel]]
    local = k < n_local
    job_id, stream, component = np.zeros(len(k), np.int64), np.zeros(len(k), np.int32), np.zeros(len(k), np.int16)
    for mask, name in ((local, name_local), (~local, name_component)):
        if mask.any():
            job_id[mask], stream[mask], component[mask] = name(k[mask] - (0 if name is name_local else n_local))
    return {"cluster": blocks["cluster"][sel].astype(np.int16), "first_processor": blocks["first"][sel].astype(np.int32),
            "processors": blocks["count"][sel].astype(np.int32), "t0": a[sel], "t1": b[sel],
            "kind": kind[sel].astype(np.int8), "component": component, "job_id": job_id, "stream": stream}
