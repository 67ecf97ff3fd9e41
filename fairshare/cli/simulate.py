"""``fairshare trace``, ``simulate`` and ``compare``: write a trace; replay one, write table, records, figures.

``fairshare trace -o FILE`` generates a trace with Gavel's recipe; ``fairshare trace import`` converts a real
cluster trace (:mod:`fairshare.cli.importing`).

``fairshare simulate --policy fairshare`` runs on the built-in trace and cluster; ``--trace FILE`` or
``--generate --jobs N --jobs-per-hour R --seed S`` choose the work, ``--cluster V100=36,P100=36,K80=36`` the
cluster. ``fairshare compare`` runs several policies (default: all registered) on the same trace, in
parallel processes, and prints one table. Policies are given as ``NAME`` or ``NAME:key=value,key=value``
(``fairshare:mode=exact,epsilon=0.1``, ``gavel:space_sharing=true``).

``--catalog NAME|FILE`` (repeatable) chooses the workload catalog (``--catalog modern`` for T4, A10, L4, A100,
H100 and H200 on every workload); ``--until HOURS`` and ``--max-rounds N`` stop a run at a horizon, its
unfinished jobs counted apart.

Outputs in ``--out`` (default ``results/``): ``results.md`` and ``results.csv`` (one row per policy),
``results_by_class.md`` and ``.csv`` (job metrics by duration class), ``records.json`` (every per-job and
per-round record of every run: one JSON document, not JSON Lines, each record on a line of its own;
gzip-compressed as ``records.json.gz`` above 8 MB or with ``--records gzip``), ``jct_cdf.png``, ``rho_cdf.png``,
``efficiency.png`` (utilization E/C over time) and ``solver_time.png``. Every file is written atomically.

A run folder holds one complete run or says it does not: once the simulations are done, the file
``INCOMPLETE`` is written first, every output of an earlier run (:data:`RUN_FILES`) is removed, the new files
are written, and ``INCOMPLETE`` is removed last. A run interrupted or failing while it writes (Ctrl-C,
SIGTERM, a full disk) leaves ``INCOMPLETE`` beside what it wrote; a run stopped before it writes leaves the
folder as it was. ``--no-plots`` therefore leaves no figure of an earlier run.
"""

from __future__ import annotations

import gzip
import inspect
import json
import math
import os
import sys
from argparse import ArgumentParser, Namespace, RawDescriptionHelpFormatter, _SubParsersAction
from importlib import resources
from typing import Any

from fairshare._io import write_atomically
from fairshare.cli._files import cannot, check_readable, make_dir, write_text
from fairshare.cli.catalog import add_catalog_option, catalog_names, load_cli_catalog
from fairshare.cli.importing import add_import_command
from fairshare.errors import InvalidInputError

__all__ = ["add_simulation_commands", "parse_policy"]

RECORDS_GZIP_ABOVE = 8 * 2**20
"""``--records auto`` writes ``records.json.gz`` when the records' JSON is larger than this (bytes)."""

DEFAULT_CLUSTER = "V100=36,P100=36,K80=36"
BUILTIN_CLUSTER = "V100=8,P100=8,K80=8"


RUN_FILES = ("results.md", "results.csv", "results_by_class.md", "results_by_class.csv", "records.json",
             "records.json.gz", "jct_cdf.png", "rho_cdf.png", "efficiency.png", "solver_time.png")
"""Every file a run writes into ``--out``; a new run removes them all before it writes its own."""

INCOMPLETE = "INCOMPLETE"
"""Name of the marker of a run folder whose files are being written (or whose writing was interrupted)."""

INCOMPLETE_TEXT = (
    "The run that wrote this folder was interrupted or failed while writing its files, so the files here are\n"
    "not one complete run (an earlier run's files were removed before writing began). Run the command again;\n"
    "fairshare removes this file when every file of a run has been written.\n")

LONG_REPLAY_ROUNDS = 1000
"""The overload warning also says the replay slows down for runs that plan at least this many rounds while jobs
arrive."""

