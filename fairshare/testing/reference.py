"""Small named reference rounds with their known optimal objective (spec section 3), for every solve path.

Each :class:`ReferenceRound` is a round document small enough to solve by hand, together with the optimum of
section 3's MILP and the reason for it. fairshare's own tests check every optimum by brute force over all
integer placements, then hold every (mode, backend) to it: ``exact`` must reach it, ``fast`` can never beat
it and every ``lp`` relaxation can never fall below it. Users can run their own solve paths or policies on
the same rounds.

Fair shares below follow spec section 2 (water-filling, spread over the usable types in proportion to
capacity); objectives are ``E - lambda * S`` with the default ``lambda = 100`` unless stated.

Examples
--------
>>> r = reference_round("colocation-worth-it")
>>> r.optimum, r.problem.num_jobs
(1.4, 2)
>>> [r.name for r in REFERENCE_ROUNDS][:3]
['one-type', 'two-types', 'gang']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fairshare.errors import InvalidInputError
from fairshare.problem import RoundProblem

__all__ = ["REFERENCE_ROUNDS", "ReferenceRound", "reference_round"]


@dataclass(frozen=True, slots=True)
class ReferenceRound:
    """A named round document with the optimal objective of its section 3 MILP.

    Attributes
    ----------
    name : str
        Short identifier (``"gang"``).
    summary : str
        What the round exercises and why the optimum is what it is.
    text : str
        The round document as JSON text (immutable; :attr:`document` parses a fresh copy).
    optimum : float
        The best objective over every integer placement.
    """

    name: str
    summary: str
    text: str
    optimum: float

    @property
    def document(self) -> dict[str, Any]:
        """A fresh copy of the round document (safe to modify)."""
        doc: dict[str, Any] = json.loads(self.text)
        return doc

    @property
    def problem(self) -> RoundProblem:
        """The validated round."""
        return RoundProblem.from_json(self.text)


def _round(name: str, optimum: float, summary: str, document: dict[str, Any]) -> ReferenceRound:
    return ReferenceRound(name=name, summary=summary, text=json.dumps(document), optimum=optimum)


def _job(jid: str, throughput: dict[str, float], scale: int = 1, **extra: float) -> dict[str, Any]:
    return {"id": jid, "scale": scale, "throughput": throughput, **extra}


REFERENCE_ROUNDS: tuple[ReferenceRound, ...] = (
    _round("one-type", -98.0,
           "Three jobs on two V100s: fair share 2/3 of a GPU each, so a placed job meets its need and one job "
           "is always left out (shortfall 1). E = 2, objective 2 - 100.",
           {"gpus": {"V100": 2}, "jobs": [_job("a", {"V100": 10.0}), _job("b", {"V100": 20.0}),
                                           _job("c", {"V100": 30.0})]}),
    _round("two-types", 1.5 - 100 / 3,
           "Two jobs, one V100 and one K80: fair throughputs 2.5 and 1.5. a on V100 and b on K80 (b short by "
           "1/3) beats the swap (a short by 0.6). E = 1 + 0.5.",
           {"gpus": {"V100": 1, "K80": 1}, "jobs": [_job("a", {"V100": 4.0, "K80": 1.0}),
                                                   _job("b", {"V100": 2.0, "K80": 1.0})]}),
    _round("gang", -94.0,
           "A 4-GPU gang that fits only the four K80s (V100 has 2), a 2-GPU and a 1-GPU job: one job is always "
           "left out; the most efficient choice is the gang on K80 and the 2-GPU job on V100 (E = 4 + 2).",
           {"gpus": {"V100": 2, "K80": 4}, "jobs": [_job("big", {"V100": 20.0, "K80": 8.0}, scale=4),
                                                   _job("mid", {"V100": 10.0, "K80": 4.0}, scale=2),
                                                   _job("small", {"V100": 5.0, "K80": 2.0})]}),
    _round("colocation-worth-it", 1.4,
           "Two jobs, one V100, fair throughput 5 each: sharing the GPU at 7 each meets both needs (progress "
           "1.4); running one alone leaves the other short by 1. E = 0.7 + 0.7.",
           {"gpus": {"V100": 1}, "jobs": [_job("a", {"V100": 10.0}), _job("b", {"V100": 10.0})],
            "colocation": [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [7.0, 7.0]}]}),
    _round("colocation-not-worth-it", 2.0,
           "Two jobs, two V100s: each alone on its own GPU meets its need (E = 2); sharing one GPU at 6 each "
           "would leave both short by 0.4.",
           {"gpus": {"V100": 2}, "jobs": [_job("a", {"V100": 10.0}), _job("b", {"V100": 10.0})],
            "colocation": [{"jobs": ["a", "b"], "gpu": "V100", "throughput": [6.0, 6.0]}]}),
    _round("weights", -49.0,
           "Weights 3 and 1 on one V100 (normalised 1.5 and 0.5; fair throughputs 7.5 and 2.5): the heavy job "
           "runs, the light one is short by 1 at weight 0.5. Objective 1 - 100 * 0.5.",
           {"gpus": {"V100": 1}, "jobs": [_job("a", {"V100": 10.0}, weight=3.0),
                                          _job("b", {"V100": 10.0}, weight=1.0)]}),
    _round("deficits", -199.0,
           "Job b carries a deficit of 2 (need 3) on one V100: running b (progress 2, short by 1) and leaving a "
           "short by 1 beats running a and leaving b short by 3. Objective 1 - 100 * 2.",
           {"gpus": {"V100": 1}, "jobs": [_job("a", {"V100": 10.0}), _job("b", {"V100": 10.0}, deficit=2.0)]}),
    _round("epsilon", 1.4,
           "epsilon = 0.5 halves every need: a on K80 (progress 4/7) and b on V100 (12/7) meet both, so the "
           "shortfall is 0 and the objective is E = 0.4 + 1.",
           {"gpus": {"V100": 1, "K80": 1}, "jobs": [_job("a", {"V100": 10.0, "K80": 4.0}),
                                                   _job("b", {"V100": 12.0, "K80": 2.0})],
            "epsilon": 0.5}),
)


def reference_round(name: str) -> ReferenceRound:
    """The reference round called ``name`` (one of ``[r.name for r in REFERENCE_ROUNDS]``).

    Raises
    ------
    InvalidInputError
        If there is no reference round of that name.
    """
    for r in REFERENCE_ROUNDS:
        if r.name == name:
            return r
    raise InvalidInputError("name", name, f"no such reference round (known: "
                                          f"{', '.join(r.name for r in REFERENCE_ROUNDS)})")
