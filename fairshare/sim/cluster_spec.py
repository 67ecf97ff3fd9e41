"""A simulation's cluster given as text or a mapping, as GPUs per type (read by :class:`fairshare.cluster.Cluster`).

:func:`parse_cluster` takes every form :meth:`Cluster.parse <fairshare.cluster.Cluster.parse>` reads
(``"V100=36,K80=36"``, a mapping, ``"36xV100:8,36xK80:4"``, a ``.json`` node file, a list of nodes) and returns
the GPUs per type; a bad count or node is refused naming the field and the value, and so is a cluster with no GPU.
"""

from __future__ import annotations

from fairshare.cluster import Cluster

__all__ = ["parse_cluster"]


def parse_cluster(spec: object) -> dict[str, int]:
    """``"V100=36,P100=36,K80=36"`` (or a mapping, or nodes) to ``{"V100": 36, ...}``, validated.

    >>> parse_cluster("V100=2,K80=1")
    {'V100': 2, 'K80': 1}
    >>> parse_cluster("2xV100:8")
    {'V100': 16}
    """
    return Cluster.parse(spec, "cluster").require_gpu("cluster").by_type()
