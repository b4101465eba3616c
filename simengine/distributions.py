"""Probability distributions for synthetic workloads (MODELS.md §1).

Every distribution is a small pydantic model tagged by ``kind`` so that a scenario
can name it in JSON/YAML (``{"kind": "exponential", "mean": 100}``) and the schema
validates its parameters. All of them offer the same methods:

``sample(rng, n)``
    ``n`` draws as a float64 array, vectorized (one numpy call, no Python loop per draw).
``mean()``
    The exact (analytic) mean.
``min_value()`` / ``max_value()``
    The bounds of the support (``inf`` when unbounded).

:data:`Distribution` is the discriminated union a scenario field uses; parse a plain
dict with :func:`parse_distribution`. :func:`processor_counts`,
:func:`processor_count_mean` and :func:`processor_count_max` describe a distribution
used for job *sizes*, whose draws are rounded up to whole processors (at least 1).
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

__all__ = [
    "Exponential",
    "Uniform",
    "Constant",
    "Choice",
    "Empirical",
    "HyperExponential",
    "BoundedPareto",
    "RSD",
    "LogNormal",
    "Weibull",
    "Distribution",
    "DISTRIBUTION_KINDS",
    "parse_distribution",
    "bounded_pareto_mean",
    "processor_counts",
    "processor_count_mean",
    "processor_count_max",
]


class _Dist(BaseModel):
    """Behaviour shared by every distribution."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def mean(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def min_value(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def max_value(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def support(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(values, probabilities)`` for a discrete distribution, ``None`` for a continuous one."""
        return None

    def sf(self, x: np.ndarray) -> np.ndarray:
        """Survival function P(X > x), vectorized."""
        values, probs = self.support()  # discrete default; continuous kinds override
        x = np.asarray(x, dtype=np.float64)
        order = np.argsort(values)
        v, p = values[order], probs[order]
        tail = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])
        return tail[np.searchsorted(v, x, side="right")]

    def integer_valued(self) -> bool:
        """True when every possible draw is a whole number."""
        s = self.support()
        return s is not None and bool(np.all(s[0] == np.round(s[0])))

    def support_size(self) -> float:
        """How many values :meth:`support` lists (``inf`` for a continuous distribution), known
        without listing them (kinds whose support is not the list they were given override this)."""
        s = self.support()
        return math.inf if s is None else float(len(s[0]))

    def count_mean(self) -> float:
        """E[max(1, ceil X)], the mean of :func:`processor_counts` of the draws, in bounded work.

        Up to :data:`EXACT_TERMS` terms it is summed term by term over the support or over
        ``1 + sum_{k>=1} P(X > k)`` (as it always was, to the last bit); a larger support is
        summed in closed form (kinds with a large support override :meth:`_large_count_mean`).
        """
        try:
            return self._count_mean()
        except ArithmeticError:  # (parameters at the floats' ends: the mean cannot be told; never a 500)
            return math.nan

    def _count_mean(self) -> float:
        size = self.support_size()
        if size <= EXACT_TERMS:
            values, probs = self.support()
            return _dot(np.maximum(np.ceil(values), 1.0), probs)
        if math.isinf(size) and self.max_value() <= EXACT_TERMS + 1:  # continuous, small
            k = np.arange(1, max(1, math.ceil(self.max_value())), dtype=np.float64)
            return float(1.0 + self.sf(k).sum())
        return self._large_count_mean()

    def _large_count_mean(self) -> float:
        s = self.support()  # a support listed in the document (choice, empirical): linear in its size
        if s is None:  # a new kind with a large support gives its sum in closed form (or bounded work)
            raise NotImplementedError(f"{type(self).__name__}: no bounded count mean for a large support")
        values, probs = s
        return _dot(np.maximum(np.ceil(values), 1.0), probs)


class _HalfLine(_Dist):
    """A continuous distribution on [0, inf)."""

    def min_value(self) -> float:
        return 0.0

    def max_value(self) -> float:
        return math.inf


#: Supports of up to this many whole numbers are summed term by term (microseconds; the values every
#: existing scenario's arrival rate was solved with); larger ones, up to 10^308, in closed form or a
#: few thousand terms: a size's parameters must not choose the work of validating it (issue 34).
EXACT_TERMS = 1 << 16


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """a . b: BLAS for short vectors (the bits every existing scenario had); past 4,096 numpy's own
    sum -- a threaded BLAS dot took 9 ms for 15,000 values on 2 busy cores (measured 2026-12-06)."""
    return float(np.dot(a, b)) if len(a) <= 4096 else float(np.sum(a * b))


