#!/usr/bin/env python3
"""Checks a Chrome export of a `tracer run --pm-metrics basic` trace against
the expectations written in scripts/gpu_pm_check.sh. Prints each difference;
exit 1 if any."""
import argparse
import json
import sys

BASIC = [
    "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chrome", required=True)
    ap.add_argument("--interval-ns", type=int, required=True)
    ap.add_argument("--log", default="")
    a = ap.parse_args()
    events = json.load(open(a.chrome))["traceEvents"]
    samples = [e for e in events if e.get("ph") == "C" and e.get("name") in BASIC]
    others = [e for e in events if e.get("ph") == "X"]
    kernels = [e for e in others if e.get("cat") == "kernel"]
    bad = []
    print(f"  facts: {len(samples)} metric values, {len(kernels)} kernels, "
          f"{len(others)} timed events")
    for m in BASIC:
        vals = [s["args"]["value"] for s in samples if s["name"] == m]
        if not vals:
            bad.append(f"no samples of {m}")
            continue
        print(f"  facts: {m}: {len(vals)} samples, min {min(vals):.2f}, "
              f"max {max(vals):.2f}, mean {sum(vals) / len(vals):.2f}")
        if min(vals) < 0 or max(vals) > 100.5:
            bad.append(f"{m} outside [0, 100.5]: {min(vals)}..{max(vals)}")
    sm = [s["args"]["value"] for s in samples if s["name"] == BASIC[0]]
    if sm and max(sm) <= 1.0:
        bad.append("SM active never above 1%: kernels ran but no sample saw them")
    if others:
        lo = min(e["ts"] for e in others) - 50e3  # us
        hi = max(e["ts"] + e.get("dur", 0) for e in others) + 50e3
        outside = [s for s in samples if not lo <= s["ts"] <= hi]
        if outside:
            bad.append(f"{len(outside)} samples outside the run's records "
                       f"(first at {outside[0]['ts']} us, run {lo}..{hi} us): "
                       "the GPU-to-trace clock mapping is off")
    if kernels and sm:
        spans = [(k["ts"], k["ts"] + k.get("dur", 0)) for k in kernels]
        starts = sorted(s["ts"] for s in samples if s["name"] == BASIC[0])
        step = a.interval_ns / 1e3 * 10
        if not any(lo - step <= t <= hi for t in starts for lo, hi in spans):
            bad.append("no sample overlaps a kernel")
    if a.log:
        text = open(a.log, errors="replace").read()
        if "pm_hw_buffer_overflow" in text:
            bad.append("hardware buffer overflowed (see log)")
    for b in bad:
        print(f"  DIFFERS {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
