"""EngineConfig: one checked value for an Engine's settings; the Engine's setters replace it."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare import Engine, EngineConfig, SolveOptions
from fairshare.errors import InvalidInputError
from fairshare.priority import NoPriority
from fairshare.shortfall_price import NoPrice

BAD = [("mode", "fastest"), ("epsilon", 1.0), ("epsilon", float("nan")), ("fairness_weight", 0),
       ("fairness_weight", True), ("options", {"threads": 0}), ("options", 3), ("round_seconds", 0),
       ("incremental", 1), ("priority", "loudest"), ("shortfall_price", "dearest")]


@pytest.mark.parametrize(("field", "value"), BAD)
def test_every_bad_field_is_refused_by_the_config_the_engine_and_its_setter(field, value):
    with pytest.raises(InvalidInputError) as made:
        EngineConfig(**{field: value})
    with pytest.raises(InvalidInputError) as built:
        Engine({"V100": 1}, **{field: value})
    assert made.value.field == built.value.field and made.value.field.split(".")[0] in (field, "priority",
                                                                                       "shortfall_price")
    engine = Engine({"V100": 1})
    before = engine.config
    if field in ("mode", "epsilon", "fairness_weight", "options", "round_seconds", "incremental"):
        with pytest.raises(InvalidInputError):
            setattr(engine, field, value)
        assert engine.config is before  # nothing changed


def test_a_setter_replaces_the_frozen_config():
    engine = Engine({"V100": 2}, epsilon=0.1)
    first = engine.config
    engine.epsilon = 0.2
    assert engine.config is not first and engine.config.epsilon == 0.2 == engine.epsilon and first.epsilon == 0.1
    with pytest.raises(FrozenInstanceError):
        engine.config.epsilon = 0.3  # type: ignore[misc]
    engine.config = replace(engine.config, mode="exact", options={"time_limit": 5})
    assert engine.mode == "exact" and engine.options == SolveOptions(time_limit=5)
    with pytest.raises(InvalidInputError) as err:
        engine.mode = "fast"  # time_limit does not apply to fast
    assert err.value.field == "options.time_limit" and engine.mode == "exact"
    with pytest.raises(InvalidInputError) as err:
        engine.config = {"mode": "fast"}  # type: ignore[assignment]
    assert err.value.field == "config"


def test_turning_incremental_off_drops_what_was_kept():
    engine = Engine({"V100": 2})
    jobs = [{"id": "a", "scale": 1, "throughput": {"V100": 1.0}}, {"id": "b", "scale": 1, "throughput": {"V100": 2.0}}]
    engine.step(jobs)
    assert engine.incremental and engine._kept is not None
    engine.incremental = False
    assert engine._kept is None and not engine.config.incremental


@settings(max_examples=25)
@given(mode=st.sampled_from(["fast", "exact", "lp"]), epsilon=st.floats(0, 0.99),
       weight=st.floats(1e-3, 1e6), seconds=st.floats(1, 86400), priority=st.sampled_from(["none", "remaining"]),
       price=st.sampled_from(["none", "finish-time"]))
def test_a_saved_engine_loads_with_the_same_config(mode, epsilon, weight, seconds, priority, price):
    engine = Engine({"V100": 2, "K80": 1}, mode=mode, epsilon=epsilon, fairness_weight=weight, round_seconds=seconds,
                    priority=priority, shortfall_price=price)
    cfg = EngineConfig(mode=mode, epsilon=epsilon, fairness_weight=weight, round_seconds=seconds, priority=priority,
                       shortfall_price=price)
    assert engine.config == cfg
    loaded = Engine.from_state(engine.state())
    assert loaded.config == cfg
    assert isinstance(cfg.priority, NoPriority) == (priority == "none")
    assert isinstance(cfg.shortfall_price, NoPrice) == (price == "none")