def _inv_expm1(x: float) -> float:
    """1 / (e^x - 1) for x > 0, 0 where e^x overflows."""
    return 0.0 if x > 700.0 else 1.0 / math.expm1(x)


def _draws(n: int) -> int:
    n = int(n)
    if n < 0:
        raise ValueError(f"cannot draw a negative number of samples ({n})")
    return n


class Exponential(_HalfLine):
    """Exponential with the given mean (rate 1/mean)."""

    kind: Literal["exponential"] = Field("exponential", description="Distribution kind: exponential")
    mean_: float = Field(alias="mean", gt=0, description="Mean m > 0 (rate 1/m)")

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        allow_inf_nan=False,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    def sample(self, rng, n):
        return rng.exponential(self.mean_, _draws(n))

    def mean(self) -> float:
        return float(self.mean_)

    def sf(self, x):
        x = np.asarray(x, dtype=np.float64)
        return np.where(x < 0, 1.0, np.exp(-np.maximum(x, 0) / self.mean_))

    def _large_count_mean(self) -> float:
        return 1.0 + _inv_expm1(1.0 / self.mean_)  # 1 + sum_{k>=1} e^(-k/m), geometric


class Uniform(_Dist):
    """Uniform on [low, high); with ``integer: true`` uniform on the whole numbers low..high inclusive."""

    kind: Literal["uniform"] = Field("uniform", description="Distribution kind: uniform")
    low: float = Field(description="Lower bound (inclusive)")
    high: float = Field(description="Upper bound, > low (exclusive); with integer: ≥ low and inclusive")
    integer: bool = Field(
        False, description="Draw whole numbers low..high inclusive (low and high must be whole)")

    @model_validator(mode="after")
    def _check(self):
        if self.integer:
            for name in ("low", "high"):
                if getattr(self, name) != math.floor(getattr(self, name)):
                    raise ValueError(f"{name} must be a whole number when integer is true")
            if self.high < self.low:
                raise ValueError("high must be at least low")
        elif self.high <= self.low:
            raise ValueError("high must be greater than low")
        return self

    def sample(self, rng, n):
        n = _draws(n)
        if self.integer:
            return rng.integers(int(self.low), int(self.high), size=n, endpoint=True).astype(np.float64)
        return rng.uniform(self.low, self.high, n)

    def mean(self) -> float:
        return (self.low + self.high) / 2.0

    def min_value(self) -> float:
        return float(self.low)

    def max_value(self) -> float:
        return float(self.high)

    def support(self):
        if not self.integer:
            return None
        values = np.arange(int(self.low), int(self.high) + 1, dtype=np.float64)
        return values, np.full(len(values), 1.0 / len(values))

    def support_size(self) -> float:
        return float(self.high) - float(self.low) + 1.0 if self.integer else math.inf

    def integer_valued(self) -> bool:
        return self.integer

    def sf(self, x):
        if self.integer:
            if self.support_size() <= EXACT_TERMS:
                return super().sf(x)
            x = np.asarray(x, dtype=np.float64)  # (whole numbers above x) / (all of them)
            above = self.high - np.maximum(np.floor(x), self.low - 1.0)
            return np.clip(above / self.support_size(), 0.0, 1.0)
        x = np.asarray(x, dtype=np.float64)
        return np.clip((self.high - x) / (self.high - self.low), 0.0, 1.0)

    def _large_count_mean(self) -> float:
        low, high = float(self.low), float(self.high)
        if self.integer:  # the whole numbers low..high, each counted as max(1, value)
            if low >= 1.0:
                return (low + high) / 2.0
            ones = min(high, 1.0) - low + 1.0  # values <= 1
            rest = (high - 1.0) * (high + 2.0) / 2.0 if high >= 2.0 else 0.0  # 2 + ... + high
            return (ones + rest) / self.support_size()
        # 1 + sum_{k=1}^{m} P(X > k) over k < high: 1 for k <= low, then linear down to high
        m = float(math.ceil(high) - 1)
        flat = min(max(math.floor(low), 0.0), m)
        count = m - flat
        mid = (flat + 1.0 + m) / 2.0
        return 1.0 + flat + count / (high - low) * (high - mid)


