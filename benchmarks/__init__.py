"""Performance tools of fairshare: what a round, a warm round, a simulation or a binding costs in time and memory.

Each tool has ``main(argv)`` and writes a Markdown report (``docs/results/`` by default; ``--out`` elsewhere).
Run one from the repository root with fairshare installed (``pip install -e .``), as a script or as a module:
``python benchmarks/bench_round.py --quick`` or ``python -m benchmarks.bench_round --quick``. The package is not
part of the library (it is not installed); ``benchmarks/README.md`` lists the tools.
"""
