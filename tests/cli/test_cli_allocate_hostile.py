"""``fairshare allocate`` against careless and hostile input, run as a user runs it (issue 13, the solve side).

Every case runs ``python -m fairshare allocate ...`` in a subprocess and checks what the user sees: the exit
status (0 ok, 2 bad input), one line on stderr naming the field or the path, never a Python traceback, and no
output file unless the run succeeded (``-o`` is given to every case). The cases cover the invalid inputs of
the round contract (docs/json-formats.md) and the causes of issue 13 that reach ``allocate``: malformed bytes
and numbers (3), I/O errors (4), overflowing weights (7), huge knobs (8), integer overflow (9), the ``lp``
output (13), the smaller ones (15) and size (16). The subprocesses run two at a time.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fairshare.documents import MAX_JSON_BYTES
from fairshare.problem import RoundProblem
from fairshare.testing.recompute import recompute

ROOT = os.geteuid() == 0  # root ignores permission bits: the permission cases cannot be staged


def job(jid: str = "a", scale: int = 1, **kw: Any) -> dict[str, Any]:
    return {"id": jid, "scale": scale, "throughput": kw.pop("throughput", {"V100": 1.0}), **kw}


def rnd(jobs: list[dict[str, Any]] | None = None, gpus: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    return {"gpus": {"V100": 2, "K80": 2} if gpus is None else gpus,
            "jobs": [job("a"), job("b")] if jobs is None else jobs, **kw}


PAIRABLE = [job("a", throughput={"V100": 2.0, "K80": 1.0}), job("b", throughput={"V100": 3.0, "K80": 1.0}),
            job("c", 2, throughput={"V100": 1.0})]


def pair(a: str = "a", b: str = "b", gpu: str = "V100", tput: Any = (1.0, 1.0)) -> dict[str, Any]:
    return {"jobs": [a, b], "gpu": gpu, "throughput": list(tput)}


@dataclass
class Case:
    """One run: the round file's bytes (or None), extra arguments, and what the user must see."""

    name: str
    content: bytes | None
    match: str  # a regular expression the stderr line must contain (the field or the path)
    args: tuple[str, ...] = ()
    code: int = 2
    setup: Callable[[Path], dict[str, Any]] | None = None  # makes files; returns Popen keyword arguments
    check: Callable[[Path, subprocess.CompletedProcess[str]], None] | None = None
    skip: str | None = None
    round: str = "{tmp}/round.json"  # the ROUND argument


def doc(d: Any) -> bytes:
    return json.dumps(d).encode()


def text(s: str) -> bytes:
    return s.encode()


BIG_ID = "x" * 1_000_000


# ---------------------------------------------------------------- checks of runs that succeed
def strict_json(out: str) -> dict[str, Any]:
    def refuse(literal: str) -> Any:
        raise AssertionError(f"{literal} in the output")
    return json.loads(out, parse_constant=refuse)


def same_answer_as_unit_weights(tmp: Path, res: subprocess.CompletedProcess[str]) -> None:
    # cause 7: weights of 1e308 each are weights of 1 each once normalised; before, fairness was ignored
    out = strict_json(res.stdout)
    unit = subprocess.run([sys.executable, "-m", "fairshare", "allocate", str(tmp / "unit.json"), "--mode", "exact"],
                          capture_output=True, text=True, timeout=120, check=True)
    ref = strict_json(unit.stdout)
    assert out["shortfall"] == pytest.approx(ref["shortfall"]) and out["shortfall"] > 0
    assert out["objective"] == pytest.approx(ref["objective"])
    assert out["placements"] == ref["placements"]


def write_unit_weights(tmp: Path) -> dict[str, Any]:
    (tmp / "unit.json").write_bytes(doc(WEIGHTY(1.0)))
    return {}


def WEIGHTY(w: float) -> dict[str, Any]:  # noqa: N802 - a round builder
    return rnd([job("a", weight=w, throughput={"V100": 4.0}), job("b", weight=w, throughput={"V100": 1.0}),
                job("c", weight=w, throughput={"V100": 2.0})], gpus={"V100": 1})