class Constant(_Dist):
    """Always ``value``."""

    kind: Literal["constant"] = Field("constant", description="Distribution kind: constant")
    value: float = Field(description="The value every draw takes")

    def sample(self, rng, n):
        return np.full(_draws(n), float(self.value))

    def mean(self) -> float:
        return float(self.value)

    def min_value(self) -> float:
        return float(self.value)

    def max_value(self) -> float:
        return float(self.value)

    def support(self):
        return np.array([float(self.value)]), np.array([1.0])


class Choice(_Dist):
    """One of ``values``, with probabilities proportional to ``weights`` (equal when omitted)."""

    kind: Literal["choice"] = Field("choice", description="Distribution kind: choice")
    values: list[float] = Field(min_length=1, description="The possible values, at least one")
    weights: list[float] | None = Field(
        None, description="Relative weights, one per value, non-negative, not all zero; empty: equal weights")

    @model_validator(mode="after")
    def _check(self):
        if self.weights is not None:
            if len(self.weights) != len(self.values):
                raise ValueError(
                    f"weights must have one entry per value ({len(self.values)}), got {len(self.weights)}"
                )
            if any(w < 0 for w in self.weights):
                raise ValueError("weights must not be negative")
            if sum(self.weights) <= 0:
                raise ValueError("weights must not all be zero")
        return self

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        values = np.asarray(self.values, dtype=np.float64)
        w = np.ones(len(values)) if self.weights is None else np.asarray(self.weights, dtype=np.float64)
        return values, w / w.sum()

    def sample(self, rng, n):
        values, probs = self._arrays
        return values[rng.choice(len(values), size=_draws(n), p=probs)]

    def mean(self) -> float:
        values, probs = self._arrays
        return float(np.dot(values, probs))

    def min_value(self) -> float:
        values, probs = self._arrays
        return float(values[probs > 0].min())

    def max_value(self) -> float:
        values, probs = self._arrays
        return float(values[probs > 0].max())

    def support(self):
        return self._arrays


