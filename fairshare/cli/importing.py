"""``fairshare trace import``: turn a real cluster trace into a fairshare trace (:mod:`fairshare.sim.importers`).

Built-in formats read the public traces' own files (``--format philly``, ``pai2020``, ``openb2023``); ``--format
csv`` reads any CSV with a header, mapped column by column (``--arrival COL --gpus COL --duration COL`` and
optional ``--gpu-type --user --id --model --status --censored``, with ``--time-unit`` and ``--gpu-unit``).
The trace is written as JSON (with a ``meta`` record of the source and the options) or CSV, by the suffix of
``-o``; a summary and a suggested ``--cluster`` go to stderr.
"""

from __future__ import annotations

import sys
from argparse import ArgumentParser, Namespace, _SubParsersAction
from pathlib import Path

from fairshare.cli._files import check_readable, write_text
from fairshare.cli.catalog import add_catalog_option, add_debug_option, load_cli_catalog
from fairshare.errors import InvalidInputError

__all__ = ["add_import_command", "parse_type_map", "parse_window"]


def parse_type_map(values: list[str] | None) -> dict[str, str]:
    """``["G2=A100-80GB,G3=H100", "MISC=K80"]`` -> ``{"G2": "A100-80GB", "G3": "H100", "MISC": "K80"}``.

    >>> parse_type_map(["G2=A100-80GB,G3=H100"])
    {'G2': 'A100-80GB', 'G3': 'H100'}
    """
    out: dict[str, str] = {}
    for text in values or []:
        for part in filter(None, (p.strip() for p in text.split(","))):
            kind, eq, name = part.partition("=")
            if not eq or not kind.strip() or not name.strip():
                raise InvalidInputError("--gpu-type-map", text, f"expected KIND=TYPE pairs, got {part!r}")
            out[kind.strip()] = name.strip()
    return out


def parse_window(text: str | None) -> tuple[float | None, float | None] | None:
    """``"3000:3168"`` -> ``(3000.0, 3168.0)``; either side may be empty (``"3000:"``, ``":48"``).

    >>> parse_window("3000:3168")
    (3000.0, 3168.0)
    >>> parse_window(":48")
    (None, 48.0)
    """
    if text is None:
        return None
    lo, colon, hi = text.partition(":")
    if not colon or not (lo.strip() or hi.strip()):
        raise InvalidInputError("--window", text, "expected FROM:TO in hours since the first submission "
                                "(e.g. 3000:3168; either side may be empty)")
    bounds: list[float | None] = []
    for part in (lo.strip(), hi.strip()):
        if not part:
            bounds.append(None)
            continue
        try:
            bounds.append(float(part))
        except ValueError:
            raise InvalidInputError("--window", text, f"{part!r} is not a number of hours") from None
    return bounds[0], bounds[1]


def _import(args: Namespace) -> int:
    from fairshare.sim.cluster_spec import parse_cluster
    from fairshare.sim.importers import CsvColumns, import_trace
    from fairshare.sim.traces import format_trace

    out = Path(args.import_output)
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in ("csv", "json"):
        raise InvalidInputError("--output", args.import_output, "must end in .csv or .json")
    for f in args.files:
        check_readable("FILE", f)
    csv_opts = {k: getattr(args, k) for k in ("arrival", "gpus", "duration", "end", "start", "gpu_type", "user",
                                               "id", "model", "status", "censored")}
    columns = None
    if args.format == "csv":
        for need in ("arrival", "gpus"):
            if csv_opts[need] is None:
                raise InvalidInputError(f"--{need}", None, "required with --format csv (the column that holds it)")
        try:
            columns = CsvColumns(**csv_opts, running=tuple(args.running or ("Running",)), time_unit=args.time_unit,
                                 gpu_unit=args.gpu_unit)
        except InvalidInputError as exc:
            raise InvalidInputError(f"--{exc.field.replace('_', '-')}", exc.value, exc.reason) from None
    else:
        given = [k for k, v in csv_opts.items() if v is not None]
        if given:
            raise InvalidInputError(f"--{given[0].replace('_', '-')}", csv_opts[given[0]],
                                    f"column options are for --format csv; the {args.format} format knows its columns")
    targets = None
    if args.cluster is not None:
        try:
            targets = list(parse_cluster(args.cluster))
        except InvalidInputError as exc:
            raise InvalidInputError("--cluster", args.cluster, exc.reason) from None
    cat = load_cli_catalog(args)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    window = parse_window(args.window)
    try:
        res = import_trace(args.files, args.format, catalog=cat, columns=columns, fractional=args.fractional,
                           gpu_type_map=parse_type_map(args.gpu_type_map), models=models, gpu_types=targets,
                           window=window, carry_in=args.carry_in)
    except InvalidInputError as exc:
        if exc.field == "carry_in":
            raise InvalidInputError("--carry-in", True, f"{exc.reason} (--window FROM:TO)") from None
        if exc.field != "window":
            raise
        raise InvalidInputError("--window", args.window, exc.reason) from None
    text = format_trace(res.trace, fmt, meta={"imported": res.source} if fmt == "json" else None)
    write_text("--output", out, text)
    for line in res.summary():
        print(line, file=sys.stderr)
    n = len(res.trace)
    print(f"wrote {n} job{'s' if n != 1 else ''} to {out}", file=sys.stderr)
    return 0


