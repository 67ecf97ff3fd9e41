"""Tests of fairshare.sim.importers on the shipped samples of each format (synthetic, and the real Philly rows), and
of the rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fairshare.errors import InvalidInputError
from fairshare.sim.catalog import load_catalog
from fairshare.sim.importers import GPU_ALIASES, CsvColumns, assign_model, import_trace
from fairshare.sim.traces import format_trace, read_trace

DATA = Path(__file__).resolve().parents[2] / "data" / "traces"
PHILLY = sorted((DATA / "philly").iterdir())
PAI = sorted((DATA / "pai2020").glob("*.csv"))
OPENB = sorted((DATA / "openb2023").glob("*.csv"))
GENERIC = DATA / "generic" / "my_cluster.csv"
COLS = CsvColumns(arrival="submitted", gpus="gpus", duration="runtime_min", time_unit="min", gpu_type="gpu_model",
                  user="owner", id="job", status="state", running=("RUNNING",))


@pytest.fixture(scope="module")
def modern():
    return load_catalog("modern")


def _jobs(path: Path) -> list[dict]:
    return json.loads(path.read_text())


def test_samples_are_labelled_synthetic_with_origin_and_licence() -> None:
    readme = (DATA / "README.md").read_text()
    for word in ("synthetic", "Philly", "cluster-trace-gpu-v2020", "cluster-trace-gpu-v2023", "CC BY 4.0",
                 "make_samples.py"):
        assert word in readme, word


def test_philly_sample(modern) -> None:
    res = import_trace(PHILLY, "philly", catalog=modern)
    log = _jobs(DATA / "philly" / "cluster_job_log")
    t = res.trace
    never = [j for j in log if not j["attempts"]]
    gpus = {j["jobid"]: sum(len(d["gpus"]) for d in j["attempts"][-1]["detail"]) for j in log if j["attempts"]}
    big = [j for j in log if j["attempts"] and 8 < gpus[j["jobid"]] <= 128]      # on derived scales (scale-out)
    huge = [j for j in log if j["attempts"] and gpus[j["jobid"]] > 128]
    assert big and res.skipped == {"never started": len(never), **(
        {"more GPUs than any catalog scale (max 128)": len(huge)} if huge else {})}
    assert len(t) == len(log) - len(never) - len(huge)
    assert int((t.scale > 8).sum()) == len(big) == res.source["derived_scales"]
    still = {j["jobid"] for j in log if j["attempts"] and j["attempts"][-1]["end_time"] is None}
    assert {t.id[i] for i in np.flatnonzero(t.censored)} == still - {j["jobid"] for j in huge}
    assert t.arrival.min() == 0 and set(t.scale.tolist()) <= {1, 2, 4, 8, 16, 32, 64, 128}
    first = next(j for j in log if j["jobid"] == t.id[0])
    assert t.metadata[0]["vc"] == first["vc"] and t.tenant[0] == first["user"]
    assert res.unmapped == {"philly-12GB": 60, "philly-24GB": 20} and res.suggested_cluster == {}
    mapped = import_trace(PHILLY, "philly", catalog=modern, gpu_type_map={"philly-12GB": "V100-16GB",
                                                                          "philly-24GB": "A10"})
    assert mapped.suggested_cluster == {"V100-16GB": 60, "A10": 20} and mapped.unmapped == {}
    assert mapped.source["target_gpu_types"] == ["V100-16GB", "A10"]


def test_philly_real_rows(modern) -> None:
    """The one real job the Philly trace documents and the trace's real machine list (CC BY 4.0)."""
    folder = DATA / "philly-real"
    res = import_trace(sorted(folder.iterdir()), "philly", catalog=modern,
                       gpu_type_map={"philly-12GB": "P100", "philly-24GB": "A10"})
    rows = [line.split(",") for line in (folder / "cluster_machine_list").read_text().splitlines()[1:]]
    by_mem: dict[str, int] = {}
    for _machine, gpus, mem in rows:
        by_mem[mem.strip()] = by_mem.get(mem.strip(), 0) + int(gpus)
    assert len(rows) == 552 and by_mem == {"12GB": 642, "24GB": 1848}
    assert res.suggested_cluster == {"P100": 642, "A10": 1848}
    t = res.trace
    assert len(t) == 1 and t.id[0] == "application_1506638472019_14199" and t.scale[0] == 8
    # two attempts: 01:12:09-01:13:23 and 01:13:30 to two days later 06:53:12 (submitted 01:11:39)
    assert t.metadata[0]["attempts"] == "2" and t.metadata[0]["status"] == "Pass" and not t.censored[0]
    assert float(t.metadata[0]["run_seconds"]) == 74 + 2 * 86400 + 5 * 3600 + 39 * 60 + 42
    assert t.tenant[0] == "ce2f4c" and t.metadata[0]["vc"] == "ee9e8c"


