"""``fairshare trace import``: turn a real cluster trace into a fairshare trace (:mod:`fairshare.sim.importers`).

Built-in formats read the public traces' own files (``--format philly``, ``pai2020``, ``openb2023``); ``--format
csv`` reads any CSV with a header, mapped column by column (``--arrival COL --gpus COL --duration COL`` and
optional ``--gpu-type --user --id --model --status --censored``, with ``--time-unit`` and ``--gpu-unit``).
The trace is written as JSON (with a ``meta`` record of the source and the options) or CSV, by the suffix of
``-o``; a summary and a suggested ``--cluster`` go to stderr.
"""

from __future__ import annotations

import re
import sys
from argparse import ArgumentParser, Namespace, _SubParsersAction
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from fairshare.cli._files import check_readable, write_text
from fairshare.cli.catalog import add_catalog_option, add_debug_option, load_cli_catalog
from fairshare.documents import MAX_JSON_BYTES
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
            kind, name = kind.strip(), name.strip()
            if out.get(kind, name) != name:
                raise InvalidInputError("--gpu-type-map", part, f"{kind} is already mapped to {out[kind]}: "
                                        "give each source GPU type one target")
            out[kind] = name
    return out


_WINDOW_HELP = ("expected FROM:TO in hours since the first submission (3000:3168), or dates and times in ISO "
                "8601, UTC unless an offset is given (2017-11-01:2017-11-02, 2017-11-01T08:00/2017-11-01T20:00, or "
                "one date for that whole day: 2017-11-01); either side may be empty")


def _bound(text: str) -> float | datetime | None:
    """One side of ``--window``: empty, a number of hours, or an ISO 8601 date and time (naive: UTC)."""
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    dt = datetime.fromisoformat(text)          # ValueError if it is not a date either
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)


