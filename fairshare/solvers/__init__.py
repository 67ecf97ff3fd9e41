"""Solver backends: HiGHS (arrays, via highspy) and Pyomo (the readable reference model)."""
