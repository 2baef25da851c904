"""`tracer report --table comm` against Holistic Trace Analysis (HTA) on the
real ResNet PyTorch profiler trace kept beside the project (shared data).

HTA's temporal breakdown covers the profiler steps but the last one and, by
default, rounds nanosecond timestamps to microseconds. Like with like: HTA
runs with HTA_DISABLE_NS_ROUNDING=1 and the tracer with --steps 0-(N-2).
Exits 77 (skipped) when HTA or the trace is absent.
"""
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

    def check(name, theirs, mine, tolerance_us):
        ok = abs(theirs - mine) <= tolerance_us
        print("%-18s HTA %14.3f us  tracer %14.3f us  %s" %
              (name, theirs, mine, "ok" if ok else "DIFFERENT"))
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
    if failures:
        print("differs from HTA: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
