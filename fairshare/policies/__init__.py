"""Scheduling policies behind one interface (:mod:`fairshare.policies.base`), constructible by name.

>>> from fairshare.policies import get_policy
>>> get_policy("fairshare", mode="fast").name
'fairshare'
>>> get_policy("gavel", space_sharing=True).name
'gavel'
"""

# importing a policy module registers it
from fairshare.policies import (  # noqa: F401
    fairshare_policy,
    fifo,
    ftf,
    gandiva_fair,
    gavel,
    las,
    max_throughput,
)
from fairshare.policies.base import (
    Policy,
    RoundState,
    allocation_from_columns,
    get_policy,
    policy_names,
    register,
)

__all__ = ["Policy", "RoundState", "allocation_from_columns", "get_policy", "policy_names", "register"]
