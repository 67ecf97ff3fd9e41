"""The engine's state document (what :class:`~fairshare.engine.Engine` saves and loads): schema, checks, file.

The state schema sits beside the round document's (:mod:`fairshare.documents`): :func:`state_to_dict` writes
the document, :func:`state_from_dict` checks one exactly (``version`` the integer 1, no unknown key, every value
of its type) into an :class:`EngineState`, and :func:`load_state` reads a state file, size-limited
(:func:`fairshare._io.read_limited`), naming the field and the path in every error. The ``check_*`` functions
are the engine's settings' rules, shared by the constructor, the setters and the state reader; each names
the field it is given (``epsilon``, ``state.epsilon``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fairshare._io import ReadRefused, read_limited
from fairshare._validate import clip, is_real
from fairshare.allocate import MODES, SolveOptions
from fairshare.cluster import Binding, Cluster
from fairshare.documents import MAX_JSON_BYTES, read_json
from fairshare.errors import InvalidInputError
from fairshare.priority import RULES, PriorityRule, priority_rule
from fairshare.problem import MAX_VALUE
from fairshare.running import DEFAULT_ROUND_SECONDS, MAX_SECONDS
from fairshare.shortfall_price import PRICE_RULES, ShortfallPriceRule, price_rule

__all__ = ["DEFAULT_PRIORITY", "DEFAULT_SHORTFALL_PRICE", "MAX_ROUND_INDEX", "STATE_KEYS", "STATE_VERSION",
           "EngineState", "as_int", "as_real", "check_deficits", "check_epsilon", "check_fairness_weight",
           "check_mode", "check_options", "check_round_index", "check_round_seconds",
           "load_state", "state_from_dict", "state_to_dict"]

STATE_VERSION = 1
"""The ``version`` of the state document :meth:`Engine.save` writes and :meth:`Engine.load` reads."""

STATE_KEYS = frozenset({"version", "gpus", "gpu_order", "mode", "epsilon", "fairness_weight", "options",
                        "round_index", "deficits", "priority", "nodes", "binding", "shortfall_price",
                        "round_seconds"})
"""The keys of a state document; any other key is an error."""

MAX_ROUND_INDEX = 2**63 - 1
"""Largest ``round_index`` (it fits a signed 64-bit integer in every other system)."""

DEFAULT_SHORTFALL_PRICE = "finish-time"
"""The shortfall-price rule of an :class:`Engine` that is given none (:mod:`fairshare.shortfall_price`)."""

DEFAULT_PRIORITY = "remaining"
"""The priority rule of an :class:`Engine` that is given none (:mod:`fairshare.priority`): shortest remaining
work first, ``pi_j = clip(median R / R_j, 0.05, 20)``. It won the measurement of docs/results-priority.md; a
job whose ``remaining_iterations`` the caller does not give gets ``pi_j = 1``, so without that field the engine
places exactly as with ``"none"``."""


@dataclass(frozen=True)
class EngineState:
    """An engine's saved settings and fairness history, every value checked (what a state document holds).

    ``cluster`` keeps the order of the GPU types, and has no nodes for an engine without nodes; ``binding`` is
    the last committed plan's binding, if any.
    """

    cluster: Cluster
    mode: str
    epsilon: float
    fairness_weight: float
    options: SolveOptions
    round_index: int
    deficits: dict[str, float]
    priority: PriorityRule
    shortfall_price: ShortfallPriceRule
    round_seconds: float
    binding: Binding | None = None


def state_to_dict(st: EngineState) -> dict[str, Any]:
    """The state document of ``st`` (plain JSON-able values; ``gpu_order`` records the GPU types' order)."""
    return {"version": STATE_VERSION, "gpus": st.cluster.by_type(), "gpu_order": list(st.cluster.gpu_types),
            "mode": st.mode, "epsilon": st.epsilon, "fairness_weight": st.fairness_weight,
            "options": asdict(st.options), "round_index": st.round_index,
            "deficits": dict(st.deficits), "priority": rule_doc(st.priority),
            "shortfall_price": price_doc(st.shortfall_price), "round_seconds": st.round_seconds,
            **({"nodes": [n.to_dict() for n in st.cluster.nodes]} if st.cluster.nodes else {}),
            **({"binding": st.binding.to_dict()} if st.binding is not None else {})}


def state_from_dict(doc: Mapping[str, Any], *,
                    priority: str | PriorityRule | Callable[..., Any] | None = None,
                    shortfall_price: str | ShortfallPriceRule | Callable[..., Any] | None = None) -> EngineState:
    """The checked :class:`EngineState` of a state document (the rules are :meth:`Engine.from_state`'s).

    Raises
    ------
    InvalidInputError
        For any deviation, naming the field (``state.round_index``, ``state.deficits.j3``).
    """
    if not isinstance(doc, Mapping):
        raise InvalidInputError("state", clip(doc), "must be an object")
    version = doc.get("version")
    if as_int(version) != STATE_VERSION:
        raise InvalidInputError("state.version", clip(version),
                                "missing" if "version" not in doc else f"must be the integer {STATE_VERSION}")
    for key in doc:
        if key not in STATE_KEYS:
            raise InvalidInputError(f"state.{key}", clip(doc[key]),
                                    f"unknown key (allowed: {', '.join(sorted(STATE_KEYS))})")
    if "gpus" not in doc:
        raise InvalidInputError("state.gpus", None, "missing")
    cluster = Cluster.of_counts(doc["gpus"], "state.gpus")
    if "gpu_order" in doc:
        cluster = _ordered(cluster, doc["gpu_order"])
    if "options" in doc and not isinstance(doc["options"], Mapping):
        raise InvalidInputError("state.options", clip(doc["options"]), "must be an object of solve options")
    mode = check_mode(doc.get("mode", "fast"), "state.mode")
    epsilon = check_epsilon(doc.get("epsilon", 0.0), "state.epsilon")
    weight = check_fairness_weight(doc.get("fairness_weight", 100.0), "state.fairness_weight")
    options = check_options(doc.get("options"), mode, "state.options")
    deficits = check_deficits(doc.get("deficits", {}), "state.deficits")
    round_index = check_round_index(doc.get("round_index", 0), "state.round_index")
    rule = rule_from_doc(doc.get("priority"), priority)
    price = price_from_doc(doc.get("shortfall_price"), shortfall_price)
    round_seconds = check_round_seconds(doc.get("round_seconds", DEFAULT_ROUND_SECONDS), "state.round_seconds")
    cluster = cluster.with_nodes(doc.get("nodes"), "state.nodes")  # states before nodes: none
    binding = None if doc.get("binding") is None else Binding.from_dict(doc["binding"], "state.binding")
    return EngineState(cluster=cluster, mode=mode, epsilon=epsilon, fairness_weight=weight, options=options,
                       round_index=round_index, deficits=deficits, priority=rule, shortfall_price=price,
                       round_seconds=round_seconds, binding=binding)


def load_state(path: str | os.PathLike[str], *,
               priority: str | PriorityRule | Callable[..., Any] | None = None,
               shortfall_price: str | ShortfallPriceRule | Callable[..., Any] | None = None) -> EngineState:
    """The checked :class:`EngineState` of the state file ``path`` (the rules are :meth:`Engine.load`'s).

    Raises
    ------
    InvalidInputError
        If the file is missing, unreadable, not a regular file, larger than :data:`MAX_JSON_BYTES`, not
        UTF-8 JSON within :func:`~fairshare.documents.read_json`'s limits, or not a valid state; the message
        names the field (``state`` for the file as a whole) and the path.
    """
    name = os.fspath(path)
    data = _read_file(name)
    try:
        return state_from_dict(read_json(data, what="state"), priority=priority, shortfall_price=shortfall_price)
    except InvalidInputError as err:
        field = err.field
        if err.reason.startswith("duplicate key"):
            field = _duplicate_key_path(data) or f"state.{field}"
        elif field != "state" and not field.startswith(("state.", "state[")):
            field = f"state.{field}"
        raise InvalidInputError(field, err.value, f"{err.reason} (in {name})") from None


# ---------------------------------------------------------------------------------------------- checks
def as_int(v: object) -> int | None:
    """``v`` as an int if it is an integer (numpy integers included; not a bool, not a float), else None."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    return None


def as_real(v: object) -> float | None:
    """``v`` as a float if it is a finite number (ints and numpy scalars included; not a bool), else None."""
    if isinstance(v, (int, float, np.integer, np.floating)) and is_real(v):
        return float(v)
    return None



def _ordered(cluster: Cluster, order: object) -> Cluster:
    """``cluster`` with its types in ``order`` (the state's ``gpu_order``), which must list each type once."""
    gpus = cluster.by_type()
    if not (isinstance(order, list) and all(isinstance(g, str) for g in order)):
        raise InvalidInputError("state.gpu_order", clip(order), "must be a list of GPU types")
    if len(set(order)) != len(order) or set(order) != set(gpus):
        raise InvalidInputError("state.gpu_order", clip(order), "must list each GPU type of `gpus` exactly once")
    return Cluster.of_counts({g: gpus[g] for g in order}, "state.gpus")


def check_mode(value: object, field: str) -> str:
    """``value`` if it is a solve mode (:data:`~fairshare.allocate.MODES`)."""
    if not isinstance(value, str) or value not in MODES:
        raise InvalidInputError(field, clip(value), f"must be one of {', '.join(MODES)}")
    return value


def check_epsilon(value: object, field: str) -> float:
    """The fairness slack ``value``, a number in ``[0, 1)``."""
    epsilon = as_real(value)
    if epsilon is None or not 0 <= epsilon < 1:
        raise InvalidInputError(field, clip(value), "must be a number in [0, 1)")
    return epsilon


def check_round_seconds(value: object, field: str) -> float:
    """A round's length ``value``, a number of seconds in ``(0, MAX_SECONDS]``."""
    number = as_real(value)
    if number is None or not 0 < number <= MAX_SECONDS:
        raise InvalidInputError(field, clip(value), f"must be a number of seconds in (0, {MAX_SECONDS:.0f}]")
    return number


def check_fairness_weight(value: object, field: str) -> float:
    """The price of weighted shortfall ``value``, a number in ``(0, MAX_VALUE]``."""
    weight = as_real(value)
    if weight is None or not 0 < weight <= MAX_VALUE:
        raise InvalidInputError(field, clip(value), f"must be a number in (0, {MAX_VALUE:g}]")
    return weight


def check_round_index(value: object, field: str) -> int:
    """The rounds committed so far ``value``, an integer from 0 to :data:`MAX_ROUND_INDEX`."""
    index = as_int(value)
    if index is None or not 0 <= index <= MAX_ROUND_INDEX:
        raise InvalidInputError(field, clip(value), "must be an integer from 0 to 2**63 - 1")
    return index


def check_deficits(value: object, field: str) -> dict[str, float]:
    """Carried deficits ``value``: job id (a non-empty string) -> number in ``[0, MAX_VALUE]``."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(field, clip(value), "must be an object of job id -> deficit")
    out: dict[str, float] = {}
    for jid, d in value.items():
        if not isinstance(jid, str) or not jid:
            raise InvalidInputError(field, clip(jid), "job ids must be non-empty strings")
        deficit = as_real(d)
        if deficit is None or not 0 <= deficit <= MAX_VALUE:
            raise InvalidInputError(f"{field}.{jid}", clip(d), f"must be a number in [0, {MAX_VALUE:g}]")
        out[jid] = deficit
    return out


def check_options(value: object, mode: str, field: str) -> SolveOptions:
    """Solve options ``value`` (``None``: the defaults) that apply to ``mode``; an error names ``field.<option>``."""
    if value is not None and not isinstance(value, (SolveOptions, Mapping)):
        raise InvalidInputError(field, clip(value), "must be a SolveOptions or an object of solve options")
    try:
        return SolveOptions.coerce(value).for_mode(mode)
    except InvalidInputError as err:
        name = err.field.removeprefix("options.")
        raise InvalidInputError(f"{field}.{name}", err.value, err.reason) from None



# ---------------------------------------------------------------------------------------------- files
def _read_file(path: str) -> bytes:
    """The bytes of the regular file ``path``; anything else is an InvalidInputError naming the path.

    Opened without blocking (a FIFO must not hang the caller) and refused unless it is a regular file of
    at most :data:`~fairshare.documents.MAX_JSON_BYTES` bytes.
    """
    try:
        return read_limited(path, MAX_JSON_BYTES, regular_only=True)
    except ReadRefused as why:
        if why.kind == "open":
            reason = f"cannot open the state file ({_strerror(why.error)})"
        elif why.kind in ("folder", "special"):
            reason = "not a regular file"
        elif why.kind == "size":
            reason = (f"{why.size} bytes, larger than the limit of {MAX_JSON_BYTES} bytes "
                      f"({MAX_JSON_BYTES // 2**20} MiB)")
        elif why.kind == "overflow":  # the file grew while being read
            reason = f"larger than the limit of {MAX_JSON_BYTES} bytes"
        else:
            reason = f"cannot read the state file ({_strerror(why.error)})"
        raise InvalidInputError("state", path, reason) from None


def _strerror(exc: OSError | None) -> str:
    return str(exc.strerror or exc) if exc is not None else "unknown error"


class _Keys(dict[str, object]):
    """A JSON object that remembers the first key it saw twice."""

    repeated: str | None = None


def _duplicate_key_path(data: bytes) -> str | None:
    """The field (``state.deficits.j3``) of the first repeated key in the JSON text ``data``.

    Only called after :func:`~fairshare.documents.read_json` has accepted the size, encoding and nesting
    of ``data``; numbers are not converted (their values do not matter here).
    """
    def hook(pairs: list[tuple[str, object]]) -> _Keys:
        obj = _Keys()
        for key, value in pairs:
            if key in obj and obj.repeated is None:
                obj.repeated = key
            obj[key] = value
        return obj

    def walk(node: object, path: str) -> str | None:
        if isinstance(node, _Keys):
            if node.repeated is not None:
                return f"{path}.{node.repeated}"
            items: list[tuple[str, object]] = [(f"{path}.{k}", v) for k, v in node.items()]
        elif isinstance(node, list):
            items = [(f"{path}[{i}]", v) for i, v in enumerate(node)]
        else:
            return None
        for sub, value in items:
            found = walk(value, sub)
            if found is not None:
                return found
        return None

    try:
        doc = json.loads(data, object_pairs_hook=hook, parse_int=lambda s: 0, parse_float=lambda s: 0.0,
                         parse_constant=lambda s: 0.0)
    except ValueError:
        return None
    return walk(doc, "state")



# ---------------------------------------------------------------------------------------------- rules
def rule_doc(rule: PriorityRule) -> dict[str, Any]:
    """The state file's form of a priority rule: a named rule with its parameters, or ``custom``."""
    return _named_rule_doc(rule, RULES, ("exponent", "clip"))


def rule_from_doc(doc: object, override: str | PriorityRule | Callable[..., Any] | None) -> PriorityRule:
    rule: PriorityRule = _named_rule_from_doc(doc, override, field="priority", what="a priority rule",
                                              make=priority_rule, default=DEFAULT_PRIORITY,
                                              keys=("exponent", "clip"))
    return rule


def price_doc(rule: ShortfallPriceRule) -> dict[str, Any]:
    """The state file's form of a shortfall-price rule: a named rule with its parameters, or ``custom``."""
    return _named_rule_doc(rule, PRICE_RULES, ("exponent", "clip", "basis"))


def price_from_doc(doc: object,
                    override: str | ShortfallPriceRule | Callable[..., Any] | None) -> ShortfallPriceRule:
    rule: ShortfallPriceRule = _named_rule_from_doc(doc, override, field="shortfall_price",
                                                    what="a shortfall-price rule", make=price_rule,
                                                    default=DEFAULT_SHORTFALL_PRICE, keys=("exponent", "clip", "basis"))
    return rule


def _named_rule_doc(rule: object, registry: Mapping[str, Callable[..., Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    """``{"rule": name, parameters...}`` of a rule of ``registry``, or ``{"rule": "custom"}``."""
    for name, cls in registry.items():
        if type(rule) is cls:
            params = {k: getattr(rule, k) for k in keys if hasattr(rule, k)}
            return {"rule": name, **{k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}}
    return {"rule": "custom"}


def _named_rule_from_doc(doc: object, override: object, *, field: str, what: str, make: Callable[..., Any],
                         default: str, keys: tuple[str, ...]) -> Any:
    """The rule a state's ``field`` names (``override`` wins; missing: ``default``), checked like the state."""
    if override is not None:
        return make(override)
    if doc is None:  # not in the state: the constructor's default
        return make(default)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("rule"), str):
        raise InvalidInputError(f"state.{field}", clip(doc), 'must be an object {"rule": name, ...}')
    name = doc["rule"]
    if name == "custom":
        raise InvalidInputError(f"state.{field}", "custom", f"the engine was saved with {what} of your own: pass "
                                f"it again, Engine.load(path, {field}=rule)")
    params = {k: v for k, v in doc.items() if k != "rule"}
    for k in params:
        if k not in keys:
            raise InvalidInputError(f"state.{field}.{k}", clip(params[k]),
                                    f"unknown key (allowed: rule, {', '.join(keys)})")
    if "clip" in params and isinstance(params["clip"], list):
        params["clip"] = tuple(params["clip"])
    try:
        return make(name, **params)
    except InvalidInputError as err:
        raise InvalidInputError(f"state.{err.field}", err.value, err.reason) from None
