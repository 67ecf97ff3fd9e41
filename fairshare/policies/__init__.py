"""Scheduling policies behind one interface (:mod:`fairshare.policies.base`), constructible by name.

>>> from fairshare.policies import get_policy
>>> get_policy("fairshare", mode="fast").name
'fairshare'
"""

from fairshare.policies import fairshare_policy  # noqa: F401  (registers "fairshare")
from fairshare.policies.base import Policy, RoundState, allocation_from_columns, get_policy, policy_names, register

__all__ = ["Policy", "RoundState", "allocation_from_columns", "get_policy", "policy_names", "register"]