def test_pai2020_sample(modern) -> None:
    res = import_trace(PAI, "pai2020", catalog=modern)
    t = res.trace
    assert res.suggested_cluster == {"T4": 12, "V100": 32, "V100-32GB": 16, "P100": 6}
    assert res.unmapped == {"MISC": 16}
    assert res.skipped["no GPU"] > 0 and res.skipped["never started"] > 0
    half = np.flatnonzero(t.gpus == 0.5)
    assert half.size and (t.scale[half] == 0.5).all()              # half a GPU: kept as a share of one GPU
    whole = import_trace(PAI, "pai2020", catalog=modern, fractional="whole").trace
    assert (whole.scale[half] == 1).all() and whole.scale.dtype == np.int64  # the rule before shares
    assert (t.gpus[t.scale == 8] == 8).all()
    assert t.censored.sum() == 8 and all(t.metadata[i]["status"] == "Running" for i in np.flatnonzero(t.censored))
    # work = run time x throughput on the type it ran on
    cat = modern
    for i in range(0, len(t), 17):
        gtype = {"V100M32": "V100-32GB"}.get(t.metadata[i].get("gpu_type", ""), t.metadata[i].get("gpu_type"))
        run = float(t.metadata[i]["run_seconds"])
        scale, share = max(1, int(np.ceil(t.scale[i]))), min(1.0, float(t.scale[i]))  # a share: its part of 1 GPU
        if gtype in cat.gpu_types and cat.supports(t.model[i], scale, gtype):
            rate = share * cat.alone_throughput(t.model[i], scale, gtype)
            assert t.iterations[i] == max(1.0, round(run * rate))


def test_pai2020_with_header_lines(tmp_path: Path, modern) -> None:
    heads = {"pai_job_table.csv": "job_name,inst_id,user,status,start_time,end_time",
             "pai_task_table.csv": "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,"
                                   "plan_gpu,gpu_type",
             "pai_machine_spec.csv": "machine,gpu_type,cap_cpu,cap_mem,cap_gpu"}
    for p in PAI:
        (tmp_path / p.name).write_text(heads[p.name] + "\n" + p.read_text())
    assert import_trace(sorted(tmp_path.iterdir()), "pai2020", catalog=modern).trace == \
        import_trace(PAI, "pai2020", catalog=modern).trace


def test_openb2023_sample(modern) -> None:
    res = import_trace(OPENB, "openb2023", catalog=modern)
    assert res.suggested_cluster == {"T4": 16, "V100-16GB": 16, "V100-32GB": 16, "P100": 6, "A10": 2}
    assert res.unmapped == {"G2": 48, "G3": 8}
    t = res.trace
    assert {t.metadata[i]["qos"] for i in range(len(t))} <= {"LS", "BE", "Burstable"}
    frac = t.gpus < 1
    assert frac.sum() > 50 and (t.scale[frac] == t.gpus[frac]).all()
    default = import_trace(OPENB, "openb2023")                      # the default catalog: V100M16 is the V100
    assert default.suggested_cluster == {"V100": 16, "P100": 6} and "T4" in default.unmapped