def lp_numbers_are_its_placements(tmp: Path, res: subprocess.CompletedProcess[str]) -> None:
    out = strict_json(res.stdout)
    problem = RoundProblem.from_json((tmp / "round.json").read_text())
    ref = recompute(problem, [(tuple(p["jobs"]), p["gpu"], p["share"]) for p in out["placements"]])
    for i, jid in enumerate(problem.job_ids):
        j = out["jobs"][jid]
        assert j["throughput"] == pytest.approx(ref["tau"][i], rel=1e-9, abs=1e-12)
        assert j["progress"] == pytest.approx(ref["rho"][i], rel=1e-9, abs=1e-9)
        assert j["next_deficit"] <= problem.deficit[i] + 1 - problem.epsilon
        placed = any(jid in p["jobs"] for p in out["placements"])
        assert (j["throughput"] > 0) == placed, jid


REPRO_13 = {"gpus": {"A": 1}, "jobs": [
    {"id": "j0", "scale": 1, "throughput": {"A": 1.0}, "weight": 1000000.0},
    {"id": "j1", "scale": 1, "throughput": {"A": 2.557}, "weight": 0.01, "deficit": 1.502},
    {"id": "j2", "scale": 1, "throughput": {"A": 1.684}, "weight": 3.0, "deficit": 0.626},
    {"id": "j3", "scale": 1, "throughput": {"A": 2.772}, "weight": 1e-06, "deficit": 0.855}],
    "colocation": [{"jobs": ["j3", "j0"], "gpu": "A", "throughput": [1.107, 0.877]},
                   {"jobs": ["j3", "j2"], "gpu": "A", "throughput": [2.656, 1.172]},
                   {"jobs": ["j2", "j0"], "gpu": "A", "throughput": [0.81, 0.619]},
                   {"jobs": ["j1", "j2"], "gpu": "A", "throughput": [0.501, 0.904]}],
    "epsilon": 0.0, "fairness_weight": 1.0}


# ---------------------------------------------------------------- set-ups for file and I/O cases
def sparse_200mb(tmp: Path) -> dict[str, Any]:
    with open(tmp / "round.json", "wb") as f:  # 200 MB on paper, no disk: refused by its size alone
        f.truncate(200 * 2**20)
    return {}


def zero_stdin(tmp: Path) -> dict[str, Any]:
    return {"stdin": open("/dev/zero", "rb")}  # noqa: SIM115 - closed by the runner


def fifo_with_writer(tmp: Path) -> dict[str, Any]:
    fifo = tmp / "fifo.json"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(doc(rnd()))
    threading.Thread(target=write, daemon=True).start()
    return {}


def fifo_alone(tmp: Path) -> dict[str, Any]:
    os.mkfifo(tmp / "fifo.json")  # nobody writes: the command must not wait forever
    return {}


def old_output(tmp: Path) -> dict[str, Any]:
    (tmp / "out.json").write_text("old\n")
    return {}


def old_output_and_file_size_limit(tmp: Path) -> dict[str, Any]:
    old_output(tmp)

    def limit() -> None:  # the output (about 1 kB) cannot be written in full
        resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
    return {"preexec_fn": limit}


def readonly_folder(tmp: Path) -> dict[str, Any]:
    (tmp / "ro").mkdir()
    (tmp / "ro").chmod(0o555)
    return {}


def unreadable_round(tmp: Path) -> dict[str, Any]:
    (tmp / "round.json").chmod(0)
    return {}


def old_output_untouched(tmp: Path, res: subprocess.CompletedProcess[str]) -> None:
    assert (tmp / "out.json").read_text() == "old\n"


VALID = doc(rnd())

