"""``fairshare allocate``: solve one round; a round document in, the allocation document out.

``fairshare allocate ROUND.json [--mode exact|lp|fast] [--time-limit S] [--previous OUT.json] [-o OUT.json]``
(``-`` reads the round from stdin, ``--example`` solves the bundled example round of spec section 6). A round
that names its ``nodes`` gets a ``binding``; ``--previous`` passes the previous round's allocation output so
that placements that did not change keep their GPUs.
"""

from __future__ import annotations

import sys
from argparse import ArgumentParser, Namespace, _SubParsersAction
from importlib import resources
from typing import Any

from fairshare import MODES, allocate
from fairshare.allocation import Allocation
from fairshare.cli._files import cannot, read_bytes, read_stream, write_text
from fairshare.cluster import Binding
from fairshare.documents import MAX_JSON_BYTES, read_json
from fairshare.errors import InvalidInputError
from fairshare.methods import SolveOptions

__all__ = ["add_allocate_command", "example_round_text", "run_allocate"]


def example_round_text() -> str:
    """The bundled example round (spec section 6) as JSON text.

    >>> import json
    >>> sorted(json.loads(example_round_text())["gpus"])
    ['K80', 'P100', 'V100']
    """
    return resources.files("fairshare").joinpath("data/example_round.json").read_text()


def run_allocate(args: Namespace) -> int:
    """Run ``fairshare allocate`` with parsed arguments; returns the exit status (0)."""
    if args.example == (args.round is not None):
        raise InvalidInputError("ROUND", args.round, "give a round file or --example (not both)")
    options: dict[str, Any] = {}
    if args.time_limit is not None:
        options["time_limit"] = args.time_limit
    try:  # refused before anything is read
        SolveOptions.coerce(None, **options).for_mode(args.mode)
    except InvalidInputError as exc:
        if exc.field != "time_limit":  # pragma: no cover - the only option the command passes
            raise
        reason = (f"applies to --mode exact only, not to --mode {args.mode}" if args.mode != "exact"
                  else exc.reason)
        raise InvalidInputError("--time-limit", args.time_limit, reason) from None
    source: str | bytes
    if args.example:
        source = example_round_text()
    elif args.round == "-":
        source = read_stream("ROUND", "-", sys.stdin.buffer, MAX_JSON_BYTES)
    else:
        source = read_bytes("ROUND", args.round, MAX_JSON_BYTES)
    previous = None
    if args.previous is not None:
        prev_doc = read_json(read_bytes("--previous", args.previous, MAX_JSON_BYTES), what="--previous")
        if not isinstance(prev_doc, dict) or "binding" not in prev_doc:
            raise InvalidInputError("--previous", args.previous, "must be an allocation output with a `binding` "
                                    "(from a round that names its nodes)")
        previous = Binding.from_dict(prev_doc["binding"], "--previous.binding")
    try:
        alloc = allocate(source, mode=args.mode, previous_binding=previous, **options)
    except InvalidInputError as exc:
        if exc.field != "previous_binding":
            raise
        raise InvalidInputError("--previous", args.previous, exc.reason) from None
    out = alloc.to_json(indent=2) + "\n"
    if args.output:
        write_text("--output", args.output, out)
        v = alloc.values
        print(f"{alloc.status} ({alloc.report.mode}): objective {v.objective:.6g}, E/C {v.utilization:.4f}, "
              f"{len(alloc.placements)} placements{_bound(alloc)} -> {args.output}", file=sys.stderr)
    else:
        try:
            sys.stdout.write(out)
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:  # e.g. stdout redirected to a full disk
            raise cannot("stdout", "<stdout>", "write", exc) from exc
    return 0


def _bound(alloc: Allocation) -> str:
    b = alloc.binding
    return "" if b is None else f" on nodes ({b.split_gangs} split gangs, {b.moved_jobs} moved jobs)"


def add_allocate_command(sub: _SubParsersAction[ArgumentParser]) -> ArgumentParser:
    """Add ``allocate`` to the ``fairshare`` command's subparsers; returns its parser."""
    a = sub.add_parser("allocate", help="solve one scheduling round (JSON in, JSON out)")
    a.add_argument("round", nargs="?", help="round document (JSON file, or - for stdin)")
    a.add_argument("--example", action="store_true", help="solve the bundled example round")
    a.add_argument("--mode", choices=MODES, default="fast", help="solve mode (default: fast)")
    a.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="exact mode: seconds for the whole solve; the best placement known then is returned")
    a.add_argument("--previous", metavar="OUT.json", default=None,
                   help="rounds with nodes: the previous round's allocation output; unchanged placements keep "
                        "their GPUs")
    a.add_argument("-o", "--output", help="write the allocation here instead of stdout")
    a.set_defaults(func=run_allocate)
    return a