class Empirical(_Dist):
    """Resample ``values`` uniformly with replacement (e.g. a column of a trace)."""

    kind: Literal["empirical"] = Field("empirical", description="Distribution kind: empirical")
    values: list[float] = Field(
        min_length=1, description="Values drawn uniformly with replacement (e.g. a trace column); ≥ 1")

    @field_validator("values", mode="before")
    @classmethod
    def _from_array(cls, v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return v.astype(np.float64).ravel().tolist()
        return v

    @cached_property
    def _array(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.float64)

    def sample(self, rng, n):
        a = self._array
        return a[rng.integers(0, len(a), size=_draws(n))]

    def mean(self) -> float:
        return float(self._array.mean())

    def min_value(self) -> float:
        return float(self._array.min())

    def max_value(self) -> float:
        return float(self._array.max())

    def support(self):
        a = self._array
        return a, np.full(len(a), 1.0 / len(a))


class HyperExponential(_HalfLine):
    """With probability ``p[i]`` an exponential of mean ``means[i]``."""

    kind: Literal["hyperexponential"] = Field(
        "hyperexponential", description="Distribution kind: hyperexponential")
    p: list[float] = Field(
        min_length=1, description="Branch probabilities p_i: non-negative, summing to 1, one per mean")
    means: list[float] = Field(min_length=1, description="Means m_i > 0 of the exponential branches")

    @model_validator(mode="after")
    def _check(self):
        if len(self.p) != len(self.means):
            raise ValueError(
                f"p and means must have the same length (got {len(self.p)} and {len(self.means)})"
            )
        if any(x < 0 for x in self.p):
            raise ValueError("p must not be negative")
        if abs(sum(self.p) - 1.0) > 1e-6:
            raise ValueError(f"p must sum to 1 (got {sum(self.p):g})")
        if any(m <= 0 for m in self.means):
            raise ValueError("means must all be greater than 0")
        return self

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        p = np.asarray(self.p, dtype=np.float64)
        return p / p.sum(), np.asarray(self.means, dtype=np.float64)

    def sample(self, rng, n):
        p, means = self._arrays
        branch = rng.choice(len(p), size=_draws(n), p=p)
        return rng.exponential(means[branch])

    def mean(self) -> float:
        p, means = self._arrays
        return float(np.dot(p, means))

    def sf(self, x):
        p, means = self._arrays
        x = np.asarray(x, dtype=np.float64)
        out = np.exp(-np.maximum(x, 0)[..., None] / means) @ p
        return np.where(x < 0, 1.0, out)

    def _large_count_mean(self) -> float:
        p, means = self._arrays
        return 1.0 + float(sum(pi * _inv_expm1(1.0 / m) for pi, m in zip(p, means)))


#: Terms of a power sum added one by one before Euler-Maclaurin takes over (its error past
#: k = 4096 is below 1e-15 of the sum for every alpha).
_POWER_HEAD = 4096


def _power_sum(low: float, alpha: float, first: float, last: float) -> float:
    """sum_{k=first}^{last} (low / k)^alpha over whole k >= 1, in bounded work."""
    head_end = min(last, first + _POWER_HEAD - 1)
    k = np.arange(first, head_end + 1.0, dtype=np.float64)
    total = float(np.sum((low / k) ** alpha))
    if head_end >= last:
        return total
    n, m, a = head_end + 1.0, last, alpha

    def f(x: float) -> float:
        return (low / x) ** a

    e, t = a - 1.0, math.log(m / n)
    grow = t if e == 0 else -math.expm1(-e * t) / e  # int_n^m (low/x)^a dx = low (low/n)^e grow
    integral = low * (low / n) ** e * grow
    # Euler-Maclaurin: f^(2j-1)(x) = -a(a+1)...(a+2j-2) f(x) / x^(2j-1); B2/2!, B4/4!, B6/6!
    d1 = [a, a * (a + 1) * (a + 2), a * (a + 1) * (a + 2) * (a + 3) * (a + 4)]
    corrections = 0.0
    for coeff, rising, power in zip((1 / 12, -1 / 720, 1 / 30240), d1, (1, 3, 5)):
        corrections += coeff * rising * (f(n) / n**power - f(m) / m**power)
    return total + integral + (f(n) + f(m)) / 2.0 + corrections


def bounded_pareto_mean(alpha: float, low: float, high: float) -> float:
    """Mean of the bounded Pareto BP(alpha, low, high)."""
    r = low / high
    try:
        if abs(alpha - 1.0) < 1e-12:
            return low * math.log(high / low) / (1.0 - r)
        return (
            alpha * low**alpha / (1.0 - r**alpha) * (low ** (1.0 - alpha) - high ** (1.0 - alpha)) / (alpha - 1.0)
        )
    except ArithmeticError:  # (alpha 1e-300, low 1e-300, ...: powers past the floats; never a 500)
        return _bounded_pareto_mean_logs(alpha, low, high)


def _bounded_pareto_mean_logs(alpha: float, low: float, high: float) -> float:
    """The same mean, low * alpha / (1 - rho^alpha) * (1 - rho^(alpha-1)) / (alpha - 1) with rho =
    low / high, in logarithms: finite wherever the mean is (nan where it cannot be told)."""
    try:
        ell = math.log(low) - math.log(high)  # ln rho < 0
        x = alpha * ell
        a = -1.0 / ell if x == 0.0 else alpha / -math.expm1(x)  # alpha / (1 - rho^alpha)
        y = (alpha - 1.0) * ell
        if y == 0.0:
            return low * a * -ell
        if y < 700.0:
            return low * a * -math.expm1(y) / (alpha - 1.0)
        # alpha < 1 far from 1: low rho^(alpha-1) = low^alpha high^(1-alpha), the -low negligible
        return a * math.exp(alpha * math.log(low) + (1.0 - alpha) * math.log(high)) / (1.0 - alpha)
    except (ArithmeticError, ValueError):
        return math.nan


class BoundedPareto(_Dist):
    """Bounded Pareto BP(alpha, low, high).

    Give ``low`` directly, or ``mean`` and let ``low`` be solved so that the
    distribution has that mean (Zikos & Karatza: alpha 1.5, high 100, mean 1 gives
    low 0.354). After validation ``low`` always holds the value used.
    Sampling uses the inverse CDF ``x = L / (1 - u (1 - (L/H)^alpha))^(1/alpha)``.
    """

    kind: Literal["bounded_pareto"] = Field("bounded_pareto", description="Distribution kind: bounded_pareto")
    alpha: float = Field(gt=0, description="Shape α > 0")
    high: float = Field(gt=0, description="Upper bound H, > low")
    low: float | None = Field(None, gt=0, description="Lower bound L > 0; give low, or mean and L is solved")
    mean_: float | None = Field(None, alias="mean", gt=0,
                                description="The mean, 0 < mean < high: low is solved to give it")

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        allow_inf_nan=False,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    @model_validator(mode="after")
    def _check(self):
        if self.low is None and self.mean_ is None:
            raise ValueError("give low, or mean (and low is solved for)")
        if self.mean_ is not None:
            if self.mean_ >= self.high:
                raise ValueError("mean must be less than high")
            solved = self._solve_low(self.alpha, self.high, self.mean_)
            if self.low is None:
                self.low = solved
            elif abs(self.low - solved) > 1e-9 * max(1.0, solved):
                actual = bounded_pareto_mean(self.alpha, self.low, self.high)
                raise ValueError(
                    f"low and mean disagree (with low={self.low:g} the mean is {actual:g}); "
                    "give only one of them"
                )
        if self.high <= self.low:
            raise ValueError("high must be greater than low")
        return self

    @staticmethod
    def _solve_low(alpha: float, high: float, mean: float) -> float:
        def f(low: float) -> float:
            return bounded_pareto_mean(alpha, low, high) - mean

        lo, hi = high * 1e-15, high * (1.0 - 1e-12)
        if f(lo) >= 0 or f(hi) <= 0:
            raise ValueError(f"no low gives mean {mean:g} with alpha {alpha:g} and high {high:g}")
        from scipy.optimize import brentq  # only for a bounded Pareto given by its mean (~0.1 s to import)

        return float(brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))

    def sample(self, rng, n):
        u = rng.random(_draws(n))
        a, low, high = self.alpha, self.low, self.high
        return low / (1.0 - u * (1.0 - (low / high) ** a)) ** (1.0 / a)

    def mean(self) -> float:
        return float(bounded_pareto_mean(self.alpha, self.low, self.high))

    def min_value(self) -> float:
        return float(self.low)

    def max_value(self) -> float:
        return float(self.high)

    def sf(self, x):
        a, low, high = self.alpha, self.low, self.high
        x = np.clip(np.asarray(x, dtype=np.float64), low, high)
        r = (low / high) ** a
        return ((low / x) ** a - r) / (1.0 - r)

    def _large_count_mean(self) -> float:
        # 1 + sum_{k=1}^{m} P(X > k): 1 for k <= low, then ((low/k)^a - r) / (1 - r)
        a, low, high = self.alpha, self.low, self.high
        m = float(math.ceil(high) - 1)
        flat = min(max(math.floor(low), 0.0), m)
        r = (low / high) ** a
        count = m - flat
        if count <= 0:
            return 1.0 + flat
        return 1.0 + flat + (_power_sum(low, a, flat + 1.0, m) - r * count) / (1.0 - r)


