#!/usr/bin/env python3
"""CPU time per training step of samples/torch/lora_finetune.py's model with
tracer.torch's per-module ranges, resolved to well under 1 %.

A shared machine drifts by several % from one second to the next, so two
numbers are only compared when they were measured seconds apart in the same
process. Each worker process builds the model once and, round after round,
runs a block of steps under each of these configurations (order rotated per
round, hooks registered and removed in between, one unmeasured step after
each switch):

  none   no per-module hooks (the step / forward / backward / optimizer
         ranges only)
  noop   tracer.torch's per-module hooks, forward and backward, pushing into
         a do-nothing backend: the Python hooks' own cost
  nvtx   the same hooks calling NVTX (torch._C._nvtx): with no tool attached
         each call returns at once; with libtracer.so attached it records

The parent runs the worker with no tool and with libtracer.so attached
(NVTX_INJECTION64_PATH), alternately, --procs times each. Estimates are means
of log ratios of block means with a 95 % Student t interval:

  in-process (pairs = rounds x procs; the process's own drift cancels):
    hooks, Python only          no tool:  noop / none
    hooks + NVTX, no tool       no tool:  nvtx / none
    tracer's share per range    tracer:   nvtx / noop  (libtracer.so recording
                                          the per-module pushes and pops)
    per-module ranges, traced   tracer:   nvtx / none
  across processes (pairs = procs):
    tracer attached, no hooks   tracer none / no-tool none (its writer
                                thread, the step ranges, loading)
    all of it                   tracer nvtx / no-tool none

CPU time is the whole process's (time.process_time: all threads, the
tracer's writer included), far less disturbed by other load than wall time,
which is printed too.

Instructions retired are nearly deterministic: work done, not time, but
hardly moved by other load, so their intervals are far tighter than CPU
time's; a change's cost in instructions says where the CPU time goes when
time cannot tell it from noise. Each worker opens hardware counters on
itself with perf_event_open before it loads torch (perf_counters.py:
inherited by every thread it starts, the tracer's writer and torch's pool
included) and reads them around each block, as the clocks: instructions
(user + kernel), instructions:u (user space only) and cycles, each given
with the same pairs and intervals as CPU time, in its own section. Where the
kernel gives none (no PMU, as in most VMs; kernel.perf_event_paranoid) one
line says why and the times are printed alone. --callgrind counts
instructions instead under valgrind's callgrind (user space, all threads;
50-100x slower, so few rounds; its times are valgrind's): the small model
below, or --steps 1 --rounds 2 on the default one. Instruction counts there
include threads that wake on a timer (the tracer's writer), which run more
often per step the slower the step, so callgrind slightly overstates the
tracer's share.

Each switch is followed by one unmeasured step and a
garbage collection (annotate() makes thousands of objects; the full
collections inside measured steps are counted and printed), and glibc is
told to keep freed memory (MALLOC_* variables): its default unmaps large
blocks and faults them in again, 10-20 k page faults per step that vary from
step to step, where a GPU run's caching allocator keeps device memory. With --profiler a third worker runs under
torch.profiler (CPU activities) with the same ranges through record_function
(configs none and rf), compared across processes with the no-tool none.

The hooks are tracer._torch_ranges's (C++) when --ext-dir names a build's
python/ directory holding it (default: the checkout's build/python), the
Python ones otherwise (--ext-dir ''); the summary says which ran.

With --baseline-python DIR (a checkout's python/ directory, e.g. a worktree
of the commit before a change to tracer.torch), the worker also runs that
package's hooks (configs noop0 and nvtx0) in the same rounds, so a change's
before and after are compared block by block in one process.

    python3 bench/torch/bench_step.py --lib build/injection/libtracer.so
    python3 bench/torch/bench_step.py --lib ... -- --layers 12 --hidden 256 --seq 128
    python3 bench/torch/bench_step.py --lib ... --callgrind --procs 1 --rounds 2 \
        --steps 4 -- --layers 4 --adapters 2 --hidden 32 --heads 2 --seq 8 --threads 1
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SAMPLE = os.path.join(ROOT, "samples", "torch", "lora_finetune.py")
DEFAULT_SAMPLE_ARGS = ["--layers", "4", "--adapters", "2", "--hidden", "512", "--seq", "256",
                       "--threads", "1"]
CALLGRIND_ENV = "TRACER_BENCH_CALLGRIND_PREFIX"  # set for a worker run under callgrind
CONFIGS = {"none": ("none", "noop", "nvtx"), "tracer": ("none", "noop", "nvtx"),
           "profiler": ("none", "rf")}


# --- worker: one process, configurations interleaved ----------------------


def load_baseline(python_dir):
    """tracer.torch of another checkout, imported as tracer_baseline.torch
    beside this checkout's tracer.torch."""
    init = os.path.join(python_dir, "tracer", "__init__.py")
    spec = importlib.util.spec_from_file_location(
        "tracer_baseline", init, submodule_search_locations=[os.path.dirname(init)])
    package = importlib.util.module_from_spec(spec)
    sys.modules["tracer_baseline"] = package
    spec.loader.exec_module(package)
    return importlib.import_module("tracer_baseline.torch")