def test_generic_csv_sample(modern) -> None:
    res = import_trace([GENERIC], "csv", catalog=modern, columns=COLS)
    t = res.trace
    assert len(t) == 150 and t.censored.sum() == 5
    assert set(res.suggested_cluster) == {"H100", "A100-80GB", "L4", "T4"}     # peak in use, per type
    assert t.metadata[0]["queue"] in ("prod", "research", "dev") and t.tenant[0].startswith("u")
    row = GENERIC.read_text().splitlines()[1].split(",")
    assert t.id[0] == row[0] and float(t.metadata[0]["run_seconds"]) == pytest.approx(float(row[3]) * 60)


def test_the_rule_is_deterministic_and_independent_of_row_order(tmp_path: Path, modern) -> None:
    lines = GENERIC.read_text().splitlines()
    shuffled = tmp_path / "shuffled.csv"
    rng = np.random.default_rng(3)
    body = lines[1:]
    rng.shuffle(body)
    shuffled.write_text("\n".join([lines[0], *body]) + "\n")
    a = import_trace([GENERIC], "csv", catalog=modern, columns=COLS).trace
    b = import_trace([shuffled], "csv", catalog=modern, columns=COLS).trace
    ia, ib = {j: i for i, j in enumerate(a.id)}, {j: i for i, j in enumerate(b.id)}
    for jid in a.id:
        assert a.model[ia[jid]] == b.model[ib[jid]]
        assert a.iterations[ia[jid]] == b.iterations[ib[jid]]


@settings(max_examples=50, deadline=None)
@given(st.text(min_size=1, max_size=20), st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=8,
                                                   unique=True))
def test_assign_model_is_a_pure_function_of_key_and_pool(key: str, pool: list[str]) -> None:
    m = assign_model(key, pool)
    assert m in pool and assign_model(key, list(pool)) == m


def test_model_column_names_the_model_or_groups_jobs_by_class(tmp_path: Path, modern) -> None:
    src = tmp_path / "c.csv"
    src.write_text("id,t,g,d,m\n1,0,1,60,ResNet-50 (batch size 64)\n2,10,1,60,bert\n3,20,1,60,bert\n4,30,1,60,x\n")
    cols = CsvColumns(arrival="t", gpus="g", duration="d", model="m")
    t = import_trace([src], "csv", catalog=modern, columns=cols).trace
    assert t.model[0] == "ResNet-50 (batch size 64)"
    assert t.model[1] == t.model[2]                                  # one class, one model


def test_fractional_drop_and_whole(tmp_path: Path, modern) -> None:
    src = tmp_path / "f.csv"
    src.write_text("id,t,g,d\na,0,50,600\nb,0,100,600\nc,0,150,600\n")
    cols = CsvColumns(arrival="t", gpus="g", duration="d", gpu_unit="percent", id="id")
    share = import_trace([src], "csv", catalog=modern, columns=cols)
    assert share.trace.gpus.tolist() == [0.5, 1.0, 1.5] and share.trace.scale.tolist() == [0.5, 1, 2]
    whole = import_trace([src], "csv", catalog=modern, columns=cols, fractional="whole")
    assert whole.trace.gpus.tolist() == [0.5, 1.0, 1.5] and whole.trace.scale.tolist() == [1, 1, 2]
    dropped = import_trace([src], "csv", catalog=modern, columns=cols, fractional="drop")
    assert dropped.trace.id == ("b",) and dropped.skipped == {"part of a GPU (fractional=drop)": 2}