class RSD(_Dist):
    """Realistic Synthetic Distribution RSD(low, high, q) of job sizes.

    P(i) is proportional to q**i for whole i in [low, high], times 3 when i is a
    power of two (1 = 2**0 counts). RSD(1, 32, 0.9) has mean 6.95.
    """

    kind: Literal["rsd"] = Field("rsd", description="Distribution kind: rsd")
    low: int = Field(ge=1, description="Smallest value, a whole number ≥ 1")
    high: int = Field(ge=1, description="Largest value, a whole number ≥ low")
    q: float = Field(gt=0, description="Decay q > 0: P(i) ∝ q^i, times 3 at powers of two")

    @model_validator(mode="after")
    def _check(self):
        if self.high < self.low:
            raise ValueError("high must be at least low")
        return self

    @cached_property
    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        i = np.arange(self.low, self.high + 1, dtype=np.int64)
        # q**(i - low) instead of q**i: same proportions, no underflow for large i.
        w = self.q ** (i - self.low).astype(np.float64) * np.where((i & (i - 1)) == 0, 3.0, 1.0)
        return i.astype(np.float64), w / w.sum()

    def sample(self, rng, n):
        if self.support_size() > EXACT_TERMS:
            return self._sample_large(rng, _draws(n))
        values, probs = self._arrays
        return values[rng.choice(len(values), size=_draws(n), p=probs)]

    def _geometric(self) -> tuple[float, float, float, float]:
        """(n, base, step, lambda): value = base + step * j, weight rho^j, j = 0..n-1, lambda = ln rho
        <= 0 (counted from the heavier end: low when q <= 1, high when q > 1)."""
        n = float(self.high - self.low + 1)
        base, step = (self.low, 1.0) if self.q <= 1.0 else (self.high, -1.0)
        return n, float(base), step, -abs(math.log(self.q))

    def _powers(self, base: float, step: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
        """The powers of two in [low, high] and their extra weight (3 x the weight: 2 more)."""
        p = [2**i for i in range(int(self.high).bit_length()) if self.low <= 2**i <= self.high]
        values = np.array(p, dtype=np.float64)
        return values, 2.0 * np.exp(lam * step * (values - base))

    def _sample_large(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # a mixture: the truncated geometric (inverse CDF) or a power of two's extra weight; no
        # array of every value (a support of 10^9 needed 16 GB)
        size, base, step, lam = self._geometric()
        powers, extra = self._powers(base, step, lam)
        geometric = size if lam == 0.0 else -math.expm1(size * lam) / -math.expm1(lam)
        u, v = rng.random(n), rng.random(n)
        if lam == 0.0:
            j = np.floor(v * size)
        else:
            j = np.floor(np.log1p(v * math.expm1(size * lam)) / lam)
        out = base + step * np.minimum(j, size - 1.0)
        atom = u * (geometric + extra.sum()) >= geometric
        if atom.any():
            out[atom] = powers[rng.choice(len(powers), size=int(atom.sum()), p=extra / extra.sum())]
        return out

    def mean(self) -> float:
        if self.support_size() > EXACT_TERMS:
            return self._large_count_mean()  # (every value is a whole number >= 1)
        values, probs = self._arrays
        return float(np.dot(values, probs))

    def min_value(self) -> float:
        return float(self.low)

    def max_value(self) -> float:
        return float(self.high)

    def support(self):
        return self._arrays

    def support_size(self) -> float:
        return float(self.high - self.low + 1)

    def integer_valued(self) -> bool:
        return True

    def _large_count_mean(self) -> float:
        """The mean in closed form: a truncated geometric series plus the powers of two's extra
        weight. Counted from the heavier end (low when q <= 1, high when q > 1), value = base +
        step j with weight rho^j, rho <= 1, j = 0..n-1."""
        n, base, step, lam = self._geometric()
        if lam == 0.0:
            total, mean_j = n, (n - 1.0) / 2.0
        else:
            total = -math.expm1(n * lam) / -math.expm1(lam)  # sum rho^j
            if n * -lam < 1e-2:  # (the closed form below cancels; its series)
                mean_j = (n - 1.0) / 2.0 + (n * n - 1.0) * lam / 12.0 - (n**4 - 1.0) * lam**3 / 720.0
            else:
                mean_j = _inv_expm1(-lam) - n * _inv_expm1(-n * lam)
        powers, extra = self._powers(base, step, lam)
        return float((total * (base + step * mean_j) + np.dot(extra, powers)) / (total + extra.sum()))


class LogNormal(_HalfLine):
    """Log-normal with the given (arithmetic) ``mean`` and log-scale standard deviation ``sigma``.

    The underlying normal has mean mu = ln(mean) - sigma**2 / 2.
    """

    kind: Literal["lognormal"] = Field("lognormal", description="Distribution kind: lognormal")
    mean_: float = Field(alias="mean", gt=0, description="Arithmetic mean > 0")
    sigma: float = Field(gt=0, description="σ > 0: standard deviation of the underlying normal (log scale)")

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        allow_inf_nan=False,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    @property
    def mu(self) -> float:
        return math.log(self.mean_) - self.sigma**2 / 2.0

    def sample(self, rng, n):
        return rng.lognormal(self.mu, self.sigma, _draws(n))

    def mean(self) -> float:
        return float(self.mean_)

    def sf(self, x):
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            z = (np.log(np.maximum(x, 0.0)) - self.mu) / (self.sigma * math.sqrt(2.0))
        from scipy.special import erfc  # (importing scipy.special costs every run ~0.13 s: only here)
        return np.where(x <= 0, 1.0, 0.5 * erfc(z))

    def _large_count_mean(self) -> float:
        # 1 + sum_{k>=1} P(X > k): the first EXACT_TERMS terms one by one, the rest as the midpoint
        # integral E[(X - c)^+] (closed form) with its first Euler-Maclaurin correction
        k = np.arange(1, EXACT_TERMS + 1, dtype=np.float64)
        head = float(self.sf(k).sum())
        c = EXACT_TERMS + 0.5
        s, mu = self.sigma, self.mu
        d2 = (mu - math.log(c)) / s

        def phi(d: float) -> float:  # standard normal CDF
            return 0.5 * math.erfc(-d / math.sqrt(2.0))

        excess = self.mean_ * phi(d2 + s) - c * phi(d2)
        density = math.exp(-0.5 * d2 * d2) / (c * s * math.sqrt(2.0 * math.pi))
        return 1.0 + head + max(excess, 0.0) - density / 24.0


class Weibull(_HalfLine):
    """Weibull with ``scale`` λ and ``shape`` k: P(X > x) = exp(-(x/λ)^k); k < 1 gives the decreasing
    hazard of the failure traces' times between failures, k = 1 is the exponential of mean λ."""

    kind: Literal["weibull"] = Field("weibull", description="Distribution kind: weibull")
    scale: float = Field(gt=0, description="Scale λ > 0 (s): P(X > x) = exp(-(x/λ)^k)")
    shape: float = Field(gt=0, description="Shape k > 0: below 1 a decreasing hazard, 1 the exponential, above 1 "
                                           "an increasing one")

    def sample(self, rng, n):
        return self.scale * rng.weibull(self.shape, _draws(n))

    def mean(self) -> float:
        try:
            return float(self.scale * math.gamma(1.0 + 1.0 / self.shape))
        except OverflowError:  # (a shape at the floats' end: Γ(1 + 1/k) has no float)
            return math.inf

    def sf(self, x):
        x = np.asarray(x, dtype=np.float64)
        return np.exp(-np.power(np.maximum(x, 0.0) / self.scale, self.shape))

    def _large_count_mean(self) -> float:
        # 1 + sum_{k>=1} P(X > k): the first EXACT_TERMS terms one by one, the rest as the midpoint
        # integral of the survival function from c on, (λ/k) Γ(1/k) Q(1/k, (c/λ)^k)
        from scipy.special import gamma, gammaincc  # (as LogNormal.sf: only when needed)
        k = np.arange(1, EXACT_TERMS + 1, dtype=np.float64)
        head = float(self.sf(k).sum())
        c = EXACT_TERMS + 0.5
        a = 1.0 / self.shape
        z = (c / self.scale) ** self.shape
        tail = self.scale * a * float(gamma(a)) * float(gammaincc(a, z))
        density = self.shape / self.scale * (c / self.scale) ** (self.shape - 1.0) * math.exp(-z)
        return 1.0 + head + tail - density / 24.0  # (the midpoint rule's first correction)


Distribution = Annotated[
    Union[Exponential, Uniform, Constant, Choice, Empirical, HyperExponential, BoundedPareto, RSD, LogNormal,
          Weibull],
    Field(discriminator="kind"),
]
"""Any distribution, chosen by its ``kind`` field."""

DISTRIBUTION_KINDS: dict[str, type[_Dist]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        Exponential,
        Uniform,
        Constant,
        Choice,
        Empirical,
        HyperExponential,
        BoundedPareto,
        RSD,
        LogNormal,
        Weibull,
    )
}

_ADAPTER: TypeAdapter = TypeAdapter(Distribution)


def parse_distribution(data: Any) -> _Dist:
    """Validate a dict such as ``{"kind": "rsd", "low": 1, "high": 32, "q": 0.9}`` into a distribution."""
    if isinstance(data, _Dist):
        return data
    return _ADAPTER.validate_python(data)


# --- distributions used for processor counts ------------------------------------------------


def processor_counts(draws: np.ndarray) -> np.ndarray:
    """Turn draws into processor counts: round up to a whole number, at least 1 (int64)."""
    return np.maximum(np.ceil(np.asarray(draws, dtype=np.float64)), 1.0).astype(np.int64)


def processor_count_max(dist: _Dist) -> float:
    """Largest processor count ``dist`` can produce (``inf`` when unbounded)."""
    m = dist.max_value()
    return m if math.isinf(m) else float(max(1.0, math.ceil(m)))


def processor_count_mean(dist: _Dist) -> float:
    """Exact mean of :func:`processor_counts` applied to draws of ``dist``: E[max(1, ceil X)].

    Discrete distributions: summed over the support. Continuous ones: ``1 + sum_{k>=1} P(X > k)``.
    In bounded work whatever the parameters (:meth:`_Dist.count_mean`): term by term up to
    :data:`EXACT_TERMS` terms, in closed form past them (to about 1e-12).
    """
    return dist.count_mean()