def open_counters(args):
    """The process's hardware counters, opened before torch or the tracer
    start a thread (threads that already run are not counted): (Counters or
    None, a one-line note or None)."""
    sys.path.insert(0, HERE)
    from perf_counters import Callgrind, Counters

    if os.environ.get(CALLGRIND_ENV):
        return Callgrind(os.environ[CALLGRIND_ENV]), None
    if not args.counters:
        return None, "hardware counters off (--no-counters)"
    return Counters.open()


def worker(args) -> int:
    counters, counters_note = open_counters(args)
    spec = importlib.util.spec_from_file_location("lora_finetune", SAMPLE)
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)  # puts the checkout's python/ on sys.path
    import torch
    import tracer.torch as tt
    from tracer import _nvtx

    cfg = sample.parse_args(args.sample_args)
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    model = sample.TinyLlama(cfg)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    data = sample.SyntheticTokens(cfg.batch * 4, cfg.seq, cfg.vocab, cfg.seed)
    batches = list(torch.utils.data.DataLoader(data, batch_size=cfg.batch, shuffle=False))

    prof = None
    if args.worker == "profiler":
        tt.set_enabled(True)
        tt.set_backend(tt.RecordFunctionBackend())
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        prof.__enter__()
    backends = {"noop": _nvtx.NullBackend(), "nvtx": _nvtx.select_backend("torch"),
                "rf": tt.RecordFunctionBackend()}
    annotators = dict.fromkeys(backends, tt.annotate)
    configs = CONFIGS[args.worker]
    if args.baseline_python and args.worker != "profiler":
        base_tt = load_baseline(args.baseline_python)
        annotators.update(noop0=base_tt.annotate, nvtx0=base_tt.annotate)
        backends.update(noop0=backends["noop"], nvtx0=backends["nvtx"])
        configs = configs + ("noop0", "nvtx0")

    native = {}
    counter = [0]

    def step() -> None:
        tokens, targets = batches[counter[0] % len(batches)]
        sample.train_step(model, opt, tokens, targets, counter[0])
        counter[0] += 1

    counter_names = counters.names if counters else []
    out = {c: {"cpu": [], "wall": [], "full_gc": 0, **{n: [] for n in counter_names}}
           for c in configs}
    modules = 0
    for _ in range(args.warmup):
        step()
    for rnd in range(args.rounds):
        shift = (rnd + args.proc) % len(configs)
        for c in configs[shift:] + configs[:shift]:
            handle = None
            if c != "none":
                handle = annotators[c](model, force=True, backend=backends[c],
                                       warn_shared_names=False, distinct_names=False)
                modules = len(handle.ranges)
                native[c] = getattr(handle, "native", False)
            step()  # after a switch: caches, allocator
            # annotate() and remove() make and drop thousands of objects: a
            # full collection they provoke belongs to the switch, not to the
            # steps (a training run annotates once).
            gc.collect()
            full = gc.get_stats()[2]["collections"]
            k0 = counters.read() if counters else {}
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(args.steps):
                step()
            c1, t1 = time.process_time(), time.perf_counter()
            k1 = counters.read() if counters else {}
            out[c]["cpu"].append((c1 - c0) / args.steps)
            out[c]["wall"].append((t1 - t0) / args.steps)
            for n in counter_names:
                out[c][n].append((k1[n] - k0[n]) / args.steps)
            out[c]["full_gc"] += gc.get_stats()[2]["collections"] - full
            if handle is not None:
                handle.remove()
    if prof is not None:
        prof.__exit__(None, None, None)
    with open(args.json, "w") as f:
        json.dump({"blocks": out, "modules": modules, "native": native,
                   "counters": counter_names, "counters_note": counters_note,
                   "multiplexed": bool(counters and counters.multiplexed)}, f)
    return 0


