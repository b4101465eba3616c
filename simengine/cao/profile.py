"""Free-processor profile of one class layer over that class's *virtual* time.

A class's virtual time advances only while the class's own slice runs (MODELS.md §6), so a
job that is suspended at a slice end and resumed at the next slice of its class occupies one
contiguous virtual interval. The profile is a step function: ``t[i]`` breakpoints, ``f[i]``
free processors on ``[t[i], t[i+1])``; after the last breakpoint ``f[-1]`` holds forever
(it is the capacity once every planned job has ended).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
EPS = 1e-6


class Profile:
    """Step function of free processors over virtual time, from ``t[0]`` on."""

    __slots__ = ("t", "f", "cap")

    def __init__(self, cap: int, origin: float = 0.0):
        self.cap = cap
        self.t = [origin]
        self.f = [cap]

    @classmethod
    def from_intervals(cls, cap: int, origin: float, intervals: list[tuple[float, float, int]]) -> "Profile":
        """The profile with ``n`` processors taken on each ``[s, e)`` (s >= origin)."""
        prof = cls(cap, origin)
        ev = []
        for s, e, n in intervals:
            if e - s > EPS and n:
                ev.append((s, -n))
                ev.append((e, n))
        if not ev:
            return prof
        ev.sort()
        t, f = prof.t, prof.f
        cur = cap
        for x, d in ev:
            cur += d
            if x - t[-1] <= EPS:
                f[-1] = cur
            else:
                t.append(x)
                f.append(cur)
        return prof

    def _split(self, x: float) -> int:
        t = self.t
        if x <= t[0]:
            return 0
        i = bisect_left(t, x)
        if i < len(t) and t[i] - x <= EPS:
            return i
        if t[i - 1] >= x - EPS:  # x is within EPS after a breakpoint: use it
            return i - 1
        t.insert(i, x)
        self.f.insert(i, self.f[i - 1])
        return i

    def add(self, s: float, e: float, n: int) -> None:
        """Add ``n`` free processors on ``[s, e)`` (negative ``n`` allocates)."""
        if e - s <= EPS or n == 0:
            return
        i = self._split(s)
        j = self._split(e)
        f = self.f
        for k in range(i, j):
            f[k] += n

    def alloc(self, s: float, e: float, n: int) -> None:
        self.add(s, e, -n)

    def release(self, s: float, e: float, n: int) -> None:
        self.add(max(s, self.t[0]), e, n)

    def free_at(self, x: float) -> int:
        return self.f[max(0, bisect_right(self.t, x + EPS) - 1)]

    def min_free(self, s: float, e: float) -> int:
        t, f = self.t, self.f
        i = max(0, bisect_right(t, s + EPS) - 1)
        m = f[i]
        i += 1
        while i < len(t) and t[i] < e - EPS:
            if f[i] < m:
                m = f[i]
            i += 1
        return m

    def any_free(self, s: float, e: float, n: int) -> bool:
        """Whether ``n`` processors are free at some instant of ``[s, e)``."""
        t, f = self.t, self.f
        i = max(0, bisect_right(t, s + EPS) - 1)
        if f[i] >= n:
            return True
        i += 1
        nt = len(t)
        while i < nt and t[i] < e - EPS:
            if f[i] >= n:
                return True
            i += 1
        return False

    def fit(self, lb: float, n: int, d_first: float, d_later: float, first: float) -> tuple[float, float]:
        """Earliest ``(s, e)`` with ``s >= lb`` and ``n`` processors free on ``[s, e)``.

        The duration is ``d_first`` for a start at ``first`` (or before) and ``d_later`` for any
        later start (it depends only on whether the start's phase in the slices is known).
        """
        t, f = self.t, self.f
        s = max(lb, t[0])
        i = max(0, bisect_right(t, s + EPS) - 1)
        nt = len(t)
        while True:
            e = s + (d_first if s <= first + EPS else d_later)
            k = i
            ok = True
            while True:
                if f[k] < n:
                    ok = False
                    break
                k += 1
                if k >= nt or t[k] >= e - EPS:
                    break
            if ok:
                return s, e
            # blocked on segment k: the next candidate start is where it ends
            s = t[k + 1]
            i = k + 1

    def trim(self, now: float) -> None:
        """Forget breakpoints before ``now``."""
        i = bisect_right(self.t, now + EPS) - 1
        if i > 0:
            del self.t[:i]
            del self.f[:i]
        if self.t[0] < now:
            self.t[0] = now