IDLE_BUSY = 0.3
"""Below this estimated GPU busy fraction (:func:`fairshare.sim.load.offered_load`) a replay is warned that its
jobs rarely compete."""


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
    given = args.cluster
    if getattr(args, "nodes", None) is not None:
        if given is not None:
            raise InvalidInputError("--nodes", args.nodes, "give --cluster or --nodes, not both")
        given = args.nodes
    if args.trace:
        check_readable("--trace", args.trace)
        return {"path": args.trace}, given if given is not None else DEFAULT_CLUSTER
    if args.generate:
        spec: dict[str, Any] = {"num_jobs": args.jobs, "jobs_per_hour": args.jobs_per_hour, "seed": args.seed,
                                "multi_gpu": not args.single_gpu, "weighted_fraction": args.weighted_fraction}
        return spec, given if given is not None else DEFAULT_CLUSTER
    return {"path": _builtin_trace_path()}, given if given is not None else BUILTIN_CLUSTER


def _in_range(args: Namespace, option: str, lo: float, hi: float, *, integer: bool = False,
              lo_open: bool = False, hi_open: bool = False) -> None:
    """Refuse ``--option`` outside ``[lo, hi]`` (or open ends), naming the option (exit 2)."""
    v = getattr(args, option.lstrip("-").replace("-", "_"), None)
    if v is None:
        return
    ok = isinstance(v, (int, float)) and math.isfinite(v) and (v > lo if lo_open else v >= lo) and \
        (v < hi if hi_open else v <= hi)
    if not ok:
        what = "an integer" if integer else "a number"
        left, right = ("(" if lo_open else "["), (")" if hi_open else "]")
        raise InvalidInputError(option, v, f"must be {what} in {left}{lo:g}, {hi:g}{right}")


def check_options(args: Namespace) -> None:
    """The documented ranges of the numeric options of ``trace``, ``simulate`` and ``compare`` (docs/cli.md)."""
    from fairshare.sim.config import ROUND_LENGTH_RANGE
    from fairshare.sim.traces import MAX_ARRIVAL, MAX_JOBS_PER_HOUR, MIN_JOBS_PER_HOUR

    _in_range(args, "--jobs", 0, 10_000_000, integer=True)
    _in_range(args, "--jobs-per-hour", MIN_JOBS_PER_HOUR, MAX_JOBS_PER_HOUR)
    _in_range(args, "--seed", 0, 2**32 - 1, integer=True)
    _in_range(args, "--weighted-fraction", 0, 1)
    _in_range(args, "--tenants", 0, 1_000_000, integer=True)
    _in_range(args, "--round-length", *ROUND_LENGTH_RANGE)
    _in_range(args, "--epsilon", 0, 1, hi_open=True)
    if getattr(args, "round_length", None) is not None:
        _in_range(args, "--restart-overhead", 0, args.round_length, hi_open=True)
    _in_range(args, "--max-pairs", 0, 1_000_000, integer=True)
    _in_range(args, "--workers", 1, 1024, integer=True)
    _in_range(args, "--max-rounds", 0, 10**9, integer=True)
    _in_range(args, "--until", 0, MAX_ARRIVAL / 3600, lo_open=True)


def _cluster(text: str, option: str = "--cluster") -> dict[str, int]:
    from fairshare.cluster import Cluster, parse_node_spec

    try:
        if option == "--nodes":  # read as nodes whatever it looks like: `2xV100` is a malformed node group
            return Cluster.of_nodes(parse_node_spec(text)).require_gpu("cluster").by_type()
        return Cluster.parse(text).require_gpu("cluster").by_type()
    except InvalidInputError as exc:
        raise InvalidInputError(option, text, f"{exc.field}: {exc.reason}" if exc.field not in ("cluster", "nodes")
                                else exc.reason) from None


