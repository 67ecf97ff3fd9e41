"""Example scripts: one per table or figure of results in ``docs/``, and a worked integration, each with ``main(argv)``.

Run one from the repository root with fairshare installed (``pip install -e .``), as a script or as a
module: ``python examples/ablations.py --quick`` or ``python -m examples.ablations --quick``. The package is
not part of the library (it is not installed). The performance tools are in ``benchmarks/``.
"""