# --- parent: processes alternated, statistics -----------------------------

CLOCK_TITLES = {
    "cpu": "CPU time per step (all threads)",
    "instructions": "instructions retired per step, user + kernel, all threads "
                    "(work done, not time)",
    "instructions:u": "instructions retired per step, user space only, all threads "
                      "(work done, not time)",
    "cycles": "core cycles per step, user + kernel, all threads (time at the core's clock)",
    "wall": "wall time per step",
    "callgrind:Ir": "instructions per step counted by callgrind, user space, all threads "
                    "(work done, not time)",
}

# Two-sided 95 % Student t quantiles by degrees of freedom (1..30); 1.96 past.
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def paired_ci(num, den):
    """Mean ratio num/den over pairs and its 95 % interval, as percentages of
    overhead: (estimate, low, high, pairs), None with < 2 pairs."""
    logs = [math.log(a / b) for a, b in zip(num, den)]
    if len(logs) < 2:
        return None
    mean = statistics.mean(logs)
    df = len(logs) - 1
    t = T95[df - 1] if df <= len(T95) else 1.96
    half = t * statistics.stdev(logs) / math.sqrt(len(logs))
    pct = lambda x: (math.exp(x) - 1) * 100  # noqa: E731
    return pct(mean), pct(mean - half), pct(mean + half), len(logs)


def ci_text(ci) -> str:
    if ci is None:
        return "(needs 2 pairs)"
    est, lo, hi, n = ci
    return f"{est:+6.2f} %  [{lo:+6.2f}, {hi:+6.2f}]  (+/- {(hi - lo) / 2:.2f}, {n} pairs)"


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACER_") and k not in
           ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "LD_PRELOAD")}
    env["PYTHONWARNINGS"] = "ignore"
    # glibc hands large blocks back to the kernel and maps them afresh (10-20 k
    # page faults per step of the default model, varying from step to step):
    # keep them, as a GPU run's caching allocator keeps device memory.
    env.update(MALLOC_MMAP_THRESHOLD_="33554432", MALLOC_TRIM_THRESHOLD_="17179869184",
               MALLOC_TOP_PAD_="268435456")
    return env


