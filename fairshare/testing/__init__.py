"""Test support that ships with the library: random round generators, hypothesis strategies, invariant checks.

Users of fairshare can run the same invariant checks on their own policies and rounds.
"""
