"""Deprecated alias of :mod:`fairshare.sim.simulator` (moved in 0.2, removed in 0.3)."""

from fairshare._compat import alias_module

alias_module(__name__, "fairshare.sim.simulator")
