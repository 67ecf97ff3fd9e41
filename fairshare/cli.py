"""The ``fairshare`` command line.

``fairshare allocate ROUND.json [--mode exact|lp|fast] [--time-limit S] [-o OUT.json]`` solves one round
(``--example`` solves the bundled example round). ``fairshare simulate`` and ``fairshare compare`` replay a
trace (see ``fairshare simulate --help``). Exit status: 0 on success, 2 on bad input (message on stderr),
1 on a solver failure.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from fairshare.allocate import MODES, allocate
from fairshare.errors import InvalidInputError, SolverError

__all__ = ["main"]


def example_round_text() -> str:
    """The bundled example round (spec section 6) as JSON text."""
    return resources.files("fairshare").joinpath("data/example_round.json").read_text()


def _allocate(args: argparse.Namespace) -> int:
    if args.example == (args.round is not None):
        raise InvalidInputError("ROUND", args.round, "give a round file or --example (not both)")
    if args.example:
        text = example_round_text()
    elif args.round == "-":
        text = sys.stdin.read()
    else:
        path = Path(args.round)
        if not path.is_file():
            raise InvalidInputError("ROUND", args.round, "no such file")
        text = path.read_text()
    options = {}
    if args.time_limit is not None:
        options["time_limit"] = args.time_limit
    alloc = allocate(text, mode=args.mode, **options)
    out = alloc.to_json(indent=2)
    if args.output:
        Path(args.output).write_text(out + "\n")
        print(f"{alloc.status} ({alloc.mode}): objective {alloc.objective:.6g}, E/C {alloc.utilization:.4f}, "
              f"{len(alloc.placements)} placements -> {args.output}", file=sys.stderr)
    else:
        print(out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fairshare", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("allocate", help="solve one scheduling round (JSON in, JSON out)")
    a.add_argument("round", nargs="?", help="round document (JSON file, or - for stdin)")
    a.add_argument("--example", action="store_true", help="solve the bundled example round")
    a.add_argument("--mode", choices=MODES, default="fast", help="solve mode (default: fast)")
    a.add_argument("--time-limit", type=float, default=None, help="exact mode: seconds before stopping")
    a.add_argument("-o", "--output", help="write the allocation here instead of stdout")
    a.set_defaults(func=_allocate)
    try:
        from fairshare.simulate_cli import add_simulation_commands
    except ImportError:  # pragma: no cover - simulator not installed
        pass
    else:
        add_simulation_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InvalidInputError as exc:
        print(f"fairshare: error: {exc}", file=sys.stderr)
        return 2
    except SolverError as exc:
        print(f"fairshare: solver error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into a reader that stopped early (e.g. head)
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