def _run(args: Namespace, policies: list[str]) -> int:
    from fairshare.policies import policy_names
    from fairshare.sim.sweep import RunSpec, run_spec, run_sweep

    check_options(args)
    trace, cluster = _trace_spec(args)
    if os.path.exists(args.out) and not os.path.isdir(args.out):  # fail before a long run, not after it
        raise InvalidInputError("--out", args.out, "not a folder")
    option = "--nodes" if args.nodes is not None else "--cluster"
    gpus = _cluster(cluster, option)  # before starting processes
    _add_scale_out_if_needed(args, trace)
    cat = load_cli_catalog(args)
    for g in gpus:
        if g not in cat.gpu_types:
            hint = " (it is in --catalog modern, as derived figures)" if g in _modern_types() else ""
            raise InvalidInputError(option, g, f"unknown GPU type: the catalog {' + '.join(catalog_names(args))} "
                                    f"has {', '.join(cat.gpu_types)}{hint}")
    _preflight(args, trace, cat, cluster)
    known = policy_names()
    specs: list[RunSpec] = []
    for text in policies:
        name, opts, label = parse_policy(text)
        if any(spec.label == label for spec in specs):  # the table has one row per label
            raise InvalidInputError("--policy", text, "given twice: each run needs its own label (the table has "
                                    "one row per policy as written)")
        if name not in known:
            raise InvalidInputError("--policy", name, f"unknown policy (known: {', '.join(known)})")
        _check_policy_options(name, opts, label)
        sim = {"round_length": args.round_length, "epsilon": args.epsilon, "restart_overhead": args.restart_overhead,
               "max_pairs_per_job": args.max_pairs, "colocation": not args.no_colocation,
               "show_progress": None if len(policies) == 1 else False, "max_rounds": args.max_rounds,
               "until": None if args.until is None else args.until * 3600.0, "starts": args.starts,
               **({} if args.event_spacing is None else {"event_spacing": args.event_spacing}),
               **({"wait_is_owed": False} if args.no_owed_wait else {})}
        if name == "fairshare" and "mode" not in opts and args.mode:
            opts["mode"] = args.mode
        if name == "fairshare" and "priority" not in opts and args.priority:
            opts["priority"] = args.priority
        if name == "fairshare" and "shortfall_price" not in opts and args.shortfall_price:
            opts["shortfall_price"] = args.shortfall_price
        if name == "fairshare" and args.no_polish:
            if opts.get("mode", "fast") != "fast":
                raise InvalidInputError("--no-polish", True, f"applies to the fast mode only, not to mode "
                                                             f"{opts.get('mode')!r} ({label})")
            opts["options"] = {**dict(opts.get("options") or {}), "polish": False}
        if name == "fairshare" and args.warm_start:
            if opts.get("mode", "fast") != "fast":
                raise InvalidInputError("--warm-start", True, f"applies to the fast mode only, not to mode "
                                                              f"{opts.get('mode')!r} ({label})")
            opts["options"] = {**dict(opts.get("options") or {}), "warm_start": True}
        specs.append(RunSpec(policy=name, cluster=cluster, trace=trace, policy_options=opts, sim_options=sim,
                             label=label, catalog=tuple(args.catalog or ())))
    if len(specs) == 1 or args.workers == 1:
        results = []
        for s in specs:
            results.append(run_spec(s))
            print(f"[{s.label}] {len(results[-1].rounds)} rounds in {results[-1].wall_seconds:.1f} s",
                  file=sys.stderr)
    else:
        results = run_sweep(specs, max_workers=args.workers)
    out = make_dir("--out", args.out)
    _begin_run_folder(out)
    records_file = _write_results(args, out, results, trace, cluster)
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
    _end_run_folder(out)
    rec = f", {records_file}" if records_file else ""
    print(f"wrote {out}/results.md, results.csv, results_by_class.md, results_by_class.csv{rec}"
          + ("" if args.no_plots else " and 4 figures"), file=sys.stderr)
    return 0


def _begin_run_folder(out: Any) -> None:
    """Mark ``out`` incomplete, then remove every file an earlier run wrote there (module documentation)."""
    write_text("--out", out / INCOMPLETE, INCOMPLETE_TEXT)
    for name in RUN_FILES:
        try:
            (out / name).unlink(missing_ok=True)
        except IsADirectoryError:
            raise InvalidInputError("--out", str(out / name), "is a folder where the run writes a file") from None
        except OSError as exc:
            raise cannot("--out", out / name, "remove", exc) from exc


def _end_run_folder(out: Any) -> None:
    """Every file of the run is written: remove the ``INCOMPLETE`` marker."""
    try:
        (out / INCOMPLETE).unlink(missing_ok=True)
    except OSError as exc:
        raise cannot("--out", out / INCOMPLETE, "remove", exc) from exc


def _read_trace_file(path: str, catalog: Any = None) -> Any:
    """The trace file ``--trace``; an error about the file as a whole (not JSON, too large) names ``--trace``."""
    from fairshare.sim.traces import read_trace

    try:
        return read_trace(path, catalog=catalog)
    except InvalidInputError as exc:
        if exc.field != "document":
            raise
        raise InvalidInputError("--trace", path, exc.reason) from None


