#!/usr/bin/env python3
"""Step time of samples/torch/lora_finetune.py's training loop, in one run,
interleaved round by round (this machine is shared and noisy; each round
compares modes measured seconds apart):

  none      no tool: annotate() sees no tracer and registers nothing
  hooks     the per-module hooks with no tool attached (NVTX calls are no-ops):
            the Python cost of per-module ranges alone
  tracer    libtracer.so attached (NVTX_INJECTION64_PATH) with per-module ranges
  profiler  torch.profiler (CPU activities, plus CUDA on a GPU) with the same
            ranges through record_function

Prints per mode the median over rounds of the mean steady step time, the
median per-round ratio to `none` (overhead %), and the trace size per step:
tracer's stream vs torch.profiler's Chrome JSON.

    python3 bench/torch/bench_step.py --lib build/injection/libtracer.so
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.normpath(os.path.join(HERE, "..", "..", "samples", "torch", "lora_finetune.py"))
MODES = ("none", "hooks", "tracer", "profiler")


def clean_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACER_") and k not in
           ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "LD_PRELOAD")}
    env["PYTHONWARNINGS"] = "ignore"
    return env


def run_mode(mode, args, out_dir, rnd):
    stats = os.path.join(out_dir, f"stats-{mode}-{rnd}.json")
    cmd = [sys.executable, SAMPLE, "--steps", str(args.steps + args.warmup),
           "--stats-json", stats, *args.sample_args]
    env = clean_env()
    artifact = None
    if mode == "hooks":
        cmd.append("--force-annotate")
    elif mode == "tracer":
        artifact = os.path.join(out_dir, f"tracer-{rnd}.trace")
        if os.path.exists(artifact):  # an earlier invocation's: never overwritten silently
            os.remove(artifact)
        env.update(NVTX_INJECTION64_PATH=args.lib, CUDA_INJECTION64_PATH=args.lib,
                   TRACER_OUTPUT=artifact)
    elif mode == "profiler":
        artifact = os.path.join(out_dir, f"profiler-{rnd}.chrome.json")
        cmd += ["--profiler", "torch", "--profiler-out", artifact]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"bench: mode {mode} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}")
    with open(stats) as f:
        data = json.load(f)
    steps = data["step_s"]
    size = os.path.getsize(artifact) if artifact and os.path.exists(artifact) else 0
    if mode == "tracer" and not size:
        sys.exit(f"bench: the tracer wrote no file at {artifact}")
    wall = statistics.mean(steps[args.warmup:])
    cpu = statistics.mean(data["step_cpu_s"][args.warmup:])
    return wall, cpu, size / len(steps), data["annotated_modules"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lib", required=True, help="libtracer.so")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=10, help="measured steps per run")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out-dir", default="/tmp/tracer-bench-torch")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("sample_args", nargs="*", help="after --: arguments for the sample "
                   "(default: --layers 4 --adapters 2 --hidden 512 --seq 256 --threads 1)")
    args = p.parse_args()
    args.sample_args = args.sample_args or ["--layers", "4", "--adapters", "2", "--hidden",
                                            "512", "--seq", "256", "--threads", "1"]
    modes = [m for m in args.modes.split(",") if m]
    if "none" not in modes or any(m not in MODES for m in modes):
        sys.exit(f"bench: --modes must include none and be among {','.join(MODES)}")
    os.makedirs(args.out_dir, exist_ok=True)
    print(f"sample: {' '.join(args.sample_args)}; {args.rounds} rounds x {args.steps} steps "
          f"(+{args.warmup} warm-up) per mode", flush=True)

    # clock -> mode -> per-round mean step time; and per-round ratios to none.
    clocks = ("wall", "cpu")
    step = {c: {m: [] for m in modes} for c in clocks}
    ratio = {c: {m: [] for m in modes} for c in clocks}
    size = {m: [] for m in modes}
    modules = 0
    t0 = time.time()
    for rnd in range(args.rounds):
        # Rotate the order so no mode always runs first (cache, frequency).
        order = modes[rnd % len(modes):] + modes[:rnd % len(modes)]
        this = {c: {} for c in clocks}
        for m in order:
            wall, cpu, per_step, n = run_mode(m, args, args.out_dir, rnd)
            this["wall"][m], this["cpu"][m] = wall, cpu
            size[m].append(per_step)
            modules = max(modules, n)
        for c in clocks:
            for m in modes:
                step[c][m].append(this[c][m])
                ratio[c][m].append(this[c][m] / this[c]["none"])
        print(f"round {rnd}: " + ", ".join(
            f"{m} {this['wall'][m] * 1e3:.1f} ms (cpu {this['cpu'][m] * 1e3:.1f})" for m in modes),
            flush=True)

    print(f"\nper-module ranges on {modules} modules; {time.time() - t0:.0f} s in all")
    print("wall: step wall-clock time; cpu: CPU time of the whole process (all its threads, the\n"
          "tracer's writer included), less disturbed by other load on a shared machine")
    print(f"{'mode':<9} {'wall median':>12} {'wall vs none':>20} {'cpu median':>11} "
          f"{'cpu vs none':>20} {'trace/step':>11}")
    for m in modes:
        cols = []
        for c in clocks:
            med = statistics.median(step[c][m]) * 1e3
            r = statistics.median(ratio[c][m])
            cols.append(f"{med:>9.2f} ms {r:>8.4f} ({(r - 1) * 100:+6.2f} %)")
        s = statistics.median(size[m])
        size_text = f"{s / 1024:.1f} KiB" if s else "-"
        print(f"{m:<9} {cols[0]:>33} {cols[1]:>32} {size_text:>11}")
    if "tracer" in modes and "profiler" in modes:
        ts, ps = statistics.median(size["tracer"]), statistics.median(size["profiler"])
        print(f"trace size per step: tracer {ts / 1024:.1f} KiB vs torch.profiler Chrome JSON "
              f"{ps / 1024:.1f} KiB ({ps / ts:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
