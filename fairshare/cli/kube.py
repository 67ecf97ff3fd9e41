"""``fairshare kube plan``: a Kubernetes cluster snapshot in, the ``Binding`` and ``Eviction`` objects out.

``fairshare kube plan SNAPSHOT.json [-o PLAN.json] [--mode fast|exact] [--catalog NAME|FILE]
[--product LABEL=TYPE] [--default-model MODEL] [--restart-seconds S] [--round-seconds S] [--round OUT.json]
[--deficits D.json] [--next-deficits D.json]``
reads ``kubectl get nodes,pods -A -o json`` (``-`` for stdin) and writes a v1 ``List`` of ``Eviction`` and
``Binding`` objects (:func:`fairshare.kube.plan_snapshot`, docs/kubernetes.md). The summary (what is bound,
evicted, left waiting, and why) goes to stdout with ``-o``, else to stderr.
"""

from __future__ import annotations

import json
import sys
from argparse import ArgumentParser, Namespace, _SubParsersAction

from fairshare.cli._files import read_bytes, read_stream, write_text
from fairshare.cli.catalog import add_catalog_option, catalog_names
from fairshare.documents import MAX_JSON_BYTES, read_json
from fairshare.errors import InvalidInputError

__all__ = ["add_kube_command", "run_kube_plan"]


def _products(values: list[str] | None) -> dict[str, str]:
    out = {}
    for v in values or ():
        label, sep, gpu = v.partition("=")
        if not (sep and label and gpu):
            raise InvalidInputError("--product", v, "must be LABEL=TYPE, e.g. NVIDIA-A10G=A10")
        out[label] = gpu
    return out


def run_kube_plan(args: Namespace) -> int:
    """Run ``fairshare kube plan``; returns the exit status (0)."""
    from fairshare.kube import plan_snapshot
    from fairshare.sim.catalog import load_catalog

    names = catalog_names(args) if args.catalog else ("modern",)
    try:
        catalog = load_catalog(names)
    except InvalidInputError as exc:
        raise InvalidInputError("--catalog", exc.value, exc.reason) from None
    options = {} if args.time_limit is None else {"time_limit": args.time_limit}
    if options and args.mode != "exact":
        raise InvalidInputError("--time-limit", args.time_limit, f"applies to --mode exact only, not {args.mode}")
    raw = (read_stream("SNAPSHOT", "-", sys.stdin.buffer, MAX_JSON_BYTES) if args.snapshot == "-"
           else read_bytes("SNAPSHOT", args.snapshot, MAX_JSON_BYTES))
    doc = read_json(raw, what="snapshot")
    deficits = None
    if args.deficits:
        deficits = read_json(read_bytes("--deficits", args.deficits, MAX_JSON_BYTES), what="--deficits")
    plan = plan_snapshot(doc, mode=args.mode, catalog=catalog, products=_products(args.product),
                         default_model=args.default_model, restart_seconds=args.restart_seconds,
                         round_seconds=args.round_seconds, deficits=deficits, options=options or None)
    if args.next_deficits:
        write_text("--next-deficits", args.next_deficits, json.dumps(plan.next_deficits(), indent=1) + "\n")
    text = json.dumps(plan.to_list(), indent=2) + "\n"
    if args.round:
        write_text("--round", args.round, json.dumps(plan.round.doc, indent=2) + "\n")
    if args.output:
        write_text("--output", args.output, text)
        print(plan.summary() + f"\n-> {args.output}")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
        print(plan.summary(), file=sys.stderr)
    return 0


def add_kube_command(sub: _SubParsersAction[ArgumentParser]) -> ArgumentParser:
    """Add ``kube`` (with its ``plan`` subcommand) to the ``fairshare`` command's subparsers."""
    k = sub.add_parser("kube", help="plan a Kubernetes cluster from a snapshot (Binding and Eviction objects)")
    ksub = k.add_subparsers(dest="kube_command", required=True)
    p = ksub.add_parser("plan", help="kubectl get nodes,pods -A -o json in, a List of Binding/Eviction out")
    p.add_argument("snapshot", metavar="SNAPSHOT.json", help="cluster snapshot (JSON file, or - for stdin)")
    p.add_argument("-o", "--output", metavar="PLAN.json", help="write the plan here instead of stdout")
    p.add_argument("--mode", choices=("fast", "exact"), default="fast", help="solve mode (default: fast)")
    p.add_argument("--time-limit", type=float, default=None, metavar="S", help="time limit of --mode exact, s")
    add_catalog_option(p)
    p.add_argument("--product", action="append", metavar="LABEL=TYPE",
                   help="map a GPU product label to a catalog GPU type (repeatable), e.g. NVIDIA-A10G=A10")
    p.add_argument("--default-model", metavar="MODEL", help="workload of pods without fairshare.io/model")
    p.add_argument("--restart-seconds", type=float, default=60.0, metavar="S",
                   help="cost of moving or stopping a running job, unless its pods say (default: 60)")
    p.add_argument("--round-seconds", type=float, default=360.0, metavar="S",
                   help="length of the round planned (default: 360)")
    p.add_argument("--round", metavar="ROUND.json", help="also write the round document (for fairshare allocate)")
    p.add_argument("--deficits", metavar="D.json", help="deficits carried from the last plan (job id -> number)")
    p.add_argument("--next-deficits", metavar="D.json",
                   help="write the deficits to carry into the next plan (may be the --deficits file)")
    p.set_defaults(func=run_kube_plan)
    return k