def _add_scale_out_if_needed(args: Namespace, trace: dict[str, Any]) -> None:
    """Add ``--catalog scale-out`` when the trace has gangs larger than the catalog's scales, saying so.

    An imported trace keeps jobs of 16 to 128 GPUs on the derived scales of rule ``scale-out-v1``; its replay
    needs the same figures. Nothing changes for a trace whose gangs the catalog covers.
    """
    from fairshare.sim.catalog.scaleout import SCALES

    names = catalog_names(args)
    if "path" not in trace or "scale-out" in names:
        return
    biggest = float(max(_read_trace_file(trace["path"]).scale.tolist(), default=0))
    have = load_cli_catalog(args).scales
    if biggest <= max(have) or biggest > max(SCALES):
        return
    args.catalog = [*names, "scale-out"]
    print(f"fairshare: note: the trace has gangs of up to {biggest:g} GPUs and the catalog {' + '.join(names)} "
          f"stops at {max(have)}: added --catalog scale-out (derived scaling, rule scale-out-v1, docs/catalog.md)",
          file=sys.stderr)


def _modern_types() -> tuple[str, ...]:
    from fairshare.sim.catalog import load_catalog

    return load_catalog("modern").gpu_types


def _preflight(args: Namespace, trace: dict[str, Any], cat: Any, cluster: str) -> None:
    """Read (or generate) the trace once here, so that bad input is reported before any process starts."""
    from fairshare.sim.config import SimConfig
    from fairshare.sim.load import offered_load
    from fairshare.sim.simulator import check_run
    from fairshare.sim.traces import generate_trace

    try:
        cfg = SimConfig(round_length=args.round_length, epsilon=args.epsilon, restart_overhead=args.restart_overhead,
                        max_rounds=args.max_rounds, until=None if args.until is None else args.until * 3600.0,
                        starts=args.starts)
    except InvalidInputError as exc:
        raise InvalidInputError(f"--{exc.field.replace('_', '-')}", exc.value, exc.reason) from None
    if "path" in trace:
        tr = _read_trace_file(trace["path"], catalog=cat)
    else:
        try:
            tr = generate_trace(**trace, catalog=cat)
        except InvalidInputError as exc:
            raise InvalidInputError(f"--{exc.field.replace('_', '-')}", exc.value, exc.reason) from None
    check_run(tr, cluster, cat, cfg)
    horizon = cfg.until
    if cfg.max_rounds is not None:
        horizon = min(horizon or math.inf, cfg.max_rounds * cfg.round_length)
    load = offered_load(tr, cluster, cat, until=horizon)
    planned = load.span_seconds / cfg.round_length  # rounds while jobs arrive, unless the run is cut shorter
    if horizon is not None:
        planned = min(planned, horizon / cfg.round_length)
    if load.overloaded:
        slow = (" and the replay slows down as it goes, each round planning more jobs than the last (fewer jobs "
                "per hour, a larger cluster, --until or --max-rounds keep it short)" if planned >= LONG_REPLAY_ROUNDS
                else "")
        print(f"fairshare: warning: {load.describe()}. The cluster cannot keep up: the queue grows for as long as "
              f"jobs arrive{slow}", file=sys.stderr)
    elif load.busy_fraction < IDLE_BUSY:
        print(f"fairshare: warning: {load.describe()}. Jobs rarely wait for each other, so the policies will look "
              "alike: a smaller cluster or more jobs per hour makes them compete", file=sys.stderr)
    else:
        print(f"fairshare: load: {load.describe()}", file=sys.stderr)


