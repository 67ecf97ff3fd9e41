"""Scheduling policies behind one interface (:mod:`fairshare.policies.base`), constructible by name.

A policy is a :class:`Policy` subclass with a ``place`` method, registered by name with :func:`register`;
:meth:`Policy.allocate` turns its placement into an :class:`~fairshare.allocation.Allocation`. The
LP-based peers (``gavel``, ``gavel-ss``, ``ftf``, ``max-throughput``, ``las``) also expose ``plan(state)``,
their fractional time-share plan (:class:`TimeSharePlan`). :func:`policy_options` lists a policy's options
with their defaults.

>>> from fairshare.policies import get_policy
>>> get_policy("fairshare", mode="fast").name
'fairshare'
>>> get_policy("gavel", space_sharing=True).name
'gavel'
>>> get_policy("gavel-ss").space_sharing
True
>>> policy_options("max-throughput")
{'space_sharing': True, 'objective': 'raw', 'milp': False, 'time_limit': 1.0}
"""

# importing a policy module registers it
from fairshare.policies import (  # noqa: F401
    fairshare,
    fifo,
    ftf,
    gandiva_fair,
    gavel,
    las,
    las_tiresias,
    max_throughput,
)
from fairshare.policies.base import (
    Placed,
    Policy,
    RoundState,
    SupportsAllocate,
    TimeSharePlan,
    get_policy,
    policy_names,
    policy_options,
    policy_summary,
    register,
)

__all__ = ["Placed", "Policy", "RoundState", "SupportsAllocate", "TimeSharePlan", "get_policy", "policy_names",
           "policy_options", "policy_summary", "register"]
