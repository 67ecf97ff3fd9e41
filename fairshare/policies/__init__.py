"""Scheduling policies behind one interface (:mod:`fairshare.policies.base`), constructible by name.

A policy is a :class:`Policy` subclass with a ``place`` method, registered by name with :func:`register`;
:meth:`Policy.allocate` turns its placement into an :class:`~fairshare.allocation.Allocation`.

>>> from fairshare.policies import get_policy
>>> get_policy("fairshare", mode="fast").name
'fairshare'
>>> get_policy("gavel", space_sharing=True).name
'gavel'
"""

# importing a policy module registers it
from fairshare.policies import (  # noqa: F401
    fairshare,
    fifo,
    ftf,
    gandiva_fair,
    gavel,
    las,
    max_throughput,
)
from fairshare.policies.base import Placed, Policy, RoundState, get_policy, policy_names, register

__all__ = ["Placed", "Policy", "RoundState", "get_policy", "policy_names", "register"]
