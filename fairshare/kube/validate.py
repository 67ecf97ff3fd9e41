"""Invariants of a Kubernetes plan, checked against its snapshot: a validator that returns what is wrong.

:func:`plan_violations` lists every broken promise of :func:`fairshare.kube.plan_snapshot` (an empty list
means none): no node's GPU resource over-committed by the pods that stay, the pods held and the pods bound;
only pending pods bound, each at most once, and only to a node that offers what it asks for; only running
pods evicted; every pod that asks for GPUs accounted for exactly once (bound, evicted, staying, waiting or
held); the pods of a gang bound all or none, and its running pods kept all or none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from fairshare.kube.plan import KubePlan
from fairshare.kube.snapshot import read_snapshot

__all__ = ["plan_violations"]


def plan_violations(snapshot: Mapping[str, Any], plan: KubePlan,
                    products: Mapping[str, str] | None = None) -> list[str]:
    """Every invariant ``plan`` breaks on ``snapshot`` (the document it was planned from); ``[]`` if none.

    Examples
    --------
    >>> from fairshare.kube import plan_snapshot
    >>> node = {"kind": "Node", "metadata": {"name": "a", "labels": {"nvidia.com/gpu.product": "Tesla-T4"}},
    ...         "status": {"allocatable": {"nvidia.com/gpu": "1"}}}
    >>> pod = {"kind": "Pod", "metadata": {"name": "p", "annotations": {"fairshare.io/model": "A3C"}},
    ...        "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    >>> doc = {"kind": "List", "items": [node, pod]}
    >>> plan = plan_snapshot(doc)
    >>> plan_violations(doc, plan)
    []
    """
    snap = read_snapshot(snapshot, products)
    pods = {p.key: p for p in snap.pods}
    out: list[str] = []
    bound = [k for k, _ in plan.bindings]
    evicted = [k for k, _ in plan.evictions]
    seen = Counter([*bound, *evicted, *plan.stays, *(k for k, _ in plan.waiting), *plan.held])
    out += [f"pod {k} appears {n} times in the plan" for k, n in sorted(seen.items()) if n > 1]
    out += [f"pod {k} is not in the snapshot" for k in sorted(set(seen) - set(pods))]
    out += [f"pod {k} is not accounted for" for k in sorted(set(pods) - set(seen))]
    out += [f"running pod {k} is bound" for k in bound if k in pods and pods[k].node is not None]
    out += [f"pending pod {k} is evicted" for k in evicted if k in pods and pods[k].node is None]
    out += [f"pending pod {k} stays" for k in plan.stays if k in pods and pods[k].node is None]
    free: Counter[tuple[str, str]] = Counter()
    for node in snap.nodes.values():
        for o in node.offers:
            free[(node.name, o.pool.resource)] = o.units
    for k, n in plan.bindings:
        p = pods.get(k)
        if p is not None:
            target = snap.nodes.get(n)
            if target is None or target.offer(p.resource) is None:
                out.append(f"pod {k} is bound to node {n}, which offers no {p.resource}")
            free[(n, p.resource)] -= p.units
    for k in (*plan.stays, *plan.held):
        p = pods.get(k)
        if p is not None and p.node is not None:
            free[(p.node, p.resource)] -= p.units
    out += [f"node {n} over-committed: {-v} {r} more than allocatable" for (n, r), v in sorted(free.items()) if v < 0]
    bound_set, stays = set(bound), set(plan.stays)
    for jid, job in sorted(plan.round.jobs.items()):
        pending = [p.key for p in job.pods if p.node is None]
        running = [p.key for p in job.pods if p.node is not None]
        if len({k in bound_set for k in pending}) > 1:
            out.append(f"job {jid}: some pending pods bound, others not")
        if len({k in stays for k in running}) > 1:
            out.append(f"job {jid}: some running pods stay, others not")
        if any(k in bound_set for k in pending) and any(k not in stays for k in running):
            out.append(f"job {jid}: pods bound while its running pods are evicted")
    return out
