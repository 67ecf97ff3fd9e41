"""Hypothesis profiles of the test suite, chosen by the environment variable ``HYPOTHESIS_PROFILE``.

``default`` (local runs) and ``ci`` keep the default run short and derandomised (the same examples every
run, so a red CI run is reproducible); ``thorough`` is a long, random hunt
(``HYPOTHESIS_PROFILE=thorough pytest``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=30, deadline=None, derandomize=True)
settings.register_profile("ci", max_examples=30, deadline=None, print_blob=True, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
