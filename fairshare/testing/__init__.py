"""Test support that ships with the library, so users can check their own policies and rounds the same way.

:mod:`~fairshare.testing.random_rounds`
    Random rounds shaped like the real catalog (benchmarks and property tests).
:mod:`~fairshare.testing.strategies`
    Hypothesis strategies for valid round documents and problems (needs ``hypothesis``).
:mod:`~fairshare.testing.reference`
    Small named rounds with their known optimal objective, for every solve path.
"""
