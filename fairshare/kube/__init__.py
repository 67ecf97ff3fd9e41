"""Kubernetes in and out: plan a round from a cluster snapshot, write the ``Binding`` and ``Eviction`` objects.

``plan_snapshot(snapshot)`` reads what ``kubectl get nodes,pods -A -o json`` prints (a v1 ``List`` of ``Node``
and ``Pod`` objects), builds the round document (GPU types from NVIDIA GPU feature discovery labels and the
device plugin's allocatable resources; whole GPUs, time-sliced or MPS replicas and MIG slices; pending and
running pods as jobs), solves it with :func:`fairshare.allocate` on the cluster's nodes, and returns a
:class:`KubePlan` whose ``to_list()`` is a v1 ``List`` of ``Binding`` (pods to start) and ``Eviction`` (pods to
preempt) objects. Plain JSON in and out: the Kubernetes client library is not needed. docs/kubernetes.md
describes the labels, annotations and rules.

Modules: :mod:`~fairshare.kube.products` (GPU product names -> catalog types, MIG shares),
:mod:`~fairshare.kube.snapshot` (reading and checking the snapshot), :mod:`~fairshare.kube.round` (pods into
jobs, the round document), :mod:`~fairshare.kube.plan` (solving and deciding per pod),
:mod:`~fairshare.kube.objects` (the objects written), :mod:`~fairshare.kube.validate` (the plan's invariants,
:func:`plan_violations`).
"""

from fairshare.kube.objects import binding_object, eviction_object, list_object
from fairshare.kube.plan import KubePlan, plan_snapshot
from fairshare.kube.products import PRODUCTS
from fairshare.kube.round import ANNOTATIONS, KubeRound, build_round
from fairshare.kube.snapshot import Snapshot, read_snapshot
from fairshare.kube.validate import plan_violations

__all__ = ["ANNOTATIONS", "PRODUCTS", "KubePlan", "KubeRound", "Snapshot", "binding_object", "build_round",
           "eviction_object", "list_object", "plan_snapshot", "plan_violations", "read_snapshot"]