CASES = [
    # the contract's invalid inputs (docs/json-formats.md)
    Case("not JSON", text("not json"), r"`document` = .*not valid JSON"),
    Case("not an object", text("[1, 2]"), r"`document` = \[1, 2\]: must be a JSON object"),
    Case("unknown top-level key", doc(rnd(colour=1)), r"`colour` = 1: unknown key"),
    Case("unknown job key", doc(rnd([job(prio=2)])), r"`jobs\[0\]\.prio` = 2: unknown key"),
    Case("unknown pair key", doc(rnd(PAIRABLE, colocation=[{**pair(), "share": 1}])), r"`colocation\[0\]\.share`"),
    Case("missing gpus", doc({"jobs": []}), r"`gpus` = None: missing"),
    Case("missing jobs", doc({"gpus": {"V100": 1}}), r"`jobs` = None: missing"),
    Case("gpus not an object", doc(rnd(gpus=[1])), r"`gpus` = \[1\]"),
    Case("negative GPU count", doc(rnd(gpus={"V100": -1, "K80": 2})), r"`gpus\.V100` = -1"),
    Case("fractional GPU count", doc(rnd(gpus={"V100": 1.5, "K80": 2})), r"`gpus\.V100` = 1\.5"),
    Case("no GPU at all", doc(rnd(gpus={"V100": 0, "K80": 0})), r"`gpus`"),
    Case("missing id", doc(rnd([{"scale": 1, "throughput": {"V100": 1}}])), r"`jobs\[0\]\.id` = None: missing"),
    Case("duplicate id", doc(rnd([job("a"), job("a")])), r"`jobs\[1\]\.id` = 'a': duplicate"),
    Case("scale 0", doc(rnd([job(scale=0)])), r"`jobs\[0\]\.scale` = 0"),
    Case("fractional scale", doc(rnd([job(scale=1.5)])), r"`jobs\[0\]\.scale` = 1\.5"),
    Case("weight 0", doc(rnd([job(weight=0)])), r"`jobs\[0\]\.weight` = 0"),
    Case("weight NaN", text('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "weight": NaN, '
                            '"throughput": {"V100": 1}}]}'), r"`jobs\[0\]\.weight` = nan"),
    Case("negative deficit", doc(rnd([job(deficit=-1)])), r"`jobs\[0\]\.deficit` = -1"),
    Case("negative priority", doc(rnd([job(priority=-1)])), r"`jobs\[0\]\.priority` = -1"),
    Case("throughput not an object", doc(rnd([job(throughput=[1])])), r"`jobs\[0\]\.throughput` = \[1\]"),
    Case("throughput on an unknown type", doc(rnd([job(throughput={"H100": 1})])), r"`jobs\[0\]\.throughput\.H100`"),
    Case("negative throughput", doc(rnd([job(throughput={"V100": -1})])), r"`jobs\[0\]\.throughput\.V100` = -1"),
    Case("infinite throughput", text('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, '
                                     '"throughput": {"V100": Infinity}}]}'), r"`jobs\[0\]\.throughput\.V100` = inf"),
    Case("a job that runs nowhere", doc(rnd([job(scale=4)])), r"`jobs\[0\]"),
    Case("pair: unknown job", doc(rnd(PAIRABLE, colocation=[pair("a", "z")])), r"`colocation\[0\]\.jobs`"),
    Case("pair: a job with itself", doc(rnd(PAIRABLE, colocation=[pair("a", "a")])), r"`colocation\[0\]"),
    Case("pair: different scales", doc(rnd(PAIRABLE, colocation=[pair("a", "c")])), r"`colocation\[0\]"),
    Case("pair: unknown type", doc(rnd(PAIRABLE, colocation=[pair(gpu="H100")])), r"`colocation\[0\]\.gpu` = 'H100'"),
    Case("pair: three throughputs", doc(rnd(PAIRABLE, colocation=[pair(tput=(1, 1, 1))])),
         r"`colocation\[0\]\.throughput`"),
    Case("pair listed twice", doc(rnd(PAIRABLE, colocation=[pair(), pair("b", "a")])), r"`colocation\[1\]"),
    Case("epsilon 1", doc(rnd(epsilon=1)), r"`epsilon` = 1"),
    Case("fairness_weight 0", doc(rnd(fairness_weight=0)), r"`fairness_weight` = 0"),
    # cause 3: malformed bytes and numbers
    Case("integer beyond float range", text('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": '
                                            '{"V100": 1' + "0" * 400 + "}}]}"), r"`jobs\[0\]\.throughput\.V100`"),
    Case("integer of 5,000 digits", text('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "throughput": '
                                         '{"V100": ' + "7" * 5000 + "}}]}"), r"`jobs\[0\]\.throughput\.V100`"),
    Case("float beyond float range", text('{"gpus": {"V100": 1}, "jobs": [{"id": "a", "scale": 1, "weight": 1e400, '
                                          '"throughput": {"V100": 1}}]}'), r"`jobs\[0\]\.weight` = '1e400'"),
    Case("nested 100,000 levels", text("[" * 100_000 + "]" * 100_000), r"`document`.*nested deeper"),
    Case("not UTF-8", '{"gpus": {"V100": 1}, "jobs": [{"id": "café", "scale": 1, "throughput": {"V100": 1}}]}'
         .encode("latin-1"), r"`document`.*not UTF-8"),
    Case("UTF-16", json.dumps(rnd()).encode("utf-16"), r"`document`.*not UTF-8"),
    Case("binary", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", r"`document`.*not UTF-8"),
    # cause 7: weights that overflow a sum are normalised right
    Case("all weights 1e308", doc(WEIGHTY(1e308)), "", args=("--mode", "exact"), code=0,
         setup=write_unit_weights, check=same_answer_as_unit_weights),
    # cause 8: knobs beyond HiGHS's range are refused, not mis-solved
    Case("fairness_weight 1e21", doc(rnd(fairness_weight=1e21)), r"`fairness_weight` = 1e\+21",
         args=("--mode", "exact")),
    Case("deficit 1e20", doc(rnd([job(deficit=1e20)])), r"`jobs\[0\]\.deficit` = 1e\+20", args=("--mode", "lp")),
    Case("deficit 1e308", doc(rnd([job(deficit=1e308)])), r"`jobs\[0\]\.deficit` = 1e\+308"),
    Case("throughput 9e307", doc(rnd([job(scale=2, throughput={"V100": 9e307})])), r"`jobs\[0\]\.throughput\.V100`"),
    Case("pair throughput 1e15", doc(rnd(PAIRABLE, colocation=[pair(tput=(1e15, 1.0))])),
         r"`colocation\[0\]\.throughput`", args=("--mode", "lp")),
    Case("weight ratio 1e13", doc(rnd([job("a", weight=1e-7), job("b", weight=1e6)])), r"`jobs\[\d\]\.weight`"),
    # cause 9: GPU counts that overflow int64 when summed
    Case("1,024 types of 2**53 GPUs",
         doc(rnd([job(throughput={"T0": 1.0})], gpus={f"T{i}": 2**53 for i in range(1024)})),
         r"`gpus\.T0` = 9007199254740992"),
    # cause 13: lp output at weight ratios of 1e-6..1e6
    Case("issue 13 cause 13 repro", doc(REPRO_13), "", args=("--mode", "lp"), code=0,
         check=lp_numbers_are_its_placements),
    # cause 15: the smaller ones
    Case("ROUND is a folder", None, r"`ROUND` = '.*': is a folder, not a file", round="{tmp}"),
    Case("ROUND is /dev/zero", None, r"`ROUND` = '/dev/zero': larger than the limit", round="/dev/zero"),
    Case("ROUND is a FIFO", None, "", round="{tmp}/fifo.json", code=0, setup=fifo_with_writer),
    Case("ROUND is a FIFO without a writer", None, r"`ROUND` = '.*fifo\.json': nothing to read",
         round="{tmp}/fifo.json", setup=fifo_alone),
    Case("ROUND is empty", b"", r"`ROUND` = '.*round\.json': is empty"),
    Case("stdin without end", None, r"`ROUND` = '-': larger than the limit", round="-", setup=zero_stdin),
    Case("a 1 MB id twice", doc(rnd([job(BIG_ID), job(BIG_ID)])), r"`jobs\[1\]\.id` = 'xxx.*\(1000002 characters\)"),
    Case("a 1 MB unknown key", doc(rnd(**{BIG_ID: 1})), r"`xxx.*\(1000000 characters\)"),
    Case("--time-limit with fast", VALID, r"`--time-limit` = 1\.0: applies to --mode exact only",
         args=("--mode", "fast", "--time-limit", "1")),
    Case("--time-limit with lp", VALID, r"`--time-limit` = 1\.0: applies to --mode exact only",
         args=("--mode", "lp", "--time-limit", "1")),
    Case("--time-limit 0", VALID, r"`--time-limit` = 0\.0: must be a positive",
         args=("--mode", "exact", "--time-limit", "0")),
    # cause 16: size
    Case("200 MB document", None, r"`ROUND` = '.*round\.json': larger than the limit of 67108864 bytes",
         setup=sparse_200mb),
    # cause 4: I/O errors, and a failed write leaves the old output as it was
    Case("-o in a missing folder", VALID, r"`--output` = '.*missing/out\.json': cannot write",
         args=("-o", "{tmp}/missing/out.json")),
    Case("-o is a folder", VALID, r"`--output` = '.*': is a folder, not a file", args=("-o", "{tmp}")),
    Case("-o /dev/full", VALID, r"`--output` = '/dev/full': cannot write \(No space left on device\)",
         args=("-o", "/dev/full")),
    Case("-o beyond the file-size limit", VALID, r"`--output` = '.*out\.json': cannot write \(File too large\)",
         setup=old_output_and_file_size_limit, check=old_output_untouched),
    Case("-o in a read-only folder", VALID, r"`--output` = '.*ro/out\.json': cannot write \(Permission denied\)",
         args=("-o", "{tmp}/ro/out.json"), setup=readonly_folder, skip="root ignores permissions" if ROOT else None),
    Case("unreadable ROUND", VALID, r"`ROUND` = '.*': cannot read \(Permission denied\)", setup=unreadable_round,
         skip="root ignores permissions" if ROOT else None),
]


def _run(case: Case, tmp: Path) -> subprocess.CompletedProcess[str]:
    if case.content is not None:
        (tmp / "round.json").write_bytes(case.content)
    popen = case.setup(tmp) if case.setup else {}
    args = [case.round.format(tmp=tmp), *(a.format(tmp=tmp) for a in case.args)]
    if "-o" not in args and case.code != 0:  # a failed run must leave no output file
        args += ["-o", str(tmp / "out.json")]
    stdin = popen.pop("stdin", subprocess.DEVNULL)
    try:
        return subprocess.run([sys.executable, "-m", "fairshare", "allocate", *args], capture_output=True, text=True,
                              stdin=stdin, timeout=120, check=False, **popen)
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """Every selected case, run two at a time (each is a fresh interpreter)."""
    selected = {item.callspec.params["case"].name for item in request.session.items
                if getattr(item, "callspec", None) is not None and "case" in item.callspec.params}
    todo = [(c, tmp_path_factory.mktemp("case")) for c in CASES if c.skip is None and c.name in selected]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda ct: (ct[1], _run(*ct)), todo))
    return {c.name: d for (c, _), d in zip(todo, done)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_allocate_hostile_input(case: Case, runs: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]) -> None:
    if case.skip:
        pytest.skip(case.skip)
    tmp, res = runs[case.name]
    assert "Traceback" not in res.stderr
    assert res.returncode == case.code, res.stderr[-2000:]
    leftovers = sorted(p.name for p in tmp.iterdir() if p.name.startswith("."))
    assert leftovers == [], "a temporary file was left behind"
    if case.code == 2:
        assert res.stdout == ""
        lines = res.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("fairshare: error: `"), res.stderr[-2000:]
        assert len(lines[0]) <= 1000
        assert re.search(case.match, lines[0]), lines[0]
        out = tmp / "out.json"
        assert not out.exists() or out.read_text() == "old\n", "a partial output file"
    else:
        assert res.stderr == ""
        strict_json(res.stdout)
    if case.check is not None:
        case.check(tmp, res)


def test_every_issue_cause_on_the_solve_side_has_a_case() -> None:
    names = " ".join(c.name for c in CASES)
    for needle in ("beyond float range", "nested", "UTF-8", "/dev/full", "file-size", "1e308", "1e21", "2**53",
                   "repro", "FIFO", "1 MB", "--time-limit with fast", "200 MB"):
        assert needle in names, needle


def test_a_successful_write_replaces_the_old_output_atomically(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("old\n")
    out.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(out)
    res = subprocess.run([sys.executable, "-m", "fairshare", "allocate", "--example", "-o", str(link)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and strict_json(out.read_text())["status"] == "heuristic"
    assert out.stat().st_mode & 0o777 == 0o640  # the old file's permission bits are kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "out.json"]


def test_large_documents_are_refused_by_size_without_reading_them(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_JSON_BYTES + 1)
    from fairshare.cli._files import read_bytes
    from fairshare.errors import InvalidInputError
    with pytest.raises(InvalidInputError, match=f"larger than the limit of {MAX_JSON_BYTES} bytes"):
        read_bytes("ROUND", big, MAX_JSON_BYTES)
