r"""A real public trace, from its files to a comparison, by the command line alone.

The trace is Alibaba's GPU cluster trace of 2023 (``cluster-trace-gpu-v2023`` of github.com/alibaba/clusterdata,
ATC'23 "Beware of Fragmentation"): ``openb_pod_list_default.csv`` (8,152 pods) and
``openb_node_list_all_node.csv`` (1,523 nodes). fairshare does not ship those files (the trace states no licence
for redistribution): download them and pass their folder with ``--data``. ``--sample`` runs the same steps on
the synthetic sample in ``tests/data/traces/openb2023/`` instead (a smoke test; its numbers mean nothing).

Steps, each one ``python -m fairshare ...`` run as a subprocess, its command and output kept for the report:

1. ``trace import --format openb2023`` (the built-in importer) of the pods submitted in ``--window`` hours
   (default one week, 3000:3168), their work set on the GPU types of ``--cluster`` (default T4, A10,
   A100-80GB and H100), part-of-a-GPU requests on whole GPUs (``--fractional whole``: not every peer can
   share a GPU).
2. ``trace import --format csv`` of the same pod list, mapped column by column as any CSV would be
   (``--arrival creation_time --gpus num_gpu --start scheduled_time --end deletion_time --id name --gpu-type
   gpu_spec``), same window and options; then a check that the two traces hold the same jobs with the same
   arrival, model, scale and work. (The CSV mapping gives the GPU count, not the part of a GPU, and marks no
   job censored: the built-in format knows that a pod deleted at the last timestamp of the file was still
   running.)
3. ``compare`` of ``--policy`` (default every policy) on each trace, on ``--cluster``, up to ``--until``
   simulated hours (default 240: the week and three days of tail).
4. With ``--short-rounds S`` (default 120; 0 skips it): ``compare`` of fairshare, gavel and ftf (those of
   ``--policy``) on the built-in import with rounds of ``S`` seconds instead of the default, to see how much of the
   lateness of jobs shorter than a round is the wait for the next round.
5. Unless ``--no-shares``: the built-in import again with ``--fractional share`` (the default: a request of part
   of one GPU holds that share of one GPU, sharing it with other such jobs), and ``compare`` of ``--policy``
   on it, to see what sharing GPUs as the trace asked changes.

Every throughput figure of those GPU types is **derived** (catalog ``modern``, rule ``modern-v1``); the
comparison tables say so. Outputs: ``--out/<name>.md`` (default ``docs/results/real_openb2023.md``) with the
commands, their output, the check and every comparison table, and the JCT and rho CDFs of the built-in run
(``<name>_jct_cdf.png``, ``<name>_rho_cdf.png``).

Usage::

    python examples/real_trace.py --data ~/clusterdata/cluster-trace-gpu-v2023/csv    # about 4 minutes on 2 cores
    python examples/real_trace.py --sample --out /tmp/r                               # smoke test, seconds
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from fairshare.sim.config import SimConfig

if __package__:  # python -m examples.real_trace
    from ._common import log, write_report
else:  # python examples/real_trace.py
    from _common import log, write_report

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "traces" / "openb2023"
PODS, NODES = "openb_pod_list_default.csv", "openb_node_list_all_node.csv"
SAMPLE_PODS, SAMPLE_NODES = "openb_pod_list_sample.csv", "openb_node_list_sample.csv"
#: The generic CSV mapping of an openb pod list.
CSV_MAPPING = ("--arrival", "creation_time", "--gpus", "num_gpu", "--start", "scheduled_time", "--end",
               "deletion_time", "--id", "name", "--gpu-type", "gpu_spec")
COMPARED = ("arrival", "model", "scale", "iterations")
#: The simulator's default round length (s): that of step 3.
ROUND = SimConfig().round_length
#: Release 0.2's settings, with which the published report was made: no restart overhead, jobs start at round
#: boundaries and on idle GPUs between them (no re-planning at events), fairshare without shortfall prices.
#: ``--current`` leaves them out (today's defaults of ``compare``).
RELEASE_02_OPTIONS = ("--restart-overhead", "0", "--starts", "idle", "--shortfall-price", "none", "--no-owed-wait")
#: The policies of the shorter-rounds comparison (step 4).
SHORT_ROUND_POLICIES = ("fairshare", "gavel", "ftf")


def fairshare(*args: str) -> tuple[str, str]:
    """Run ``python -m fairshare ARGS``; return the command as a person would type it, and stdout + stderr."""
    res = subprocess.run([sys.executable, "-m", "fairshare", *args], capture_output=True, text=True, check=False)
    shown = "fairshare " + " ".join(shlex.quote(a) for a in args)
    if res.returncode != 0:
        raise SystemExit(f"{shown}\nfailed ({res.returncode}):\n{res.stderr}")
    return shown, (res.stdout + res.stderr).rstrip()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def same_jobs(built_in: Path, generic: Path) -> dict[str, int]:
    """How the generic import of the pod list compares with the built-in one, job by job."""
    a = {j["id"]: j for j in json.loads(built_in.read_text())["jobs"]}
    b = {j["id"]: j for j in json.loads(generic.read_text())["jobs"]}
    both = a.keys() & b.keys()
    return {
        "built-in": len(a), "csv": len(b), "in both": len(both),
        "differ in arrival, model, scale or work": sum(any(a[k][f] != b[k][f] for f in COMPARED) for k in both),
        "censored (built-in)": sum(bool(j.get("censored")) for j in a.values()),
        "censored (csv)": sum(bool(j.get("censored")) for j in b.values()),
    }


def late_short_jobs(records: Path) -> list[str]:
    """A Markdown table of the finished jobs shorter than one round that finish late, per policy.

    Short: under one round (of that run) alone on their fastest type. Late: rho > 1.05. Medians of the late
    ones' JCT, time alone on the fastest type and time at their fair throughput.
    """
    lines = ["| policy | finished jobs under one round | late (rho > 1.05) | median JCT of the late (s) | "
             "median alone on the fastest type (s) | median at the fair throughput (s) |",
             "|:---|---:|---:|---:|---:|---:|"]
    for run in json.loads(records.read_text())["runs"]:
        round_length = run["config"]["round_length"]
        short = [j for j in run["jobs"] if j["finish"] is not None and j["ideal_seconds"] < round_length]
        fair = {j["id"]: j["iterations"] / j["fair_throughput"] for j in short}
        late = [j for j in short if (j["finish"] - j["arrival"]) / fair[j["id"]] > 1.05]
        med = [statistics.median(v) if v else math.nan for v in (
            [j["finish"] - j["arrival"] for j in late], [j["ideal_seconds"] for j in late],
            [fair[j["id"]] for j in late])]
        lines.append(f"| {run['policy']} | {len(short)} | {len(late)} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} |")
    return lines


def table_of(folder: Path, name: str) -> list[str]:
    """The Markdown table of ``folder/name`` without the notes under it."""
    return [ln for ln in (folder / name).read_text().splitlines() if ln.startswith("|")]


def run(data: Path, pods: str, nodes: str, args: argparse.Namespace, work: Path) -> list[str]:
    def options(fractional: str) -> list[str]:
        return ["--catalog", "modern", "--fractional", fractional, "--cluster", args.cluster, "--window", args.window]

    common = options("whole")
    built_in, generic = work / "openb.json", work / "openb_csv.json"
    log("importing with the built-in openb2023 format")
    cmd1, out1 = fairshare("trace", "import", str(data / pods), str(data / nodes), "--format", "openb2023",
                           *common, "-o", str(built_in))
    log("importing the same pod list as a generic CSV")
    cmd2, out2 = fairshare("trace", "import", str(data / pods), "--format", "csv", *CSV_MAPPING, *common,
                           "-o", str(generic))
    check = same_jobs(built_in, generic)
    runs: list[tuple[str, str, Path, list[str]]] = []
    policies = [a for p in args.policy for a in ("--policy", p)]
    settings = () if args.current else RELEASE_02_OPTIONS
    for label, trace in (("built-in import", built_in), ("generic CSV import", generic)):
        log(f"comparing on the {label}")
        folder = work / label.split()[0]
        t0 = time.perf_counter()
        records = "json" if trace == built_in else "none"
        cmd, out = fairshare("compare", "--trace", str(trace), "--catalog", "modern", "--cluster", args.cluster,
                             *policies, *settings, "--until", f"{args.until:g}", "--records", records,
                             "--out", str(folder))
        log(f"  {time.perf_counter() - t0:.0f} s")
        runs.append((label, cmd, folder, []))
    short = [p for p in SHORT_ROUND_POLICIES if p in args.policy]
    if args.short_rounds and short:
        log(f"comparing on the built-in import with rounds of {args.short_rounds:g} s")
        folder = work / "short"
        cmd, out = fairshare("compare", "--trace", str(built_in), "--catalog", "modern", "--cluster", args.cluster,
                             *(a for p in short for a in ("--policy", p)), *settings, "--until", f"{args.until:g}",
                             "--round-length", f"{args.short_rounds:g}", "--records", "none", "--no-plots",
                             "--out", str(folder))
        runs.append((f"built-in import, rounds of {args.short_rounds:g} s", cmd, folder, []))
    if args.shares:
        log("importing with part-of-a-GPU requests as shares of one GPU")
        shares = work / "openb_shares.json"
        cmd3, out3 = fairshare("trace", "import", str(data / pods), str(data / nodes), "--format", "openb2023",
                               *options("share"), "-o", str(shares))
        log("comparing on it")
        folder = work / "shares"
        cmd, out = fairshare("compare", "--trace", str(shares), "--catalog", "modern", "--cluster", args.cluster,
                             *policies, *settings, "--until", f"{args.until:g}", "--records", "none", "--no-plots",
                             "--out", str(folder))
        runs.append(("import with part-of-a-GPU requests as shares", cmd, folder,
                     ["```", f"$ {cmd3}", out3, "```", ""]))
    for fig in ("jct_cdf", "rho_cdf"):
        shutil.copyfile(runs[0][2] / f"{fig}.png", args.out / f"{args.name}_{fig}.png")

    def shown(text: str) -> str:  # paths as a reader would type them
        return text.replace(str(data) + "/", "").replace(str(work) + "/", "")

    derived = next(ln for ln in (runs[0][2] / "results.md").read_text().splitlines() if ln.startswith("Derived"))
    title = "A real trace, imported and replayed: Alibaba GPU 2023 (openb)"
    lines = [
        f"# {title}{' — SYNTHETIC SAMPLE' if args.sample else ''}",
        "",
        "Made by `python examples/real_trace.py" + (" --sample" if args.sample else " --data DIR") +
        f" --window {args.window} --cluster {args.cluster} --until {args.until:g} --short-rounds {args.short_rounds:g}"
        f"{'' if args.shares else ' --no-shares'}{' --current' if args.current else ''}`"
        f" ({time.strftime('%Y-%m-%d')}). Every step below is the command line alone.",
        "",
        ("**The input is the synthetic sample of `tests/data/traces/openb2023/`: these numbers describe no real "
         "cluster.**" if args.sample else
         "Input: Alibaba's `cluster-trace-gpu-v2023` (github.com/alibaba/clusterdata; Weng et al., ATC'23), "
         "downloaded, not shipped with fairshare (no licence for redistribution is stated). Files used:"),
        "",
        "| file | bytes | sha256 |",
        "|:---|---:|:---|",
        *(f"| `{f}` | {(data / f).stat().st_size:,} | `{sha256(data / f)}` |" for f in (pods, nodes)),
        "",
        f"Cluster: `{args.cluster}`. {derived}",
        "",
        "## 1. Import with the built-in format",
        "",
        "```", f"$ {shown(cmd1)}", shown(out1), "```",
        "",
        "## 2. The same pod list as a generic CSV",
        "",
        "```", f"$ {shown(cmd2)}", shown(out2), "```",
        "",
        "Job by job against the built-in import:",
        "",
        "| jobs | count |", "|:---|---:|",
        *(f"| {k} | {v:,} |" for k, v in check.items()),
        "",
        "The CSV mapping reads `num_gpu` (whole GPUs) and marks nothing censored; the built-in format also reads "
        "`gpu_milli` (kept in `gpus`; scheduled on one whole GPU here, `--fractional whole`) and marks the pods "
        "deleted at the file's last timestamp as still running.",
    ]
    for i, (label, cmd, folder, intro) in enumerate(runs):
        lines += ["", f"## {3 + i}. Compare on the {label}", "", *(shown(ln) for ln in intro),
                  "```", f"$ {shown(cmd)}", "```", "", *table_of(folder, "results.md")]
        if i != 1:
            lines += ["", "By duration class (the time a job needs alone on its fastest type):", "",
                      *table_of(folder, "results_by_class.md")]
        if i == 0:
            lines += ["", f"![JCT CDF]({args.name}_jct_cdf.png) ![rho CDF]({args.name}_rho_cdf.png)", "",
                      f"Jobs that need less than one round ({ROUND:g} s) and finish late: how long they took, against "
                      "their time alone on the fastest type and at their fair throughput (rho = JCT over the "
                      "latter):", "", *late_short_jobs(folder / "records.json")]
    lines += ["", "JCT, rho and the unfair fraction are over finished jobs; `unfinished` jobs (not done at the "
              f"horizon, {args.until:g} h) and `censored` jobs (still running when the source trace ended) are left "
              "out. Solver times are wall times of the machine that made this page, with one process per CPU "
              f"({os.cpu_count()}) running the policies side by side."]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path, help=f"folder holding {PODS} and {NODES}")
    src.add_argument("--sample", action="store_true", help="the synthetic sample of tests/data/traces/openb2023")
    ap.add_argument("--window", default=None, help="hours of the source to import (default 3000:3168; sample: 0:)")
    ap.add_argument("--cluster", default="T4=8,A10=8,A100-80GB=4,H100=4")
    ap.add_argument("--until", type=float, default=None, help="horizon in simulated hours (default 240; sample: 24)")
    ap.add_argument("--policy", action="append", default=None, help="repeat; default: every policy")
    ap.add_argument("--short-rounds", type=float, default=120.0,
                    help="round length (s) of the extra comparison of fairshare, gavel and ftf; 0 skips it")
    ap.add_argument("--no-shares", dest="shares", action="store_false",
                    help="skip the replay with part-of-a-GPU requests held as shares of one GPU")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results")
    ap.add_argument("--current", action="store_true",
                    help="compare with today's defaults instead of release 0.2's settings (the published report's)")
    ap.add_argument("--name", default=None, help="report name (default real_openb2023, sample: real_trace_sample)")
    args = ap.parse_args(argv)
    if args.sample:
        data, pods, nodes = SAMPLE, SAMPLE_PODS, SAMPLE_NODES
    else:
        data, pods, nodes = args.data.expanduser().resolve(), PODS, NODES
        for f in (pods, nodes):
            if not (data / f).is_file():
                ap.error(f"--data {args.data}: no {f} there (download cluster-trace-gpu-v2023/csv/ first)")
    args.window = args.window or ("0:" if args.sample else "3000:3168")
    args.until = args.until if args.until is not None else (24.0 if args.sample else 240.0)
    args.name = args.name or ("real_trace_sample" if args.sample else "real_openb2023")
    if args.policy is None:
        from fairshare.policies import policy_names
        args.policy = list(policy_names())
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        lines = run(data, pods, nodes, args, Path(tmp))
    write_report(args.out, f"{args.name}.md", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