def _write_results(args: Namespace, out: Any, results: list[Any], trace: dict[str, Any], cluster: str) -> str:
    """Write results.md/.csv, results_by_class.md/.csv and the records; return the records' file name.

    ``""`` when no records are written. The Markdown tables also go to stdout.
    """
    from fairshare.sim.metrics import COUNT_COLUMNS, METRIC_COLUMNS, metrics_by_duration_class, results_table

    metrics = {r.policy: r.metrics() for r in results}
    cols = (*METRIC_COLUMNS, *COUNT_COLUMNS)
    notes = _notes(results)
    md = results_table(metrics, fmt="markdown", columns=cols) + "".join(f"\n{n}\n" for n in notes)
    write_text("--out", out / "results.md", md)
    write_text("--out", out / "results.csv", results_table(metrics, fmt="csv", columns=cols))
    by_class = {f"{r.policy} / {c}": m for r in results
                for c, m in metrics_by_duration_class(r.jobs, r.rounds, r.config.round_length).items()}
    class_cols = (COUNT_COLUMNS[0], *(c for c in METRIC_COLUMNS if c.name in (
        "mean_jct_h", "median_jct_h", "p95_jct_h", "p99_jct_h", "mean_queue_h", "p99_queue_h", "unfair_fraction",
        "max_rho")), *COUNT_COLUMNS[1:])
    label = "policy / duration class (alone on the fastest type)"
    class_md = results_table(by_class, fmt="markdown", columns=class_cols, label=label)
    write_text("--out", out / "results_by_class.md", class_md)
    write_text("--out", out / "results_by_class.csv", results_table(by_class, fmt="csv", columns=class_cols,
                                                                    label="policy_class"))
    if args.records != "none":
        from fairshare.sim.result import records_json

        text = records_json({"trace": trace, "cluster": cluster, "catalog": list(catalog_names(args)),
                             "runs": [r.to_dict() for r in results]})
        gz = args.records == "gzip" or (args.records == "auto" and len(text) > RECORDS_GZIP_ABOVE)
        if gz:
            _write_gzip(out / "records.json.gz", text)
        else:
            write_text("--out", out / "records.json", text)
    print(md)
    print(class_md)
    if args.records == "none":
        return ""
    return "records.json.gz" if gz else "records.json"


def _write_gzip(path: Any, text: str) -> None:
    """``text`` gzip-compressed, written atomically (a temporary file in the folder, renamed over ``path``)."""
    data = gzip.compress(text.encode("utf-8"), mtime=0)
    try:
        write_atomically(path, data, strict_folder_sync=False)
    except OSError as exc:
        raise cannot("--out", path, "write", exc) from exc


def _notes(results: list[Any]) -> list[str]:
    """What a reader of the table must know: jobs left out of JCT, derived throughput figures."""
    notes = []
    m = results[0].metrics() if results else None
    if m is not None and (any(r.metrics().unfinished for r in results) or m.censored):
        notes.append("JCT, rho and the unfair fraction are over finished jobs; `unfinished` jobs (not done when the "
                     "run stopped) and `censored` jobs (still running when the source trace ended) are left out.")
    cat = results[0].catalog if results else {}
    if cat.get("derived"):
        names = ", ".join(s["name"] for s in cat.get("sources", []) if s.get("kind") == "derived")
        notes.append(f"Derived figures: {cat['derived']} of the {cat['figures']} throughput figures this run could use "
                     f"are derived, not measured ({names}; `fairshare catalog` labels each, docs/catalog.md states "
                     "the rule and its error).")
    return notes


