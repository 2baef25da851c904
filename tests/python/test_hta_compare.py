"""`tracer report --table comm` against Holistic Trace Analysis (HTA) on the
real ResNet PyTorch profiler trace kept beside the project (shared data).

HTA's temporal breakdown covers the profiler steps but the last one and, by
default, rounds nanosecond timestamps to microseconds. Like with like: HTA
runs with HTA_DISABLE_NS_ROUNDING=1 and the tracer with --steps 0-(N-2).

The ResNet trace is one rank with no collective kernel, so HTA's
communication/computation overlap is undefined on it (0 / 0). A two-rank job
is built from it (each rank's file with its own rank, and some kernels turned
into NCCL all-reduce kernels on a second stream, starting halfway through the
kernel before them, so they overlap computation): per rank, the temporal
breakdown and HTA's get_comm_comp_overlap (a percentage rounded to 0.01) must
match the tracer's comm table over the same steps.
Exits 77 (skipped) when HTA or the trace is absent.
"""
import gzip
import json
import os
import subprocess
import sys

TRACE = os.path.join(os.environ.get("TRACER_SHARED_DIR", ""), "data", "kineto",
                     "resnet_ddp_rank0.pt.trace.json.gz")


def skip(why):
    print("skipped: " + why)
    sys.exit(77)


def hta_breakdown(trace):
    work = os.path.join(os.environ.get("TRACER_TEST_DIR", "/tmp"), "hta_in")
    os.makedirs(work, exist_ok=True)
    link = os.path.join(work, os.path.basename(trace))
    if not os.path.exists(link):
        os.symlink(os.path.abspath(trace), link)
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    from hta.trace_analysis import TraceAnalysis  # noqa: E402
    analysis = TraceAnalysis(trace_dir=work)
    row = analysis.get_temporal_breakdown(visualize=False).iloc[0]
    steps = sorted(int(i) for i in analysis.t.get_trace(0)["iteration"].unique() if i >= 0)
    return row, steps


NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"


def write_two_ranks(trace, work):
    """rank-0 and rank-1 Kineto files made from the one-rank trace: every 9th
    kernel (a different one per rank) becomes an NCCL all-reduce kernel on
    stream 20 that starts halfway through the kernel before it."""
    os.makedirs(work, exist_ok=True)
    with gzip.open(trace, "rt") as f:
        base = f.read()
    paths = []
    for rank in (0, 1):
        d = json.loads(base)
        d["distributedInfo"]["rank"] = rank
        d["distributedInfo"]["world_size"] = 2
        kernels = sorted((e for e in d["traceEvents"] if e.get("cat") == "kernel"),
                         key=lambda e: e["ts"])
        for i in range(1, len(kernels)):
            if i % 9 == 4 + rank:
                e, before = kernels[i], kernels[i - 1]
                e["name"] = NCCL
                e["args"]["stream"] = 20
                e["ts"] = before["ts"] + before["dur"] // 2
        path = os.path.join(work, "rank-%d.pt.trace.json.gz" % rank)
        with gzip.open(path, "wt") as f:
            json.dump(d, f)
        paths.append(path)
    return paths


def check_two_ranks(trace, check):
    work = os.path.join(os.environ.get("TRACER_TEST_DIR", "/tmp"), "hta_two_ranks")
    paths = write_two_ranks(trace, work)
    from hta.trace_analysis import TraceAnalysis  # noqa: E402
    analysis = TraceAnalysis(trace_dir=work)
    breakdown = analysis.get_temporal_breakdown(visualize=False).set_index("rank")
    overlap = analysis.get_comm_comp_overlap(visualize=False).set_index("rank")
    steps = sorted(int(i) for i in analysis.t.get_trace(0)["iteration"].unique() if i >= 0)
    out = subprocess.run(
        [os.environ["TRACER_CLI"], "report"] + paths +
        ["--table", "comm", "--steps", "%d-%d" % (steps[0], steps[-1]), "--format", "json"],
        check=True, capture_output=True, text=True).stdout
    rows = [r for r in json.loads(out)["comm"] if r["kind"] == "process"]
    if len(rows) != 2:
        print("expected one process row per rank, got %d" % len(rows))
        return False
    us = lambda ns: ns / 1000.0  # noqa: E731
    for rank in (0, 1):
        mine = next(r for r in rows if r["process"].startswith("rank %d " % rank))
        theirs = breakdown.loc[rank]
        if mine["comm_ns"] == 0:
            print("rank %d: no communication time; the check would prove nothing" % rank)
            return False
        check("rank %d compute" % rank, theirs["compute_time(us)"], us(mine["compute_ns"]), 0.002)
        check("rank %d non-compute" % rank, theirs["non_compute_time(us)"],
              us(mine["non_compute_ns"]), 0.002)
        check("rank %d span" % rank, theirs["kernel_time(us)"], us(mine["span_ns"]), 0.1)
        check("rank %d idle" % rank, theirs["idle_time(us)"], us(mine["idle_ns"]), 0.1)
        # HTA rounds the percentage to 0.01.
        check("rank %d overlap %%" % rank, overlap.loc[rank]["comp_comm_overlap_pctg"],
              mine["overlap_pct"], 0.005 + 1e-9, "%")
    return True


def main():
    if not os.path.exists(TRACE):
        skip("no shared trace at " + TRACE)
    try:
        import hta  # noqa: F401
    except ImportError:
        skip("HolisticTraceAnalysis is not installed (scripts/setup.sh installs it)")
    row, steps = hta_breakdown(TRACE)
    # HTA keeps the iterations it found but the last one of the file. Its
    # iteration numbers are the ProfilerStep#N numbers, as the tracer's are.
    out = subprocess.run(
        [os.environ["TRACER_CLI"], "report", TRACE, "--table", "comm",
         "--steps", "%d-%d" % (steps[0], steps[-1]), "--format", "json"],
        check=True, capture_output=True, text=True).stdout
    table = json.loads(out)["comm"]
    ours = next(r for r in table if r["kind"] == "process")
    us = lambda ns: ns / 1000.0  # noqa: E731

    failures = []

    def check(name, theirs, mine, tolerance, unit="us"):
        ok = abs(theirs - mine) <= tolerance
        print("%-18s HTA %14.3f %s  tracer %14.3f %s  %s" %
              (name, theirs, unit, mine, unit, "ok" if ok else "DIFFERENT"))
        if not ok:
            failures.append(name)

    # Unions of the same ops: to the nanosecond (HTA holds microseconds as
    # doubles, so allow a rounding hair).
    check("compute", row["compute_time(us)"], us(ours["compute_ns"]), 0.002)
    check("non-compute", row["non_compute_time(us)"], us(ours["non_compute_ns"]), 0.002)
    # Span and idle: HTA's first/last timestamps are large doubles in
    # microseconds; measured 60 ns apart on this file.
    check("span", row["kernel_time(us)"], us(ours["span_ns"]), 0.1)
    check("idle", row["idle_time(us)"], us(ours["idle_ns"]), 0.1)
    if not check_two_ranks(TRACE, check):
        failures.append("two-rank job")
    if failures:
        print("differs from HTA: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