def run_worker(tool, proc, args):
    stats = os.path.join(args.out_dir, f"blocks-{tool}-{proc}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", tool, "--proc", str(proc),
           "--rounds", str(args.rounds), "--steps", str(args.steps), "--warmup",
           str(args.warmup), "--json", stats]
    if not args.counters:
        cmd.append("--no-counters")
    prefix = None
    if args.callgrind:
        prefix = os.path.join(args.out_dir, f"callgrind-{tool}-{proc}")
        sys.path.insert(0, HERE)
        from perf_counters import Callgrind

        cmd = Callgrind.valgrind_args(prefix) + cmd
    if args.baseline_python:
        cmd += ["--baseline-python", os.path.abspath(args.baseline_python)]
    cmd += ["--", *args.sample_args]
    env = clean_env()
    if prefix:
        env[CALLGRIND_ENV] = prefix
    if args.ext_dir:
        env["TRACER_PYTHON_EXT_DIR"] = os.path.abspath(args.ext_dir)
    artifact = None
    if tool == "tracer":
        artifact = os.path.join(args.out_dir, f"tracer-{proc}.trace")
        if os.path.exists(artifact):  # an earlier invocation's: never overwritten silently
            os.remove(artifact)
        env.update(NVTX_INJECTION64_PATH=args.lib, CUDA_INJECTION64_PATH=args.lib,
                   TRACER_OUTPUT=artifact)
    proc_ = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=3600)
    if proc_.returncode != 0:
        sys.exit(f"bench: worker {tool} failed (exit {proc_.returncode}):\n{proc_.stdout[-3000:]}")
    if artifact is not None:
        if not os.path.getsize(artifact):
            sys.exit(f"bench: the tracer wrote no file at {artifact}")
        os.remove(artifact)
    if prefix and os.path.exists(prefix):
        os.remove(prefix)  # callgrind's dump at exit
    with open(stats) as f:
        return json.load(f)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", help="libtracer.so")
    p.add_argument("--procs", type=int, default=4, help="worker processes per tool")
    p.add_argument("--rounds", type=int, default=8, help="rounds per worker process")
    p.add_argument("--steps", type=int, default=3, help="measured steps per block")
    p.add_argument("--warmup", type=int, default=3, help="steps before the first round")
    p.add_argument("--profiler", action="store_true", help="also torch.profiler")
    p.add_argument("--no-counters", dest="counters", action="store_false",
                   help="leave out the hardware counters (instructions, cycles)")
    p.add_argument("--callgrind", action="store_true",
                   help="run the workers under valgrind's callgrind and count instructions "
                   "there (where the kernel gives no hardware counter; 50-100x slower; "
                   "times are then valgrind's)")
    p.add_argument("--baseline-python", default="",
                   help="another checkout's python/ dir: its tracer.torch hooks as noop0 / nvtx0")
    default_ext = os.environ.get("TRACER_PYTHON_EXT_DIR") or (
        os.path.join(ROOT, "build", "python") if os.path.isdir(os.path.join(ROOT, "build", "python"))
        else "")
    p.add_argument("--ext-dir", default=default_ext,
                   help="a build's python/ dir with tracer/_torch_ranges*.so (the C++ hooks; "
                   f"default {default_ext or 'none'}); '' for the Python hooks")
    p.add_argument("--out-dir", default="/tmp/tracer-bench-torch")
    p.add_argument("--worker", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    p.add_argument("--proc", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--json", help=argparse.SUPPRESS)
    p.add_argument("sample_args", nargs="*", help="after --: arguments for the sample "
                   f"(default: {' '.join(DEFAULT_SAMPLE_ARGS)})")
    args = p.parse_args()
    args.sample_args = args.sample_args or DEFAULT_SAMPLE_ARGS
    if args.worker:
        return worker(args)
    if not args.lib:
        p.error("--lib is required")
    os.makedirs(args.out_dir, exist_ok=True)
    tools = ["none", "tracer"] + (["profiler"] if args.profiler else [])
    if args.baseline_python:
        for t in ("none", "tracer"):
            CONFIGS[t] = CONFIGS[t] + ("noop0", "nvtx0")
    print(f"sample: {' '.join(args.sample_args)}; {args.procs} processes per tool x "
          f"{args.rounds} rounds x {args.steps} steps per configuration (+1 after each "
          "switch)", flush=True)
    t_start = time.time()
    # tool -> config -> clock (CPU, wall, counter) -> per-process list of
    # per-round block means
    blocks = {t: {c: {} for c in CONFIGS[t]} for t in tools}
    counters = None  # the counters every worker read
    counter_notes = set()
    multiplexed = False
    full_gc = {t: dict.fromkeys(CONFIGS[t], 0) for t in tools}
    modules = 0
    native: dict = {}
    for proc in range(args.procs):
        order = tools[proc % len(tools):] + tools[:proc % len(tools)]
        for tool in order:
            data = run_worker(tool, proc, args)
            modules = max(modules, data["modules"])
            native.update(data.get("native", {}))
            got = data.get("counters", [])
            counters = got if counters is None else [n for n in counters if n in got]
            if data.get("counters_note"):
                counter_notes.add(data["counters_note"])
            multiplexed |= data.get("multiplexed", False)
            for c, clocks in data["blocks"].items():
                for clock in ("cpu", "wall", *got):
                    blocks[tool][c].setdefault(clock, []).append(clocks[clock])
                full_gc[tool][c] += clocks["full_gc"]
            cpu = data["blocks"]
            print(f"process {proc} {tool:<8} " + ", ".join(
                f"{c} {statistics.median(cpu[c]['cpu']) * 1e3:.1f} ms" for c in CONFIGS[tool])
                + " (median CPU per step)", flush=True)

    def flat(tool, c, clock):
        return [v for per_proc in blocks[tool][c][clock] for v in per_proc]

    def proc_means(tool, c, clock):
        return [statistics.mean(v) for v in blocks[tool][c][clock]]

    print(f"\nper-module ranges on {modules} modules; {time.time() - t_start:.0f} s in all")
    print("hooks: " + ", ".join(
        f"{c} {'C++ (tracer._torch_ranges)' if n else 'Python'}" for c, n in sorted(native.items())))
    base = statistics.median(flat("none", "none", "cpu"))
    print(f"step CPU time, no tool, no hooks: median {base * 1e3:.1f} ms "
          f"(wall {statistics.median(flat('none', 'none', 'wall')) * 1e3:.1f} ms)" + "".join(
              f"; {statistics.median(flat('none', 'none', n)) / 1e6:.1f} M {n}"
              for n in counters))
    for note in sorted(counter_notes):
        print(f"{note}: CPU and wall time only")
    if multiplexed:
        print("counters: the kernel multiplexed some (more events than the PMU holds): "
              "counts scaled by enabled/running time, less exact")
    inproc = [("hooks, Python only (no-op backend)", "none", "noop", "none"),
              ("hooks + NVTX calls, no tool", "none", "nvtx", "none"),
              ("tracer's share of the ranges", "tracer", "nvtx", "noop"),
              ("per-module ranges, traced", "tracer", "nvtx", "none")]
    if args.profiler:
        inproc.append(("record_function ranges, profiled", "profiler", "rf", "none"))
    if args.baseline_python:
        inproc += [("baseline hooks, Python only", "none", "noop0", "none"),
                   ("baseline tracer's share", "tracer", "nvtx0", "noop0"),
                   ("baseline per-module ranges, traced", "tracer", "nvtx0", "none"),
                   ("hooks vs baseline hooks", "none", "noop", "noop0"),
                   ("traced vs baseline traced", "tracer", "nvtx", "nvtx0")]
    across = [("tracer attached, no hooks", ("tracer", "none"), ("none", "none")),
              ("tracer + per-module ranges", ("tracer", "nvtx"), ("none", "none"))]
    if args.profiler:
        across += [("torch.profiler, no hooks", ("profiler", "none"), ("none", "none")),
                   ("torch.profiler + ranges", ("profiler", "rf"), ("none", "none"))]
    print("full garbage collections in measured steps: " + "; ".join(
        f"{t} " + ", ".join(f"{c} {n}" for c, n in full_gc[t].items()) for t in tools))
    for clock in ("cpu", *counters, "wall"):
        valgrinds = " (under valgrind: valgrind's, not the program's)" if (
            args.callgrind and clock in ("cpu", "wall")) else ""
        print(f"\n{CLOCK_TITLES.get(clock, clock + ' per step')}{valgrinds}, mean of log "
              "ratios with a 95 % confidence interval")
        print(" in one process (block vs block of the same round):")
        clock_base = statistics.median(flat("none", "none", clock))
        for label, tool, num, den in inproc:
            ci = paired_ci(flat(tool, num, clock), flat(tool, den, clock))
            extra = ""
            if clock != "wall" and not valgrinds and ci is not None and modules:
                per_call = ci[0] / 100 * clock_base / modules
                extra = (f"  ~{per_call * 1e6:.1f} us per module call" if clock == "cpu"
                         else f"  ~{per_call:.0f} per module call")
            print(f"  {label:<34} {tool}: {num}/{den}  {ci_text(ci)}{extra}")
        print(" across processes (process means, paired by process round):")
        for label, (nt, nc), (dt, dc) in across:
            ci = paired_ci(proc_means(nt, nc, clock), proc_means(dt, dc, clock))
            print(f"  {label:<34} {nt} {nc} / {dt} {dc}  {ci_text(ci)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