def _check_policy_options(name: str, options: dict[str, Any], text: str) -> None:
    """Construct the policy once here, so that a bad option is reported (exit 2) before any run starts."""
    from fairshare.policies import get_policy

    try:
        inspect.signature(type(get_policy(name))).bind(**options)
    except TypeError as exc:  # an option the policy does not take
        raise InvalidInputError("--policy", text, str(exc)) from exc
    get_policy(name, **options)


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
    src.add_argument("--nodes", default=None, metavar="SPEC",
                     help="the cluster as nodes instead of --cluster: COUNTxTYPE:GPUS_PER_NODE groups, e.g. "
                          "36xV100:8,36xP100:4, or a JSON file of {id, gpu, gpus} objects; placements are bound "
                          "to nodes and GPUs every round, and a job that moves pays --restart-overhead")
    add_catalog_option(src)
    sim = p.add_argument_group("simulation")
    sim.add_argument("--round-length", type=float, default=360.0, help="seconds per round (default 360)")
    sim.add_argument("--epsilon", type=float, default=0.0, help="fairness slack of every round (default 0)")
    sim.add_argument("--restart-overhead", type=float, default=30.0,
                     help="seconds a job loses when its GPUs change: checkpoint and reload (default 30)")
    sim.add_argument("--max-pairs", type=int, default=4, help="co-location candidates per job (default 4)")
    sim.add_argument("--no-colocation", action="store_true", help="offer no co-location candidates")
    sim.add_argument("--mode", choices=("fast", "exact"), default=None, help="solve mode of the fairshare policy")
    sim.add_argument("--priority", choices=("none", "remaining", "finish-time"), default=None,
                     help="priority rule of the fairshare policy (default: the policy's)")
    sim.add_argument("--shortfall-price", choices=("none", "finish-time"), default=None,
                     help="shortfall-price rule of the fairshare policy: what a round of a job's shortfall costs "
                          "(finish-time: in units of the job's fair finish time; default: the policy's)")
    sim.add_argument("--no-polish", action="store_true",
                     help="fast mode of the fairshare policy without the local search and polish MILP: each round "
                          "is the greedy rounding of the LP (gap still certified); for long replays, about 10x "
                          "less policy time per round")
    sim.add_argument("--warm-start", action="store_true",
                     help="fast mode of the fairshare policy solves each round's LP by pricing, seeded from the "
                          "round before (the same LP optimum; with ties another placement of it); for long "
                          "replays with hundreds of waiting jobs")
    sim.add_argument("--until", type=float, default=None, metavar="HOURS",
                     help="horizon: start no round after this simulated time; unfinished jobs are counted apart")
    sim.add_argument("--max-rounds", type=int, default=None, metavar="N", help="stop after N rounds")
    sim.add_argument("--starts", choices=("round", "idle", "events"), default="events",
                     help="when jobs start: (events, default) a policy whose scheduler re-plans at events "
                          "(fairshare) plans the rest of the round at every arrival and finish, the others as idle; "
                          "(idle) at round boundaries and also between them on idle GPUs, at every arrival and "
                          "finish; (round) only at round boundaries")
    sim.add_argument("--no-owed-wait", action="store_true",
                     help="a job starts owing nothing for the time it waited before its first plan (release 0.2's "
                          "rule; default: it is owed that wait's fair progress)")
    sim.add_argument("--event-spacing", type=float, default=None, metavar="SECONDS",
                     help="--starts events: least simulated time between two plans (default 30 s)")
    outg = p.add_argument_group("output")
    outg.add_argument("--out", default="results", help="output folder (default results/)")
    outg.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    outg.add_argument("--records", choices=("auto", "json", "gzip", "none"), default="auto",
                      help="per-job and per-round records: records.json, records.json.gz, or none; auto (default): "
                           "gzip above 8 MB")
    outg.add_argument("--workers", type=int, default=None, help="parallel processes (default: CPUs)")


def _trace(args: Namespace) -> int:
    from fairshare.sim.traces import format_trace, generate_trace

    if args.output is None:
        raise InvalidInputError("--output", None, "required: the trace file to write (.csv or .json), or use "
                                "`fairshare trace import` to convert a real trace")
    fmt = os.path.splitext(args.output)[1].lower().lstrip(".")
    if fmt not in ("csv", "json"):
        raise InvalidInputError("--output", args.output, "must end in .csv or .json")
    check_options(args)
    cat = load_cli_catalog(args) if args.catalog else None
    try:
        trace = generate_trace(args.jobs, jobs_per_hour=args.jobs_per_hour, seed=args.seed, catalog=cat,
                               multi_gpu=not args.single_gpu, weighted_fraction=args.weighted_fraction,
                               tenants=args.tenants, durations=args.durations,
                               **({"gpu_types": args.gpu_types.split(",")} if args.gpu_types else {}))
    except InvalidInputError as exc:
        raise InvalidInputError(f"--{exc.field.replace('_', '-')}", exc.value, exc.reason) from None
    write_text("--output", args.output, format_trace(trace, fmt))
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
    t = sub.add_parser("trace", help="generate a trace file with Gavel's recipe (CSV or JSON by suffix); "
                                     "`trace import` converts a real cluster trace")
    t.add_argument("-o", "--output", default=None, help="trace file to write (.csv or .json); required")
    t.add_argument("--jobs", type=int, default=1000, help="number of jobs (default 1000)")
    t.add_argument("--jobs-per-hour", type=float, default=6.0, help="Poisson arrival rate (default 6)")
    t.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    t.add_argument("--single-gpu", action="store_true", help="all jobs scale 1")
    t.add_argument("--weighted-fraction", type=float, default=0.0, help="fraction of jobs with weight 5")
    t.add_argument("--tenants", type=int, default=0, help="number of tenants (default 0: none)")
    t.add_argument("--durations", choices=("gavel", "philly"), default="gavel",
                   help="duration distribution (default gavel)")
    add_catalog_option(t)
    t.add_argument("--gpu-types", default=None, metavar="T1,T2",
                   help="GPU types of the target cluster: models must run there, work is set on the fastest "
                        "(default K80,P100,V100)")
    t.set_defaults(func=_trace)
    add_import_command(t.add_subparsers(dest="trace_command", metavar="{import}"))
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
