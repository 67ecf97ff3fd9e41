"""The ``fairshare`` command line.

``fairshare allocate ROUND.json [--mode exact|lp|fast] [--time-limit S] [-o OUT.json]`` solves one round
(:mod:`fairshare.cli.allocate`); ``fairshare trace``, ``fairshare simulate`` and ``fairshare compare`` write
and replay traces (:mod:`fairshare.cli.simulate`); ``fairshare kube plan`` plans a Kubernetes cluster from a
snapshot (:mod:`fairshare.cli.kube`). ``--debug`` (before or after the command) prints the
traceback of any error.

Exit status
-----------
0
    Success.
2
    Bad input: an :class:`~fairshare.errors.InvalidInputError` (invalid round, trace, option or policy; a file
    named on the command line that cannot be read or written) or a usage error reported by argparse. One line
    ``fairshare: error: ...`` on stderr names the field or path.
1
    Not the input's fault: a :class:`~fairshare.errors.SolverError` (its message says what to try), another
    :class:`~fairshare.errors.FairshareError` such as a policy error, or a bug (``fairshare: internal error:
    ...``, please report it).
130
    Interrupted (Ctrl-C).
143
    Terminated (SIGTERM). The command stops as it does on Ctrl-C: worker processes of ``compare`` are
    stopped, and a run folder being written is left marked incomplete.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Sequence

from fairshare.cli.allocate import add_allocate_command, example_round_text
from fairshare.cli.catalog import add_catalog_command
from fairshare.cli.kube import add_kube_command
from fairshare.cli.simulate import add_simulation_commands
from fairshare.errors import FairshareError, InvalidInputError, SolverError

__all__ = ["build_parser", "example_round_text", "main"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(BaseException):
    """Raised in the main thread when the command receives SIGTERM, so that its clean-up code runs."""


def _on_sigterm(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM during the clean-up ends the process
    raise Terminated()

_DEBUG_HELP = "print the traceback of any error"


def build_parser() -> argparse.ArgumentParser:
    """The parser of the ``fairshare`` command (every subcommand also accepts ``--debug``)."""
    parser = argparse.ArgumentParser(
        prog="fairshare", description="Solve GPU-cluster scheduling rounds and replay traces (docs/cli.md).")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True)
    add_allocate_command(sub)
    add_simulation_commands(sub)
    add_catalog_command(sub)
    add_kube_command(sub)
    for command in sub.choices.values():
        # SUPPRESS: a subcommand sets ``debug`` only when given, so ``fairshare --debug allocate`` keeps it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


_MAX_LINE = 1000  # characters of an error line; a value may be megabytes long (a 1 MB job id)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 30]}... ({len(text)} characters)"


def _one_line(exc: BaseException) -> str:
    """The error as one line of bounded length (the field, value and reason of bad input each cut if long)."""
    if isinstance(exc, InvalidInputError):
        text = f"`{_cut(str(exc.field), 200)}` = {_cut(repr(exc.value), 120)}: {_cut(str(exc.reason), 600)}"
    else:
        text = str(exc)
    return _cut(" ".join(text.split()), _MAX_LINE)


def _kind(exc: BaseException) -> str:
    """``PolicyError`` -> ``"policy error"``."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(exc).__name__).lower()


def _report(exc: BaseException, message: str, debug: bool) -> None:
    if debug:
        traceback.print_exception(exc)
    print(message, file=sys.stderr)


DASH_VALUE_OPTIONS = ("--window",)
"""Options whose value may start with ``-`` (``--window -1:``); argparse would take that value for an option."""


def _join_dash_values(argv: list[str]) -> list[str]:
    """``["--window", "-1:"]`` -> ``["--window=-1:"]`` (what argparse reads as the option's value)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in DASH_VALUE_OPTIONS and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and not argv[i + 1].startswith("--"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fairshare`` command with ``argv`` (default: ``sys.argv[1:]``); returns the exit status.

    Errors never escape: bad input returns 2, a solver or policy failure or a bug returns 1, each with one
    line on stderr (and the traceback before it with ``--debug``). See the module documentation.

    Examples
    --------
    >>> main(["allocate", "--example", "--mode", "nope"])  # usage error, message on stderr
    2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(_join_dash_values(sys.argv[1:] if argv is None else list(argv)))
    except SystemExit as exc:  # argparse: usage error (2, message already printed) or --help (0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    debug = bool(args.debug)
    own_handler = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if own_handler else None
    try:
        return _run(args, debug)
    finally:
        if own_handler:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, debug: bool) -> int:
    try:
        return int(args.func(args))
    except Terminated as exc:
        _report(exc, "fairshare: terminated", debug)
        return EXIT_TERMINATED
    except InvalidInputError as exc:
        _report(exc, f"fairshare: error: {_one_line(exc)}", debug)
        return EXIT_BAD_INPUT
    except SolverError as exc:
        _report(exc, f"fairshare: solver error: {_one_line(exc)}", debug)
        return EXIT_FAILURE
    except FairshareError as exc:  # e.g. PolicyError: a failure of the library, not of the input
        _report(exc, f"fairshare: {_kind(exc)}: {_one_line(exc)}", debug)
        return EXIT_FAILURE
    except BrokenPipeError:  # output piped into a reader that stopped early (e.g. head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt as exc:
        _report(exc, "fairshare: interrupted", debug)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - a bug: one line (the traceback with --debug), not a bare traceback
        advice = "with the command, the input and this traceback" if debug else (
            "with the command and input; run with --debug for the traceback")
        _report(exc, f"fairshare: internal error: {type(exc).__name__}: {_one_line(exc)} "
                     f"(please report it {advice})", debug)
        return EXIT_FAILURE
