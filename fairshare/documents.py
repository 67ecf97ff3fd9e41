"""JSON documents <-> fairshare objects: one JSON reader with limits, and the round document.

:func:`read_json` is the one way fairshare reads JSON text. It turns every way a text can be unreadable into
an :class:`~fairshare.errors.InvalidInputError` that names the document (and, for a bad number, the field):

* bytes must be UTF-8 (a leading byte-order mark is skipped); UTF-16, UTF-32 and binary data are refused;
* at most :data:`MAX_JSON_BYTES` bytes (characters for ``str``) and :data:`MAX_JSON_DEPTH` levels of
  nesting, checked before parsing, so a hostile text cannot exhaust memory or the recursion limit;
* numbers must fit in float64: ``1e400`` and integer literals beyond float range are refused, and so are
  the literals ``NaN``, ``Infinity`` and ``-Infinity`` unless the caller validates them itself;
* a key repeated in one object is refused (nothing is silently dropped).

:func:`round_problem_from_dict` converts a round document (spec ``round-problem.md`` section 6) to the
arrays of a :class:`~fairshare.problem.RoundProblem`, whose constructor checks every value; the error then
shows the value as written in the document. :func:`round_problem_to_dict` is its inverse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from fairshare._validate import clip, is_real
from fairshare.cluster import Cluster
from fairshare.errors import InvalidInputError
from fairshare.problem import RoundProblem
from fairshare.running import DEFAULT_ROUND_SECONDS, Running

__all__ = ["CURRENT_KEYS", "JOB_KEYS", "MAX_JSON_BYTES", "MAX_JSON_DEPTH", "PAIR_KEYS", "ROUND_KEYS", "read_json",
           "reject_unknown_keys", "round_problem_from_dict", "round_problem_from_json",
           "round_problem_to_dict"]

#: Largest JSON text :func:`read_json` accepts: 64 MiB (bytes; characters for ``str``). A round of
#: 100,000 jobs with throughputs on 10 GPU types takes about 25 MB.
MAX_JSON_BYTES = 64 * 2**20
#: Deepest nesting of arrays and objects :func:`read_json` accepts. A round document needs 4 levels,
#: an engine state or a trace about as many.
MAX_JSON_DEPTH = 64

#: Keys allowed in a round document, in a job object and in a co-location pair object.
ROUND_KEYS = frozenset({"gpus", "jobs", "colocation", "epsilon", "fairness_weight", "nodes", "round_seconds"})
JOB_KEYS = frozenset({"id", "scale", "weight", "deficit", "priority", "shortfall_price", "throughput", "current",
                      "restart_seconds"})
#: Keys allowed in a job's ``current`` placement (spec section 11).
CURRENT_KEYS = frozenset({"gpu", "partner"})
PAIR_KEYS = frozenset({"jobs", "gpu", "throughput"})

_MAX_INT_CHARS = 310  # a sign and 309 digits: every longer integer literal is beyond float64's 1.8e308
_ESCAPES = re.compile(rb"\\.", re.DOTALL)  # a backslash and the byte it escapes
_NOT_MARKS = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_STEP = np.zeros(256, np.int32)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1
_CHUNK = 2**22
_LARGEST = float(np.finfo(np.float64).max)


# ---------------------------------------------------------------------------------------------- reader
def read_json(source: str | bytes, *, what: str = "document", allow_nan: bool = False) -> Any:
    """Parse JSON text within fairshare's limits.

    Parameters
    ----------
    source : str or bytes
        The JSON text; bytes must be UTF-8 (a UTF-8 byte-order mark is skipped).
    what : str
        What the text is (``"document"``, ``"state"``, ``"trace"``): the field named by errors about the
        text as a whole.
    allow_nan : bool
        Read the literals ``NaN``, ``Infinity`` and ``-Infinity`` as floats, for callers that reject
        non-finite values themselves with a message of their own. By default they are errors.

    Returns
    -------
    object
        The parsed value: dicts (in document order), lists, str, int, float, bool and None.

    Raises
    ------
    InvalidInputError
        If the text is not UTF-8, larger than :data:`MAX_JSON_BYTES`, nested deeper than
        :data:`MAX_JSON_DEPTH`, not valid JSON, repeats a key in an object, or holds a number that does
        not fit in float64 (the error then names the field, such as ``jobs[3].weight``).

    Examples
    --------
    >>> read_json(b'{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> read_json('{"a": {"b": [1, 1e400]}}')
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `a.b[1]` = '1e400': number out of float64 range
    """
    text = _decode(source, what)
    _check_depth(text, what)
    rejected: list[_Rejected] = []

    def reject(literal: str, reason: str) -> _Rejected:
        rejected.append(_Rejected(literal, reason))
        return rejected[-1]

    def parse_int(literal: str) -> int | _Rejected:
        if len(literal) <= _MAX_INT_CHARS:  # a longer literal is beyond float range (and int-str limits)
            value = int(literal)
            if is_real(value):
                return value
        return reject(literal, "integer out of float64 range")

    def parse_float(literal: str) -> float | _Rejected:
        value = float(literal)
        return value if abs(value) != float("inf") else reject(literal, "number out of float64 range")

    def parse_constant(literal: str) -> float | _Rejected:
        if allow_nan:
            return float(literal)
        return reject(literal, "NaN and Infinity are not JSON numbers")

    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_int=parse_int,
                         parse_float=parse_float, parse_constant=parse_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(what, _head(source), f"not valid JSON ({exc})") from None
    except RecursionError:  # the depth check should make this unreachable; never let it escape
        raise InvalidInputError(what, _head(source), f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    if rejected:
        first = rejected[0]
        raise InvalidInputError(_path_of(doc, first, what), first.shown(), first.reason)
    return doc


class _Rejected:
    """Stands in for a number :func:`read_json` refuses, until its path in the document is known."""

    __slots__ = ("literal", "reason")

    def __init__(self, literal: str, reason: str) -> None:
        self.literal = literal
        self.reason = reason

    def __repr__(self) -> str:
        return self.literal

    def shown(self) -> str:
        """The literal, cut if long (an integer literal may have thousands of digits)."""
        n = len(self.literal)
        return self.literal if n <= 80 else f"{self.literal[:40]}... ({n} characters)"


def _decode(source: object, what: str) -> str:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > MAX_JSON_BYTES:
            raise InvalidInputError(what, f"{len(data)} bytes", f"larger than the limit of {MAX_JSON_BYTES} "
                                    f"bytes ({MAX_JSON_BYTES // 2**20} MiB)")
        if b"\x00" in data:  # JSON text never holds a NUL byte; UTF-16, UTF-32 and binary data do
            raise InvalidInputError(what, _head(data), "not UTF-8 text (it holds NUL bytes: UTF-16, UTF-32 "
                                    "or binary data?)")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(what, _head(data), f"not UTF-8 text (byte {exc.start}: {exc.reason})") \
                from None
    elif isinstance(source, str):
        if len(source) > MAX_JSON_BYTES:
            raise InvalidInputError(what, f"{len(source)} characters", f"larger than the limit of "
                                    f"{MAX_JSON_BYTES} characters ({MAX_JSON_BYTES // 2**20} Mi)")
        text = source
    else:
        raise InvalidInputError(what, type(source).__name__, "must be JSON text (str or bytes)")
    return text.removeprefix("\ufeff")


def _check_depth(text: str, what: str) -> None:
    """Refuse nesting deeper than :data:`MAX_JSON_DEPTH`, counting brackets outside strings."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    data = text.encode("utf-8", "surrogatepass")
    if b"\\" in data:
        data = _ESCAPES.sub(b"", data)  # \" does not end a string
    marks = np.frombuffer(data.translate(None, _NOT_MARKS), np.uint8)  # only " [ ] { } are left
    level = quotes = 0
    for start in range(0, len(marks), _CHUNK):
        chunk = marks[start:start + _CHUNK]
        quote_count = np.cumsum(chunk == ord('"'), dtype=np.int64) + quotes
        depth = np.cumsum(np.where(quote_count % 2, 0, _STEP[chunk])) + level  # brackets in strings: 0
        if depth.max() > MAX_JSON_DEPTH:
            raise InvalidInputError(what, _head(text), f"nested deeper than {MAX_JSON_DEPTH} levels of "
                                    "arrays and objects")
        level, quotes = int(depth[-1]), int(quote_count[-1])


def _head(source: str | bytes) -> object:
    return clip(source[:100])


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidInputError(key, clip(value), "duplicate key in a JSON object (nothing is silently dropped)")
        out[key] = value
    return out


def _path_of(doc: Any, target: object, what: str) -> str:
    """The field name of ``target`` in ``doc`` (``jobs[3].weight``); ``what`` if it is ``doc`` itself."""
    def walk(node: Any, path: str) -> str | None:
        if node is target:
            return path
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            found = walk(value, f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None

    path = walk(doc, "")
    return what if not path else f"{what}{path}" if path.startswith("[") else path


def reject_unknown_keys(obj: Mapping[str, Any], allowed: frozenset[str], prefix: str = "") -> None:
    """Raise for the first key of ``obj`` not in ``allowed``, naming it as ``prefix + key``.

    Examples
    --------
    >>> reject_unknown_keys({"gpu": "V100", "share": 0.5}, PAIR_KEYS, "colocation[0].")
    Traceback (most recent call last):
    ...
    fairshare.errors.InvalidInputError: `colocation[0].share` = 0.5: unknown key (allowed: gpu, jobs, throughput)
    """
    if obj.keys() <= allowed:
        return
    key = next(k for k in obj if k not in allowed)
    raise InvalidInputError(f"{prefix}{key}", clip(obj[key]),
                            f"unknown key (allowed: {', '.join(sorted(allowed))})")


# ---------------------------------------------------------------------------------------------- rounds
def round_problem_from_json(source: str | bytes) -> RoundProblem:
    """Read a round document from JSON text (see :func:`read_json`) and build its problem."""
    # NaN and Infinity reach the problem's checks, which reject them with the rule of their field
    return round_problem_from_dict(read_json(source, what="document", allow_nan=True))


def round_problem_from_dict(doc: object) -> RoundProblem:
    """Build the :class:`~fairshare.problem.RoundProblem` of a parsed round document (spec section 6).

    Only what arrays cannot hold is checked here: the types of containers, unknown keys, job ids, and the
    job ids and GPU types that co-location pairs refer to. Numbers are converted (Python and numpy ints and
    floats; anything else, bools included, becomes NaN) and the constructor checks them; its error is
    re-raised with the value as the document wrote it.

    Raises
    ------
    InvalidInputError
        For every invalid input listed in spec section 6, naming the field and the value.
    """
    if not isinstance(doc, Mapping):
        raise InvalidInputError("document", clip(doc), "must be a JSON object")
    reject_unknown_keys(doc, ROUND_KEYS)
    for key in ("gpus", "jobs"):
        if key not in doc:
            raise InvalidInputError(key, None, "missing")
    jobs, coloc = doc["jobs"], doc.get("colocation", [])
    cluster = Cluster.of_counts(doc["gpus"], "gpus", whole_floats=True)  # JSON numbers: 2.0 is 2 GPUs
    if not isinstance(jobs, list):
        raise InvalidInputError("jobs", clip(jobs), "must be a list of job objects")
    if not isinstance(coloc, list):
        raise InvalidInputError("colocation", clip(coloc), "must be a list")
    gpu_types = cluster.gpu_types
    gidx = {g: i for i, g in enumerate(gpu_types)}

    N, G = len(jobs), len(gpu_types)
    ids: list[str] = []
    scale, weight, deficit, priority = np.empty(N), np.empty(N), np.empty(N), np.empty(N)
    price, restart = np.empty(N), np.empty(N)
    current_gpu = np.full(N, -1, np.int64)
    partners: dict[int, object] = {}
    throughput = np.zeros((N, G))
    for i, job in enumerate(jobs):
        where = f"jobs[{i}]"
        if not isinstance(job, Mapping):
            raise InvalidInputError(where, clip(job), "must be an object")
        reject_unknown_keys(job, JOB_KEYS, where + ".")
        jid = job.get("id")
        if jid is None:
            raise InvalidInputError(f"{where}.id", None, "missing")
        if not isinstance(jid, str) or not jid:
            raise InvalidInputError(f"{where}.id", clip(jid), "must be a non-empty string")
        ids.append(jid)
        scale[i] = _number(job.get("scale"), count=True)
        weight[i] = _number(job.get("weight", 1.0))
        deficit[i] = _number(job.get("deficit", 0.0))
        priority[i] = _number(job.get("priority", 1.0))
        price[i] = _number(job.get("shortfall_price", 1.0))
        restart[i] = _number(job.get("restart_seconds", 0.0))
        if "current" in job and job["current"] is not None:
            cur = job["current"]
            if not isinstance(cur, Mapping):
                raise InvalidInputError(f"{where}.current", clip(cur), "must be an object {\"gpu\": type, "
                                        "\"partner\": job id or null}, or null (not running)")
            reject_unknown_keys(cur, CURRENT_KEYS, where + ".current.")
            g = cur.get("gpu")
            if not isinstance(g, str) or g not in gidx:
                raise InvalidInputError(f"{where}.current.gpu", clip(g), "GPU type is not in `gpus`")
            current_gpu[i] = gidx[g]
            if cur.get("partner") is not None:
                partners[i] = cur["partner"]
        tp = job.get("throughput")
        if not isinstance(tp, Mapping):
            raise InvalidInputError(f"{where}.throughput", clip(tp), "must be an object of GPU type -> throughput")
        for g, v in tp.items():
            if g not in gidx:
                raise InvalidInputError(f"{where}.throughput.{g}", clip(v), f"GPU type {g!r} is not in `gpus`")
            throughput[i, gidx[g]] = _number(v)

    P = len(coloc)
    jidx: dict[str, int] = {}
    for i, jid in enumerate(ids):
        jidx.setdefault(jid, i)  # a repeated id is reported by the problem's checks
    pair_jobs, pair_gpu, pair_throughput = np.empty((P, 2), np.int64), np.empty(P, np.int64), np.empty((P, 2))
    for p, entry in enumerate(coloc):
        where = f"colocation[{p}]"
        if not isinstance(entry, Mapping):
            raise InvalidInputError(where, clip(entry), "must be an object")
        reject_unknown_keys(entry, PAIR_KEYS, where + ".")
        for key in ("jobs", "gpu", "throughput"):
            if key not in entry:
                raise InvalidInputError(f"{where}.{key}", None, "missing")
        pair = entry["jobs"]
        if not (isinstance(pair, list) and len(pair) == 2):
            raise InvalidInputError(f"{where}.jobs", clip(pair), "must be a list of two job ids")
        for k, jid in enumerate(pair):
            if not isinstance(jid, str) or jid not in jidx:
                raise InvalidInputError(f"{where}.jobs", clip(pair), f"unknown job {jid!r}")
            pair_jobs[p, k] = jidx[jid]
        g = entry["gpu"]
        if not isinstance(g, str) or g not in gidx:
            raise InvalidInputError(f"{where}.gpu", clip(g), "GPU type is not in `gpus`")
        pair_gpu[p] = gidx[g]
        tp = entry["throughput"]
        two = isinstance(tp, list) and len(tp) == 2
        pair_throughput[p] = [_number(v) for v in tp] if two else np.nan

    running = _running(doc, N, G, current_gpu, partners, restart, jidx, ids)
    try:
        return RoundProblem(gpu_types=gpu_types, capacity=cluster.capacity_array(), job_ids=tuple(ids), scale=scale,
                            throughput=throughput, weight=weight, deficit=deficit, priority=priority,
                            pair_jobs=pair_jobs,
                            pair_gpu=pair_gpu, pair_throughput=pair_throughput,
                            epsilon=doc.get("epsilon", 0.0), fairness_weight=doc.get("fairness_weight", 100.0),
                            nodes=doc.get("nodes"), shortfall_price=price, running=running)
    except InvalidInputError as err:
        for name, value in _numbers(doc):
            if name == err.field:
                raise InvalidInputError(err.field, clip(value), err.reason) from None
        raise


def _running(doc: Mapping[str, Any], n: int, g: int, current_gpu: np.ndarray, partners: Mapping[int, object],
             restart: np.ndarray, jidx: Mapping[str, int], ids: Sequence[str]) -> Running | None:
    """The section 11 state of a round document: jobs' ``current`` placements, restart costs, ``round_seconds``."""
    partner = np.full(n, -1, np.int64)
    for i, name in partners.items():
        if not isinstance(name, str) or name not in jidx:
            raise InvalidInputError(f"jobs[{i}].current.partner", clip(name), "unknown job (a partner that left "
                                    "the round is no partner: give null)")
        partner[i] = jidx[name]
    round_seconds = doc.get("round_seconds", DEFAULT_ROUND_SECONDS)
    if "round_seconds" in doc and not is_real(round_seconds):
        raise InvalidInputError("round_seconds", clip(round_seconds), "must be a finite number of seconds > 0")
    return Running.checked(n, g, current_gpu, partner, restart, round_seconds, ids)


def _number(value: object, *, count: bool = False) -> float:
    """``value`` as a float for the problem's checks: NaN if it is not a number (bools are not).

    Floats pass unchanged (NaN and infinities included: the checks reject them). An integer too large
    for a float becomes NaN, or the largest float if it is a positive ``count`` (so that the range check
    of counts reports it).
    """
    if type(value) is float:
        return value
    if isinstance(value, (int, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        try:
            return float(value)
        except OverflowError:
            return _LARGEST if count and value > 0 else np.nan
    return np.nan


def _numbers(doc: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    """(field, value as written) for every number :func:`round_problem_from_dict` converted."""
    for i, job in enumerate(doc["jobs"]):
        yield f"jobs[{i}].scale", job.get("scale")
        yield f"jobs[{i}].weight", job.get("weight", 1.0)
        yield f"jobs[{i}].deficit", job.get("deficit", 0.0)
        yield f"jobs[{i}].priority", job.get("priority", 1.0)
        yield f"jobs[{i}].shortfall_price", job.get("shortfall_price", 1.0)
        yield f"jobs[{i}].restart_seconds", job.get("restart_seconds", 0.0)
        for g, v in job["throughput"].items():
            yield f"jobs[{i}].throughput.{g}", v
    for p, entry in enumerate(doc.get("colocation", [])):
        yield f"colocation[{p}].throughput", entry["throughput"]


def round_problem_to_dict(problem: RoundProblem) -> dict[str, Any]:
    """The round document of ``problem`` (spec section 6); :func:`round_problem_from_dict` inverts it.

    Throughputs of 0 are left out (a missing type means "cannot run there").

    Examples
    --------
    >>> doc = {"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": {"V100": 2.0}}]}
    >>> round_problem_to_dict(round_problem_from_dict(doc))["jobs"]
    [{'id': 'a', 'scale': 1, 'weight': 1.0, 'deficit': 0.0, 'throughput': {'V100': 2.0}}]
    """
    G = problem.gpu_types
    jobs: list[dict[str, Any]] = [
        {"id": jid, "scale": int(s) if s >= 1 else s, "weight": w, "deficit": d,
         "throughput": {G[g]: t for g, t in enumerate(row) if t > 0}}
        for jid, s, w, d, row in zip(problem.job_ids, problem.scale.tolist(), problem.weight.tolist(),
                                     problem.deficit.tolist(), problem.throughput.tolist())]
    for job, pi, f in zip(jobs, problem.priority.tolist(), problem.shortfall_price.tolist()):
        if pi != 1.0:  # the defaults are left out, so documents without them read back as they were
            job["priority"] = pi
        if f != 1.0:
            job["shortfall_price"] = f
    run = problem.running
    if run is not None:  # only rounds with running jobs carry section 11's fields
        for job, g, k, r in zip(jobs, run.gpu.tolist(), run.partner.tolist(), run.restart_seconds.tolist()):
            if g >= 0:
                job["current"] = {"gpu": G[g], "partner": problem.job_ids[k] if k >= 0 else None}
            if r:
                job["restart_seconds"] = r
    coloc = [{"jobs": [problem.job_ids[a], problem.job_ids[b]], "gpu": G[g], "throughput": [x, y]}
             for (a, b), g, (x, y) in zip(problem.pair_jobs.tolist(), problem.pair_gpu.tolist(),
                                          problem.pair_throughput.tolist())]
    cluster = problem.cluster
    out: dict[str, Any] = {"gpus": cluster.by_type(), "jobs": jobs, "colocation": coloc,
                           "epsilon": problem.epsilon, "fairness_weight": problem.fairness_weight}
    if cluster.nodes:  # optional: rounds without nodes read back as they were
        out["nodes"] = [n.to_dict() for n in cluster.nodes]
    if run is not None:
        out["round_seconds"] = run.round_seconds
    return out
