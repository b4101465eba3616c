"""Reservation admission policies for Cao's RARS-HEFT, written against simengine.policy
(docs/policies/reservation-admission.md).

* ``earliest-lft-python``: Cao's own admission, the compiled ``earliest-lft``, written in plain
  Python through the public API -- it gives identical results (tests/simengine/test_policy_admission.py),
  which shows the API sees everything the compiled admission sees.
* ``rigid-frame``: a classic (rigid) advance reservation instead of a relaxed one: the frame
  opens at the predicted start (EST = ST, no slack ahead, so the task never slides earlier than
  its slot by compression) and closes ``behind`` seconds after the predicted finish; the cluster
  with the smallest LFT, as Cao's.
"""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from simengine.policy import Grant, ReservationAdmission, register

#: two times closer than this are the same instant (s), as in the engine
SAME_INSTANT = 1e-6


@register
class EarliestLftPython(ReservationAdmission):
    """Cao's RARS-HEFT admission in plain Python: frame by eqs. (4)-(5) on every cluster, the smallest LFT wins."""

    name = "earliest-lft-python"
    summary = "Cao's RARS-HEFT admission (earliest-lft) in plain Python: eqs. (4)-(5), the smallest LFT wins"

    def admit(self, now, request, offers):
        k = self.knobs
        best = None
        for offer in offers:
            st, prt, exc = offer.start, offer.finish, request.estimate
            est = max(st - exc * k.slpa - k.maf * request.nbp * (st - now), now)  # eq. (5), clamped to now
            lft = prt + exc * k.slpb  # eq. (4)
            if best is None or lft < best.lft - SAME_INSTANT:  # ties: the lowest cluster
                best = Grant(offer.cluster, est, lft)
        return best


class RigidFrameParams(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)
    behind: float = Field(0.0, ge=0, description="Slack after the predicted finish (s): LFT = PRT + behind")


@register
class RigidFrame(ReservationAdmission):
    """Rigid reservations: the frame opens at the predicted start (EST = ST), no sliding earlier."""

    name = "rigid-frame"
    Params = RigidFrameParams
    summary = "Rigid reservations: EST = the predicted start (no slack ahead), LFT = PRT + behind; smallest LFT wins"

    def admit(self, now, request, offers):
        best = min(offers, key=lambda o: (o.finish, o.cluster))
        return Grant(best.cluster, max(best.start, now), best.finish + self.params.behind)
