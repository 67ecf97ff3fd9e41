"""fairshare: efficient, spatiotemporally fair allocation of heterogeneous GPU clusters to training jobs.

Public API
----------
:func:`allocate` solves one round (modes ``exact``, ``lp``, ``fast``); :class:`RoundProblem` is the validated
round; :class:`Allocation` the answer; :class:`Engine` runs round after round and carries deficits.
"""

from fairshare.allocate import MODES, SolveOptions, allocate
from fairshare.allocation import Allocation, Placement, Status
from fairshare.errors import FairshareError, InvalidInputError, SolverError
from fairshare.fair_share import FairShare, fair_share
from fairshare.problem import RoundProblem

__all__ = [
    "MODES", "Allocation", "FairShare", "FairshareError", "InvalidInputError", "Placement", "RoundProblem",
    "SolveOptions", "SolverError", "Status", "allocate", "fair_share",
]
__version__ = "0.1.0"
