"""The round-based simulator (spec simulator.md): exact finish times, overheads, deficits, determinism; its
options (SimConfig) and the round executor (_execute_round), tested without a policy."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from fairshare import InvalidInputError
from fairshare.errors import PolicyError
from fairshare.fair_share import next_deficit
from fairshare.sim.catalog import load_catalog
from fairshare.sim.cluster_spec import parse_cluster
from fairshare.sim.config import SimConfig
from fairshare.sim.execute import RoundOutcome, _busy_gpu_seconds, _execute_round, _JobState
from fairshare.sim.records import RoundRecord
from fairshare.sim.result import SimulationResult
from fairshare.sim.simulator import simulate
from fairshare.sim.traces import Trace, generate_trace

R50 = "ResNet-50 (batch size 64)"


def tput(model: str, gpu: str, scale: int = 1) -> float:
    return load_catalog().alone_throughput(model, scale, gpu)


def one_job(iterations: float, arrival: float = 0.0, model: str = R50) -> Trace:
    return Trace(id=["a"], arrival=[arrival], model=[model], scale=[1], iterations=[iterations])


def test_a_job_finishes_at_the_exact_time_its_work_runs_out() -> None:
    t = tput(R50, "V100")
    res = simulate(one_job(t * 1000.0), "V100=1", "fairshare", show_progress=False)
    job = res.jobs[0]
    assert job.finish == pytest.approx(1000.0)
    assert job.done_iterations == pytest.approx(job.iterations)
    assert len(res.rounds) == 3  # rounds start at 0, 360, 720
    # busy GPU time: 360 + 360 + 280 s on one GPU
    assert sum(r.busy_gpu_seconds for r in res.rounds) == pytest.approx(1000.0)


def test_restart_overhead_is_paid_when_the_placement_changes() -> None:
    t = tput(R50, "V100")
    res = simulate(one_job(t * 1000.0), "V100=1", "fairshare", restart_overhead=10.0, show_progress=False)
    assert res.jobs[0].finish == pytest.approx(1010.0)  # paid once: the placement never changes again


def test_arrival_inside_a_round_waits_for_the_next_round_only_with_starts_round() -> None:
    t = tput(R50, "V100")
    tr = Trace(id=["a", "b"], arrival=[0.0, 100.0], model=[R50, R50], scale=[1, 1],
               iterations=[t * 2000.0, t * 100.0])
    res = simulate(tr, "V100=2", "fairshare", starts="round", show_progress=False)
    b = next(j for j in res.jobs if j.id == "b")
    assert b.finish == pytest.approx(360.0 + 100.0)
    # by default it starts at its arrival on the idle second V100
    res = simulate(tr, "V100=2", "fairshare", show_progress=False)
    assert next(j for j in res.jobs if j.id == "b").finish == pytest.approx(100.0 + 100.0)


def test_deficits_make_two_jobs_share_one_gpu_in_time() -> None:
    t = tput(R50, "V100")
    tr = Trace(id=["a", "b"], arrival=[0.0, 0.0], model=[R50, R50], scale=[1, 1],
               iterations=[t * 3600.0, t * 3600.0])
    res = simulate(tr, "V100=1", "fairshare", colocation=False, show_progress=False)
    finishes = sorted(j.finish for j in res.jobs)
    # alternating rounds: both finish near 2 x 3600 s, not one at 3600 and the other at 7200
    assert finishes[0] > 6000 and finishes[1] == pytest.approx(7200.0)
    spatial = simulate(tr, "V100=1", "fairshare", colocation=False, carry_deficits=False, show_progress=False)
    assert min(j.finish for j in spatial.jobs) == pytest.approx(3600.0)  # no memory: one runs to the end


def test_capacity_and_work_are_conserved_on_a_generated_trace() -> None:
    tr = generate_trace(30, jobs_per_hour=20, seed=3, multi_gpu=False)
    res = simulate(tr, "V100=4,P100=4,K80=4", "fairshare", round_length=1800.0, show_progress=False)
    assert all(math.isfinite(j.finish) for j in res.jobs)
    for j in res.jobs:
        assert j.done_iterations == pytest.approx(j.iterations)
        assert j.finish > j.arrival
    for r in res.rounds:
        assert r.busy_gpu_seconds <= r.capacity_gpu_seconds + 1e-6
        assert 0 <= r.placed_jobs <= r.active_jobs


@pytest.mark.parametrize("policy", ["fairshare", "gavel", "las", "fifo"])
def test_simulation_is_deterministic(policy: str) -> None:
    tr = generate_trace(25, jobs_per_hour=30, seed=5, multi_gpu=False)
    a = simulate(tr, "V100=3,P100=3,K80=3", policy, round_length=3600.0, show_progress=False)
    b = simulate(tr, "V100=3,P100=3,K80=3", policy, round_length=3600.0, show_progress=False)
    assert [(j.id, j.finish) for j in a.jobs] == [(j.id, j.finish) for j in b.jobs]


def test_max_rounds_leaves_unfinished_jobs_nan_and_json_round_trips(tmp_path) -> None:
    tr = generate_trace(20, jobs_per_hour=60, seed=1, multi_gpu=False)
    res = simulate(tr, "V100=2,P100=2,K80=2", "fairshare", max_rounds=3, show_progress=False)
    assert len(res.rounds) == 3
    assert any(math.isnan(j.finish) for j in res.jobs)
    assert all(j.active_seconds >= 0 for j in res.jobs)
    path = tmp_path / "r.json"
    res.save_json(path)
    back = SimulationResult.from_dict(__import__("json").loads(path.read_text()))
    assert [j.id for j in back.jobs] == [j.id for j in res.jobs]
    assert back.rounds == res.rounds
    assert (back.config, back.cluster, back.policy) == (res.config, {"V100": 2, "P100": 2, "K80": 2}, "fairshare")
    m = back.metrics()
    assert m.unfinished == sum(math.isnan(j.finish) for j in res.jobs)


@pytest.mark.parametrize("policy", ["las", "gavel"])
def test_stop_when_finished_ends_the_run_in_the_round_the_window_empties(policy: str) -> None:
    tr = generate_trace(16, jobs_per_hour=30, seed=4, multi_gpu=False)
    full = simulate(tr, "V100=1,P100=1,K80=1", policy, round_length=1800.0, show_progress=False)
    window = [tr.id[i] for i in np.argsort(tr.arrival, kind="stable")[3:8]]
    part = simulate(tr, "V100=1,P100=1,K80=1", policy, round_length=1800.0, stop_when_finished=window,
                    show_progress=False)
    by_id = {j.id: j for j in part.jobs}
    last = max(by_id[w].finish for w in window)
    assert all(math.isfinite(by_id[w].finish) for w in window)
    # the run stops in the round where the last watched job finished, with later jobs still unfinished
    assert part.rounds[-1].start < last <= part.rounds[-1].start + part.rounds[-1].length
    assert len(part.rounds) < len(full.rounds)
    assert any(math.isnan(j.finish) for j in part.jobs)
    # and up to there it is the same run as without the stop
    def plan(rounds):  # everything but the measured solver time
        return [dataclasses.replace(r, solver_seconds=0.0) for r in rounds]

    assert plan(part.rounds) == plan(full.rounds[:len(part.rounds)])
    full_by_id = {j.id: j for j in full.jobs}
    assert all(by_id[w].finish == full_by_id[w].finish for w in window)
    assert part.config.stop_when_finished == tuple(window)
    assert part.to_dict()["config"]["stop_when_finished_jobs"] == len(window)


def test_stop_when_finished_rejects_unknown_ids() -> None:
    tr = one_job(10.0)
    with pytest.raises(InvalidInputError, match=r"stop_when_finished.*zz"):
        simulate(tr, "V100=1", "fairshare", stop_when_finished=["zz"], show_progress=False)
    with pytest.raises(InvalidInputError, match=r"stop_when_finished.*collection"):
        simulate(tr, "V100=1", "fairshare", stop_when_finished="a", show_progress=False)
    with pytest.raises(InvalidInputError, match=r"stop_when_finished.*names no job"):
        simulate(tr, "V100=1", "fairshare", stop_when_finished=[], show_progress=False)


def test_job_that_fits_nowhere_is_rejected() -> None:
    tr = Trace(id=["big"], arrival=[0.0], model=[R50], scale=[8], iterations=[10.0])
    with pytest.raises(InvalidInputError, match=r"trace\[0\].*big"):
        simulate(tr, "V100=4", "fairshare", show_progress=False)


@pytest.mark.parametrize("spec, match", [("V100", r"cluster.*TYPE=COUNT"), ("V100=x", r"cluster\.V100.*x"),
                                         ("V100=0", "no GPU"), ({"V100": -1}, r"cluster\.V100.*-1")])
def test_bad_cluster_spec(spec, match) -> None:
    with pytest.raises(InvalidInputError, match=match):
        parse_cluster(spec)


def test_bad_simulation_options() -> None:
    tr = one_job(10.0)
    with pytest.raises(InvalidInputError, match="round_length"):
        simulate(tr, "V100=1", "fairshare", round_length=0, show_progress=False)
    with pytest.raises(InvalidInputError, match="restart_overhead"):
        simulate(tr, "V100=1", "fairshare", restart_overhead=-1.0, show_progress=False)
    with pytest.raises(InvalidInputError, match="restart_overhead"):
        simulate(tr, "V100=1", "fairshare", restart_overhead=1e9, show_progress=False)
    with pytest.raises(InvalidInputError, match=r"policy.*nope"):
        simulate(tr, "V100=1", "nope", show_progress=False)


def test_fair_throughput_record_is_the_time_weighted_fair_share() -> None:
    t = tput(R50, "V100")
    tr = Trace(id=["a", "b"], arrival=[0.0, 0.0], model=[R50, R50], scale=[1, 1],
               iterations=[t * 720.0, t * 720.0])
    res = simulate(tr, "V100=2", "fairshare", colocation=False, show_progress=False)
    for j in res.jobs:  # two jobs, two V100: each one's fair share is one V100
        assert j.fair_throughput == pytest.approx(t)
        assert j.finish == pytest.approx(720.0)
    assert np.isclose(res.metrics().max_rho, 1.0)


# ----------------------------------------------------------------------------------------------------------
# SimConfig: the options of a run
# ----------------------------------------------------------------------------------------------------------


def test_sim_config_defaults_and_coercion() -> None:
    cfg = SimConfig()
    assert (cfg.round_length, cfg.epsilon, cfg.fairness_weight, cfg.max_pairs_per_job) == (360.0, 0.0, 100.0, 4)
    assert SimConfig.coerce(None) == cfg
    assert SimConfig.coerce({"round_length": 60}, epsilon=0.5) == SimConfig(round_length=60.0, epsilon=0.5)
    assert SimConfig.coerce(cfg, max_rounds=3).max_rounds == 3 and cfg.max_rounds is None
    assert SimConfig(stop_when_finished=["a", "b"]).stop_when_finished == ("a", "b")
    assert not SimConfig(colocation=False).offers_pairs and not SimConfig(max_pairs_per_job=0).offers_pairs
    assert SimConfig(max_pairs_per_job=None).offers_pairs


@pytest.mark.parametrize("kw, match", [
    ({"round_length": -1.0}, r"`round_length` = -1\.0: must be a positive number of seconds"),
    ({"round_length": float("inf")}, "round_length"),
    ({"restart_overhead": -360.0}, r"`restart_overhead` = -360\.0: must be a number of seconds in \[0, 86400\]"),
    ({"epsilon": 1.0}, r"`epsilon` = 1\.0: must be in \[0, 1\)"),
    ({"fairness_weight": 0}, r"`fairness_weight` = 0: must be finite and > 0"),
    ({"max_pairs_per_job": -1}, r"`max_pairs_per_job` = -1"),
    ({"max_pairs_per_job": 2.5}, r"`max_pairs_per_job` = 2\.5"),
    ({"colocation": "yes"}, r"`colocation` = 'yes': must be True or False"),
    ({"max_rounds": -2}, r"`max_rounds` = -2"),
    ({"stop_when_finished": "a"}, r"`stop_when_finished` = 'a': must be a collection of job ids"),
    ({"stop_when_finished": []}, r"`stop_when_finished` = \(\): names no job"),
])
def test_sim_config_rejects_bad_options(kw: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        SimConfig(**kw)


def test_unknown_simulation_option_is_named() -> None:
    with pytest.raises(InvalidInputError, match=r"`round_lenght` = 5: unknown simulation option"):
        SimConfig.coerce(None, round_lenght=5)
    with pytest.raises(InvalidInputError, match=r"`config` = 'str': must be a SimConfig or a mapping"):
        SimConfig.coerce("round_length=5")  # type: ignore[arg-type]


def test_sim_config_json_round_trip() -> None:
    cfg = SimConfig(round_length=900, restart_overhead=30, max_pairs_per_job=None, stop_when_finished=("x",))
    doc = __import__("json").loads(__import__("json").dumps(cfg.to_dict()))
    assert doc["stop_when_finished"] == ["x"]
    assert SimConfig.from_dict({**doc, "cluster": {"V100": 1}}) == cfg


def test_config_object_and_keywords_give_the_same_run() -> None:
    tr = generate_trace(12, jobs_per_hour=30, seed=2, multi_gpu=False)
    cfg = SimConfig(round_length=1800.0, restart_overhead=20.0, epsilon=0.1)
    a = simulate(tr, "V100=2,K80=2", "fairshare", config=cfg, show_progress=False)
    b = simulate(tr, "V100=2,K80=2", "fairshare", round_length=1800.0, restart_overhead=20.0, epsilon=0.1,
                 show_progress=False)
    c = simulate(tr, "V100=2,K80=2", "fairshare", config={"round_length": 1800.0}, restart_overhead=20.0,
                 epsilon=0.1, show_progress=False)
    assert a.config == b.config == c.config == cfg
    assert a.jobs == b.jobs == c.jobs


# ----------------------------------------------------------------------------------------------------------
# _execute_round: one round's plan, executed without a policy
# ----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
    throughput: np.ndarray
    fair_throughput: np.ndarray
    job_gpu: np.ndarray
    job_partner: np.ndarray


def plan(tau: list[float], gpu: list[int], partner: list[int] | None = None,
         fair: list[float] | None = None) -> Plan:
    n = len(tau)
    return Plan(np.array(tau, float), np.array(fair or [1.0] * n, float), np.array(gpu),
                np.array(partner or [-1] * n))


def jobs(work: list[float], *, done: list[float] | None = None, scale: list[int] | None = None,
         prev_key: list[tuple[int, int]] | None = None, deficit: list[float] | None = None,
         start: float = 720.0) -> _JobState:
    n = len(work)

    def ro(values: list, dtype: type) -> np.ndarray:
        a = np.array(values, dtype=dtype)
        a.setflags(write=False)  # the executor is pure: writing would raise
        return a

    return _JobState(start, ro(list(range(10, 10 + n)), np.int64), ro(scale or [1] * n, np.int64),
                     ro(work, float), ro(done or [0.0] * n, float), ro(prev_key or [(-2, -2)] * n, np.int64),
                     ro(deficit or [0.0] * n, float))


def test_a_job_whose_work_runs_out_finishes_inside_the_round() -> None:
    # job 0 needs 100 s at 1 it/s; job 1 runs the whole round; job 2 is not placed
    out = _execute_round(plan([1.0, 2.0, 0.0], [0, 1, -1]), jobs([100.0, 5000.0, 50.0]), SimConfig())
    assert isinstance(out, RoundOutcome)
    assert out.placed.tolist() == [True, True, False] and out.finished.tolist() == [True, False, False]
    assert out.end.tolist() == [820.0, 1080.0, 1080.0]
    assert out.done.tolist() == [100.0, 720.0, 0.0]
    assert out.run_seconds.tolist() == [100.0, 360.0, 0.0]
    assert out.life.tolist() == [100.0, 360.0, 360.0]
    assert out.key.tolist() == [[0, -1], [1, -1], [-1, -1]]
    assert out.busy_gpu_seconds == 460.0  # job 0's GPU is idle after its finish


def test_restart_overhead_is_paid_only_when_the_placement_changes() -> None:
    cfg = SimConfig(restart_overhead=60.0)
    state = jobs([1e6, 1e6, 1e6], prev_key=[(0, -1), (0, -1), (-2, -2)])
    out = _execute_round(plan([1.0, 1.0, 1.0], [0, 1, 0]), state, cfg)  # same, other type, first start
    assert out.run_seconds.tolist() == [360.0, 300.0, 300.0]
    assert out.done.tolist() == [360.0, 300.0, 300.0]
    assert out.busy_gpu_seconds == 3 * 360.0  # the overhead holds the GPUs too
    # a job that finishes pays the overhead before its work: it ends later by that much
    out = _execute_round(plan([1.0], [1]), jobs([100.0], prev_key=[(0, -1)]), cfg)
    assert out.end.tolist() == [720.0 + 60.0 + 100.0] and out.life.tolist() == [160.0]


def test_a_co_located_pair_holds_its_gpus_until_its_last_member_stops() -> None:
    # rows 0 and 2 share 2 GPUs; row 0 finishes after 60 s, row 2 runs on; row 1 runs alone on 4 GPUs
    out = _execute_round(plan([1.0, 1.0, 0.5], [0, 1, 0], partner=[2, -1, 0]),
                         jobs([60.0, 100.0, 1e6], scale=[2, 4, 2]), SimConfig())
    assert out.key.tolist() == [[0, 12], [1, -1], [0, 10]]  # partners by trace position
    assert out.finished.tolist() == [True, True, False]
    assert out.busy_gpu_seconds == 2 * 360.0 + 4 * 100.0


def test_deficits_follow_the_delivered_progress() -> None:
    cfg = SimConfig(epsilon=0.2)
    state = jobs([1e6, 1e6], deficit=[0.5, 0.0])
    out = _execute_round(plan([2.0, 0.0], [0, -1], fair=[4.0, 1.0]), state, cfg)
    rho = np.array([2.0 * 360.0 / 360.0 / 4.0, 0.0])
    assert out.deficit.tolist() == next_deficit(np.array([0.5, 0.0]), 0.2, rho).tolist() == [0.8, 0.8]
    out = _execute_round(plan([2.0, 0.0], [0, -1], fair=[4.0, 1.0]), state, SimConfig(carry_deficits=False))
    assert out.deficit.tolist() == [0.5, 0.0]


def test_busy_gpu_seconds_counts_a_pair_once_even_if_one_member_did_not_run() -> None:
    placed = np.array([False, True, True, True])
    partner = np.array([1, 0, 3, 2])
    busy = np.array([0.0, 100.0, 50.0, 200.0])
    assert _busy_gpu_seconds(placed, partner, busy, np.array([2, 2, 1, 1])) == 2 * 100.0 + 1 * 200.0


def test_an_asymmetric_partner_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="job_partner is not symmetric: job 0 is paired with 1"):
        _execute_round(plan([1.0, 1.0, 1.0], [0, 0, 0], partner=[1, 2, 1]), jobs([1e6] * 3), SimConfig())


def test_round_records_name_the_utilization() -> None:
    res = simulate(one_job(tput(R50, "V100") * 1000.0), "V100=2", "fairshare", show_progress=False)
    assert all(isinstance(r, RoundRecord) and r.utilization == pytest.approx(0.5) for r in res.rounds)