def add_import_command(sub: _SubParsersAction[ArgumentParser]) -> None:
    """Add ``import`` to the subcommands of ``fairshare trace``."""
    from fairshare.sim.importers import FORMATS, GPU_UNITS, TIME_UNITS

    p = sub.add_parser("import", help="convert a real cluster trace (Philly, Alibaba PAI 2020/2023, any CSV)",
                       description="Convert a real cluster trace into a fairshare trace by a documented, "
                                   "deterministic rule (docs/traces.md): built-in formats philly, pai2020 and "
                                   "openb2023, or any CSV mapped column by column. Writes JSON (with a record of the "
                                   "source) or CSV by the suffix of -o, and prints a summary and a suggested "
                                   "--cluster on stderr.")
    p.add_argument("files", nargs="+", metavar="FILE", help="the source files (job log, task table, machine list, ...)")
    p.add_argument("--format", required=True, choices=FORMATS, help="source format")
    p.add_argument("-o", "--output", dest="import_output", required=True, metavar="OUT",
                   help="trace to write (.json or .csv)")
    add_catalog_option(p)
    p.add_argument("--cluster", default=None, metavar="SPEC",
                   help="the cluster the trace will replay on (its GPU types are the targets of the rule; "
                        "default: the suggested cluster's types, else every catalog type)")
    p.add_argument("--fractional", choices=("share", "whole", "drop"), default="share",
                   help="a request of part of one GPU: keep it as a fractional scale (default), schedule it on a "
                        "whole GPU (the request stays in `gpus`), or leave the job out")
    p.add_argument("--gpu-type-map", action="append", metavar="KIND=TYPE[,...]",
                   help="name the trace's GPU kinds with catalog types (e.g. G2=A100-80GB); repeatable")
    p.add_argument("--models", default=None, metavar="M1,M2", help="models the rule may choose from (default: all)")
    p.add_argument("--window", default=None, metavar="FROM:TO",
                   help="keep the jobs submitted FROM to TO hours after the source's first submission (either "
                        "side may be empty); the others are counted as skipped")
    p.add_argument("--carry-in", action="store_true",
                   help="with --window FROM:...: also keep the jobs submitted before FROM that were not done at FROM "
                        "(waiting or running), arriving at FROM (time 0) with the run time they had left")
    g = p.add_argument_group("--format csv: columns (names in the header) and units")
    g.add_argument("--arrival", metavar="COL", help="submit time (number in --time-unit, or ISO 8601 date, UTC)")
    g.add_argument("--gpus", metavar="COL", help="GPUs asked for (in --gpu-unit)")
    g.add_argument("--duration", metavar="COL", help="run time (number in --time-unit)")
    g.add_argument("--end", metavar="COL", help="end time, instead of --duration (run time = end - start)")
    g.add_argument("--start", metavar="COL", help="start time (with --end; default: the submit time); an empty cell: "
                                                    "never started")
    g.add_argument("--gpu-type", metavar="COL", help="GPU type the job ran on")
    g.add_argument("--user", metavar="COL", help="user (becomes the tenant)")
    g.add_argument("--id", metavar="COL", help="job id (default: the data row number)")
    g.add_argument("--model", metavar="COL", help="model or job class name")
    g.add_argument("--status", metavar="COL", help="status; --running values mark jobs still running (censored)")
    g.add_argument("--running", action="append", metavar="VALUE", help="status meaning still running (default Running)")
    g.add_argument("--censored", metavar="COL", help="column that is true for jobs still running at the end")
    g.add_argument("--time-unit", choices=tuple(TIME_UNITS), default="s", help="unit of numeric times (default s)")
    g.add_argument("--gpu-unit", choices=tuple(GPU_UNITS), default="gpus",
                   help="unit of --gpus: gpus, percent (50 = half a GPU) or milli (default gpus)")
    p.set_defaults(func=_import)
    add_debug_option(p)