def parse_window(text: str | None) -> tuple[float | datetime | None, float | datetime | None] | None:
    """``--window``: hours ``FROM:TO`` or dates ``FROM:TO`` / ``FROM/TO`` (ISO 8601; naive = UTC); one date = a day.

    Either side may be empty. A date without a time is its midnight; ``TO`` is excluded.

    >>> parse_window("3000:3168")
    (3000.0, 3168.0)
    >>> parse_window(":48")
    (None, 48.0)
    >>> [d.isoformat() for d in parse_window("2017-11-01T08:00:2017-11-01T20:30")]
    ['2017-11-01T08:00:00+00:00', '2017-11-01T20:30:00+00:00']
    >>> [d.isoformat() for d in parse_window("2017-11-01")]
    ['2017-11-01T00:00:00+00:00', '2017-11-02T00:00:00+00:00']
    """
    if text is None:
        return None
    t = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
        try:
            day = datetime.fromisoformat(t).replace(tzinfo=timezone.utc)
        except ValueError:
            raise InvalidInputError("--window", text, _WINDOW_HELP) from None
        return day, day + timedelta(days=1)
    for sep in ("/", ":"):                 # ISO 8601 intervals use '/'; dates and times hold ':' themselves
        for i, c in enumerate(t):
            if c != sep:
                continue
            try:
                lo, hi = _bound(t[:i].strip()), _bound(t[i + 1:].strip())
            except ValueError:
                continue
            if lo is None and hi is None:
                continue
            if isinstance(lo, float) != isinstance(hi, float) and lo is not None and hi is not None:
                raise InvalidInputError("--window", text, "FROM and TO must both be hours or both be dates")
            return lo, hi
    raise InvalidInputError("--window", text, _WINDOW_HELP)


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
    tenant = args.tenant
    columns = None
    if args.format == "csv":
        for need in ("arrival", "gpus"):
            if csv_opts[need] is None:
                raise InvalidInputError(f"--{need}", None, "required with --format csv (the column that holds it)")
        try:
            columns = CsvColumns(**csv_opts, tenant=tenant, running=tuple(args.running or ("Running",)),
                                 time_unit=args.time_unit, gpu_unit=args.gpu_unit, arrival_gaps=args.arrival_gaps)
            tenant = None                                  # a column of the CSV, read by the reader
        except InvalidInputError as exc:
            raise InvalidInputError(f"--{exc.field.replace('_', '-')}", exc.value, exc.reason) from None
    else:
        given = [k for k, v in csv_opts.items() if v is not None] + (["arrival_gaps"] if args.arrival_gaps else [])
        if given:
            raise InvalidInputError(f"--{given[0].replace('_', '-')}", csv_opts.get(given[0], True),
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
                           window=window, carry_in=args.carry_in, tenant=tenant)
    except MemoryError:  # an honest message, not "internal error": the source is too large for this machine
        size = sum(Path(f).stat().st_size for f in args.files if Path(f).is_file())
        raise InvalidInputError("FILE", args.files, f"not enough memory to import {size / 2**20:,.0f} MB of source "
                                "(importing takes about 40 times a CSV source's size): cut the source into "
                                "parts") from None
    except InvalidInputError as exc:
        if exc.field == "tenant":
            raise InvalidInputError("--tenant", args.tenant, exc.reason) from None
        if exc.field == "carry_in":
            raise InvalidInputError("--carry-in", True, f"{exc.reason} (--window FROM:TO)") from None
        if exc.field != "window":
            raise
        raise InvalidInputError("--window", args.window, exc.reason) from None
    text = format_trace(res.trace, fmt, meta={"imported": res.source} if fmt == "json" else None)
    size = len(text.encode("utf-8")) if fmt == "json" and 4 * len(text) > MAX_JSON_BYTES else len(text)
    if fmt == "json" and size > MAX_JSON_BYTES:  # the trace reader (a JSON document) would refuse it
        raise InvalidInputError("--output", str(out), f"the JSON trace of {len(res.trace):,} jobs would be "
                                f"{size / 2**20:,.0f} MiB, above the {MAX_JSON_BYTES // 2**20} MiB a JSON "
                                "document may have: write it as .csv (no size limit), or keep a part (--window)")
    write_text("--output", out, text)
    for line in res.summary():
        print(line, file=sys.stderr)
    if args.cluster is not None:
        print(_load_line(res, cat, args.cluster), file=sys.stderr)
    n = len(res.trace)
    print(f"wrote {n} job{'s' if n != 1 else ''} to {out}", file=sys.stderr)
    return 0


def _load_line(res: Any, cat: Any, cluster: str) -> str:
    """The imported trace's load on ``--cluster`` (:func:`fairshare.sim.load.offered_load`), or why it cannot run."""
    from fairshare.sim.catalog.scaleout import derive_scale_out
    from fairshare.sim.load import offered_load

    if res.source.get("derived_scales"):
        cat = derive_scale_out(cat)
    try:
        return f"load on --cluster {cluster}: {offered_load(res.trace, cluster, cat).describe()}"
    except InvalidInputError as exc:
        return f"load on --cluster {cluster}: cannot replay there: {exc}"


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
                   help="keep the jobs submitted from FROM to TO (excluded): hours after the source's first "
                        "submission (3000:3168), or dates and times, ISO 8601, UTC unless an offset is given "
                        "(2017-11-01:2017-11-02, 2017-11-01T08:00/2017-11-01T20:00; one date: that day); either "
                        "side may be empty; the others are counted as skipped")
    p.add_argument("--tenant", default=None, metavar="FIELD",
                   help="the source field that becomes each job's tenant (default: the user): with --format csv a "
                        "column (e.g. a virtual cluster or team); philly: vc or user")
    p.add_argument("--carry-in", action="store_true",
                   help="with --window FROM:...: also keep the jobs submitted before FROM that were not done at FROM "
                        "(waiting or running), arriving at FROM (time 0) with the run time they had left")
    g = p.add_argument_group("--format csv: columns (names in the header) and units")
    g.add_argument("--arrival", metavar="COL", help="submit time (number in --time-unit, or ISO 8601 date, UTC)")
    g.add_argument("--arrival-gaps", action="store_true",
                   help="the --arrival column is the time since the previous row's submission (rows in submission "
                        "order): submit times are its running sum")
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
