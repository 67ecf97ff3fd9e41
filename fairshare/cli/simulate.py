"""``fairshare trace``, ``simulate`` and ``compare``: write a trace; replay one, write table, records, figures.

``fairshare trace -o FILE`` generates a trace with Gavel's recipe.

``fairshare simulate --policy fairshare`` runs on the built-in trace and cluster; ``--trace FILE`` or
``--generate --jobs N --jobs-per-hour R --seed S`` choose the work, ``--cluster V100=36,P100=36,K80=36`` the
cluster. ``fairshare compare`` runs several policies (default: all registered) on the same trace, in
parallel processes, and prints one table. Policies are given as ``NAME`` or ``NAME:key=value,key=value``
(``fairshare:mode=exact,epsilon=0.1``, ``gavel:space_sharing=true``).

Outputs in ``--out`` (default ``results/``): ``results.md`` and ``results.csv`` (one row per policy),
``records.json`` (every per-job and per-round record of every run), ``jct_cdf.png``, ``rho_cdf.png``,
``efficiency.png`` (utilization E/C over time) and ``solver_time.png``.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from argparse import ArgumentParser, Namespace, RawDescriptionHelpFormatter, _SubParsersAction
from importlib import resources
from typing import Any

from fairshare.cli._files import cannot, check_readable, make_dir, write_text
from fairshare.errors import InvalidInputError

__all__ = ["add_simulation_commands", "parse_policy"]

DEFAULT_CLUSTER = "V100=36,P100=36,K80=36"
BUILTIN_CLUSTER = "V100=8,P100=8,K80=8"


def parse_policy(text: str) -> tuple[str, dict[str, Any], str]:
    """``"gavel:space_sharing=true"`` -> ``("gavel", {"space_sharing": True}, "gavel:space_sharing=true")``.

    Values are read as JSON where they parse (numbers, true/false) and as strings otherwise.

    >>> parse_policy("fairshare:mode=exact,epsilon=0.1")
    ('fairshare', {'mode': 'exact', 'epsilon': 0.1}, 'fairshare:mode=exact,epsilon=0.1')
    """
    name, _, rest = text.partition(":")
    opts: dict[str, Any] = {}
    for part in filter(None, rest.split(",")):
        if "=" not in part:
            raise InvalidInputError("policy", text, f"expected key=value after ':', got {part!r}")
        k, _, v = part.partition("=")
        try:
            opts[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            opts[k.strip()] = v.strip()
    return name.strip(), opts, text


def _builtin_trace_path() -> str:
    return str(resources.files("fairshare").joinpath("data/default_trace.csv"))


def _trace_spec(args: Namespace) -> tuple[dict[str, Any], str]:
    """Trace arguments for :class:`fairshare.sim.sweep.RunSpec`, and the cluster to use."""
    if args.trace and args.generate:
        raise InvalidInputError("--trace", args.trace, "give a trace file or --generate, not both")
    if args.trace:
        check_readable("--trace", args.trace)
        return {"path": args.trace}, args.cluster or DEFAULT_CLUSTER
    if args.generate:
        spec: dict[str, Any] = {"num_jobs": args.jobs, "jobs_per_hour": args.jobs_per_hour, "seed": args.seed,
                                "multi_gpu": not args.single_gpu, "weighted_fraction": args.weighted_fraction}
        return spec, args.cluster or DEFAULT_CLUSTER
    return {"path": _builtin_trace_path()}, args.cluster or BUILTIN_CLUSTER


def _run(args: Namespace, policies: list[str]) -> int:
    from fairshare.policies import policy_names
    from fairshare.sim.metrics import results_table
    from fairshare.sim.simulator import parse_cluster
    from fairshare.sim.sweep import RunSpec, run_spec, run_sweep

    trace, cluster = _trace_spec(args)
    if os.path.exists(args.out) and not os.path.isdir(args.out):  # fail before a long run, not after it
        raise InvalidInputError("--out", args.out, "not a folder")
    parse_cluster(cluster)  # validate before starting processes
    known = policy_names()
    specs = []
    for text in policies:
        name, opts, label = parse_policy(text)
        if name not in known:
            raise InvalidInputError("--policy", name, f"unknown policy (known: {', '.join(known)})")
        _check_policy_options(name, opts, label)
        sim = {"round_length": args.round_length, "epsilon": args.epsilon, "restart_overhead": args.restart_overhead,
               "max_pairs_per_job": args.max_pairs, "colocation": not args.no_colocation,
               "progress": None if len(policies) == 1 else False}
        if name == "fairshare" and "mode" not in opts and args.mode:
            opts["mode"] = args.mode
        if name == "fairshare" and "priority" not in opts and args.priority:
            opts["priority"] = args.priority
        specs.append(RunSpec(policy=name, cluster=cluster, trace=trace, policy_options=opts, sim_options=sim,
                             label=label))
    if len(specs) == 1 or args.workers == 1:
        results = []
        for s in specs:
            results.append(run_spec(s))
            print(f"[{s.label}] {len(results[-1].rounds)} rounds in {results[-1].wall_seconds:.1f} s",
                  file=sys.stderr)
    else:
        results = run_sweep(specs, max_workers=args.workers)
    out = make_dir("--out", args.out)
    metrics = {r.policy: r.metrics() for r in results}
    md = results_table(metrics, fmt="markdown")
    write_text("--out", out / "results.md", md)
    write_text("--out", out / "results.csv", results_table(metrics, fmt="csv"))
    records = {"trace": trace, "cluster": cluster, "runs": [r.to_dict() for r in results]}
    write_text("--out", out / "records.json",
               json.dumps(records, indent=1, default=_json_default).replace("NaN", "null"))
    if not args.no_plots:
        from fairshare.sim import plots

        jobs = {r.policy: r.jobs for r in results}
        rounds = {r.policy: r.rounds for r in results}
        try:
            plots.plot_jct_cdf(jobs, out / "jct_cdf.png")
            plots.plot_rho_cdf(jobs, out / "rho_cdf.png")
            plots.plot_utilization_over_time(rounds, out / "efficiency.png")
            plots.plot_solver_time_vs_jobs(rounds, out / "solver_time.png")
        except OSError as exc:
            raise cannot("--out", exc.filename or out, "write", exc) from exc
    print(md)
    print(f"wrote {out}/results.md, results.csv, records.json" + ("" if args.no_plots else " and 4 figures"),
          file=sys.stderr)
    return 0


def _check_policy_options(name: str, options: dict[str, Any], text: str) -> None:
    """Construct the policy once here, so that a bad option is reported (exit 2) before any run starts."""
    from fairshare.policies import get_policy

    try:
        inspect.signature(type(get_policy(name))).bind(**options)
    except TypeError as exc:  # an option the policy does not take
        raise InvalidInputError("--policy", text, str(exc)) from exc
    get_policy(name, **options)


def _json_default(o: Any) -> Any:
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError(type(o).__name__)


def _simulate(args: Namespace) -> int:
    return _run(args, [args.policy])


def _compare(args: Namespace) -> int:
    from fairshare.policies import policy_names

    return _run(args, args.policy or list(policy_names()))


def _common(p: ArgumentParser) -> None:
    src = p.add_argument_group("work and cluster")
    src.add_argument("--trace", help="trace file (CSV or JSON, see docs/traces.md)")
    src.add_argument("--generate", action="store_true", help="generate a trace with Gavel's recipe")
    src.add_argument("--jobs", type=int, default=1000, help="--generate: number of jobs (default 1000)")
    src.add_argument("--jobs-per-hour", type=float, default=6.0, help="--generate: arrival rate (default 6)")
    src.add_argument("--seed", type=int, default=0, help="--generate: seed (default 0)")
    src.add_argument("--single-gpu", action="store_true", help="--generate: all jobs scale 1")
    src.add_argument("--weighted-fraction", type=float, default=0.0,
                     help="--generate: fraction of jobs with weight 5 (default 0)")
    src.add_argument("--cluster", default=None,
                     help=f"GPU counts, e.g. {DEFAULT_CLUSTER} (default for the built-in trace: {BUILTIN_CLUSTER})")
    sim = p.add_argument_group("simulation")
    sim.add_argument("--round-length", type=float, default=360.0, help="seconds per round (default 360)")
    sim.add_argument("--epsilon", type=float, default=0.0, help="fairness slack of every round (default 0)")
    sim.add_argument("--restart-overhead", type=float, default=0.0, help="seconds lost when a placement changes")
    sim.add_argument("--max-pairs", type=int, default=4, help="co-location candidates per job (default 4)")
    sim.add_argument("--no-colocation", action="store_true", help="offer no co-location candidates")
    sim.add_argument("--mode", choices=("fast", "exact"), default=None, help="solve mode of the fairshare policy")
    sim.add_argument("--priority", choices=("none", "remaining", "finish-time"), default=None,
                     help="priority rule of the fairshare policy (default: the policy's)")
    outg = p.add_argument_group("output")
    outg.add_argument("--out", default="results", help="output folder (default results/)")
    outg.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    outg.add_argument("--workers", type=int, default=None, help="parallel processes (default: CPUs)")


def _trace(args: Namespace) -> int:
    from fairshare.sim.traces import generate_trace, write_trace

    trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed,
                           multi_gpu=not args.single_gpu, weighted_fraction=args.weighted_fraction,
                           tenants=args.tenants, durations=args.durations)
    try:
        write_trace(trace, args.output)
    except OSError as exc:
        raise cannot("--output", args.output, "write", exc) from exc
    print(f"wrote {len(trace.id)} jobs to {args.output}", file=sys.stderr)
    return 0


def _policy_catalog() -> str:
    """Every registered policy with its one-line summary and its options (for ``--help``)."""
    from fairshare.policies import policy_names, policy_options, policy_summary

    lines = ["policies (NAME, then its options as key=default; pass NAME:key=value,...):"]
    for name in policy_names():
        opts = ", ".join(f"{k}={v!r}" for k, v in policy_options(name).items()) or "no options"
        lines.append(f"  {name}: {policy_summary(name).replace('``', '')}")
        lines.append(f"      {opts}")
    return "\n".join(lines)


def add_simulation_commands(sub: _SubParsersAction[ArgumentParser]) -> None:
    """Add ``trace``, ``simulate`` and ``compare`` to the ``fairshare`` command's subparsers."""
    t = sub.add_parser("trace", help="generate a trace file with Gavel's recipe (CSV or JSON by suffix)")
    t.add_argument("-o", "--output", required=True, help="trace file to write (.csv or .json)")
    t.add_argument("--jobs", type=int, default=1000, help="number of jobs (default 1000)")
    t.add_argument("--jobs-per-hour", type=float, default=6.0, help="Poisson arrival rate (default 6)")
    t.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    t.add_argument("--single-gpu", action="store_true", help="all jobs scale 1")
    t.add_argument("--weighted-fraction", type=float, default=0.0, help="fraction of jobs with weight 5")
    t.add_argument("--tenants", type=int, default=0, help="number of tenants (default 0: none)")
    t.add_argument("--durations", choices=("gavel", "philly"), default="gavel",
                   help="duration distribution (default gavel)")
    t.set_defaults(func=_trace)
    catalog = _policy_catalog()
    s = sub.add_parser("simulate", help="replay a trace with one policy", epilog=catalog,
                       formatter_class=RawDescriptionHelpFormatter)
    s.add_argument("--policy", default="fairshare", help="NAME or NAME:key=value,... (default fairshare)")
    _common(s)
    s.set_defaults(func=_simulate)
    c = sub.add_parser("compare", help="replay a trace with several policies and print one table", epilog=catalog,
                       formatter_class=RawDescriptionHelpFormatter)
    c.add_argument("--policy", action="append", help="NAME or NAME:key=value,...; repeat (default: all)")
    _common(c)
    c.set_defaults(func=_compare)