def test_end_column_iso_times_and_censored_column(tmp_path: Path, modern) -> None:
    src = tmp_path / "e.csv"
    src.write_text("id,sub,start,end,g,c\n"
                   "a,2024-01-01 00:00:00,2024-01-01 00:10:00,2024-01-01 01:10:00,2,0\n"
                   "b,2024-01-01 00:05:00,,2024-01-01 00:35:00,1,yes\n"
                   "c,2024-01-01 00:06:00,,,1,0\n")
    # with --start, an empty start means the job never started (b was cancelled while waiting)
    cols = CsvColumns(arrival="sub", gpus="g", end="end", start="start", censored="c", id="id")
    r = import_trace([src], "csv", catalog=modern, columns=cols)
    assert r.trace.id == ("a",) and r.skipped == {"never started": 2}
    assert [float(m["run_seconds"]) for m in r.trace.metadata] == [3600.0]
    # without --start, the run time counts from the submit time
    cols = CsvColumns(arrival="sub", gpus="g", end="end", censored="c", id="id")
    r = import_trace([src], "csv", catalog=modern, columns=cols)
    t = r.trace
    assert t.id == ("a", "b") and t.arrival.tolist() == [0.0, 300.0] and t.censored.tolist() == [False, True]
    assert [float(m["run_seconds"]) for m in t.metadata] == [4200.0, 1800.0]
    assert r.skipped == {"never started": 1}


def test_trace_file_keeps_everything_and_reads_back(tmp_path: Path, modern) -> None:
    res = import_trace(PAI, "pai2020", catalog=modern)
    for fmt in ("json", "csv"):
        path = tmp_path / f"t.{fmt}"
        path.write_text(format_trace(res.trace, fmt, meta={"imported": res.source} if fmt == "json" else None))
        back = read_trace(path, catalog=modern)
        assert back == res.trace, fmt
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["meta"]["imported"]["format"] == "pai2020" and len(doc["meta"]["imported"]["files"]) == 3


@pytest.mark.parametrize("fmt, files, match", [
    ("nope", PAI, r"`format` = 'nope': unknown trace format"),
    ("pai2020", PAI[:1], r"pai2020 needs pai_job_table and pai_task_table"),
    ("openb2023", PAI[:1], r"neither an openb pod list"),
    ("philly", OPENB[:1], r"no cluster_job_log"),
])
def test_wrong_files_are_named(fmt: str, files: list[Path], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        import_trace(files, fmt)


def test_malformed_rows_name_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "pai_job_table.csv"
    bad.write_text("a,b,c,Terminated,soon,5\n")
    task = tmp_path / "pai_task_table.csv"
    task.write_text("a,worker,1,Terminated,1,5,400,1,100,T4\n")
    with pytest.raises(InvalidInputError, match=r"pai_job_table.csv, line 1, start_time` = 'soon': not a number"):
        import_trace([bad, task], "pai2020")
    binary = tmp_path / "x.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InvalidInputError, match="not a UTF-8 text file"):
        import_trace([binary], "csv", columns=CsvColumns(arrival="a", gpus="g", duration="d"))
    with pytest.raises(InvalidInputError, match=r"`--gpus` = 'nope': no such column"):
        import_trace([GENERIC], "csv", columns=CsvColumns(arrival="submitted", gpus="nope", duration="runtime_min"))
    with pytest.raises(InvalidInputError, match="exactly one of them"):
        CsvColumns(arrival="a", gpus="g")
    empty = tmp_path / "empty.csv"
    empty.write_text("id,t,g,d\na,0,0,60\n")
    with pytest.raises(InvalidInputError, match=r"no job left to import \(1 no GPU\)"):
        import_trace([empty], "csv", columns=CsvColumns(arrival="t", gpus="g", duration="d"))
    folder = tmp_path / "dir"
    folder.mkdir()
    with pytest.raises(InvalidInputError, match="is a folder"):
        import_trace([folder], "philly")


def test_aliases_prefer_the_specific_variant(modern) -> None:
    assert GPU_ALIASES["V100M16"] == ("V100-16GB", "V100")
    default = load_catalog()
    assert "V100-16GB" not in default.gpu_types and "V100-16GB" in modern.gpu_types


def test_sample_copy_in_a_folder_with_spaces(tmp_path: Path, modern) -> None:
    d = tmp_path / "my traces"
    shutil.copytree(DATA / "openb2023", d)
    assert len(import_trace(sorted(d.iterdir()), "openb2023", catalog=modern).trace) == \
        len(import_trace(OPENB, "openb2023", catalog=modern).trace)
