"""The settings of an :class:`~fairshare.engine.Engine`: how every round is planned, checked once.

:class:`EngineConfig` is a frozen value: an engine holds one (``engine.config``) and changing a setting
(``engine.epsilon = 0.2``, or ``engine.config = replace(engine.config, mode="exact")``) replaces it with a new,
checked one. The engine's history (deficits, rounds committed, the last binding) and its cluster are not
settings and are not here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, overload

from fairshare._validate import clip
from fairshare.engine_state import (
    DEFAULT_PRIORITY,
    DEFAULT_SHORTFALL_PRICE,
    check_epsilon,
    check_fairness_weight,
    check_mode,
    check_options,
    check_round_seconds,
)
from fairshare.errors import InvalidInputError
from fairshare.methods.options import SolveOptions
from fairshare.priority import PriorityRule, priority_rule
from fairshare.running import DEFAULT_ROUND_SECONDS
from fairshare.shortfall_price import ShortfallPriceRule, price_rule

__all__ = ["EngineConfig", "Setting"]


@dataclass(frozen=True, init=False)
class EngineConfig:
    """How an engine plans every round; every field checked at construction, naming it.

    Parameters
    ----------
    mode : {"fast", "exact", "lp"}
        Solve mode of every round.
    epsilon : float
        Fairness slack of every round, in ``[0, 1)``.
    fairness_weight : float
        Price of weighted shortfall, ``0 < lambda <= MAX_VALUE``.
    options : SolveOptions or mapping, optional
        Solver options, each applying to ``mode``; stored as a :class:`SolveOptions`.
    priority : str, rule or callable
        The priority rule (:mod:`fairshare.priority`), stored as a rule object.
    shortfall_price : str, rule or callable
        The shortfall-price rule (:mod:`fairshare.shortfall_price`), stored as a rule object.
    round_seconds : float
        Length of a round in seconds, the unit of the deficits, in ``(0, MAX_SECONDS]``.
    incremental : bool
        Keep the last plan's jobs and LP between plans (see :class:`~fairshare.engine.Engine`).

    Raises
    ------
    InvalidInputError
        For an invalid field, naming it (``epsilon``, ``options.threads``).

    Examples
    --------
    >>> from dataclasses import replace
    >>> cfg = EngineConfig(epsilon=0.1)
    >>> replace(cfg, mode="exact").mode, cfg.options.for_mode("fast") == cfg.options
    ('exact', True)
    >>> EngineConfig(fairness_weight=0)
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `fairness_weight` = 0: must be a number in (0, 1e+12]
    """

    mode: str
    epsilon: float
    fairness_weight: float
    options: SolveOptions
    priority: PriorityRule
    shortfall_price: ShortfallPriceRule
    round_seconds: float
    incremental: bool

    def __init__(self, *, mode: str = "fast", epsilon: float = 0.0, fairness_weight: float = 100.0,
                 options: SolveOptions | Mapping[str, Any] | None = None,
                 priority: str | PriorityRule | Callable[..., Any] | None = DEFAULT_PRIORITY,
                 shortfall_price: str | ShortfallPriceRule | Callable[..., Any] | None = DEFAULT_SHORTFALL_PRICE,
                 round_seconds: float = DEFAULT_ROUND_SECONDS, incremental: bool = True) -> None:
        set_ = object.__setattr__
        set_(self, "mode", check_mode(mode, "mode"))
        set_(self, "epsilon", check_epsilon(epsilon, "epsilon"))
        set_(self, "fairness_weight", check_fairness_weight(fairness_weight, "fairness_weight"))
        set_(self, "options", check_options(options, self.mode, "options"))
        set_(self, "priority", priority_rule(priority))
        set_(self, "shortfall_price", price_rule(shortfall_price))
        set_(self, "round_seconds", check_round_seconds(round_seconds, "round_seconds"))
        if not isinstance(incremental, bool):
            raise InvalidInputError("incremental", clip(incremental), "must be True or False")
        set_(self, "incremental", incremental)


_T = TypeVar("_T")


class _Configured(Protocol):
    """An object with a replaceable :class:`EngineConfig` (an engine)."""

    config: EngineConfig


class Setting(Generic[_T]):
    """A setting of an engine that reads one field of its ``config``.

    Assigning a value replaces the config with a new one, checked by :class:`EngineConfig`
    (``engine.epsilon = 0.2``).
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, engine: None, owner: type | None = None) -> Setting[_T]: ...
    @overload
    def __get__(self, engine: _Configured, owner: type | None = None) -> _T: ...

    def __get__(self, engine: _Configured | None, owner: type | None = None) -> _T | Setting[_T]:
        if engine is None:
            return self
        value: _T = getattr(engine.config, self._name)
        return value

    def __set__(self, engine: _Configured, value: Any) -> None:
        engine.config = dataclasses.replace(engine.config, **{self._name: value})
