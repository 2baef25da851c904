"""Load time and peak memory of tracer.load against the usual ways of getting
the same kernels into pandas, on one generated program (ingest_bench
--generate: steps, layers and ops on 4 threads, every kernel launched inside
a range):

  tracer      tracer.load(stream) + the gpu_ops DataFrame (kernels with the
              range each is attributed to); also the ranges DataFrame
  tracer-sql  tracer.load of the SQLite export + the gpu_ops DataFrame
  read_sql    pd.read_sql of the export's CUPTI_ACTIVITY_KIND_KERNEL table
              (`tracer export --format sqlite`: nsys-compatible tables)
  hta         Holistic Trace Analysis loading the same program as a Kineto
              JSON trace (TraceAnalysis(trace_dir=...), when installed)

Each runs in a fresh Python process that prints its wall time and peak RSS
(VmHWM, imports included; the bare interpreter with the same imports is
printed too). Ratios are the baseline's time (and memory) over tracer's.

  python3 bench/python/bench_load.py --ingest-bench build/bench/analysis/ingest_bench \\
      --cli build/tools/tracer --ext-dir build/python [--kernels 1000000 10000000]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import os, sys, time
kind, path = sys.argv[1], sys.argv[2]
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
import numpy, pandas as pd
if kind == "tracer" or kind == "tracer-sql":
    import pyarrow, tracer, tracer._trace
elif kind == "hta":
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    from hta.trace_analysis import TraceAnalysis
import sqlite3
base = hwm()
t0 = time.perf_counter()
if kind in ("tracer", "tracer-sql"):
    t = tracer.load(path)
    loaded = time.perf_counter() - t0
    ops = t.gpu_ops
    rows = int((ops["kind"] == "kernel").sum())
    t1 = time.perf_counter()
    ranges = t.ranges
    extra = time.perf_counter() - t1
    print(f"load {loaded:.3f}", file=sys.stderr)
elif kind == "read_sql":
    con = sqlite3.connect(path)
    df = pd.read_sql("SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
    rows, extra = len(df), 0.0
elif kind == "hta":
    a = TraceAnalysis(trace_dir=path)
    df = a.t.get_trace(next(iter(a.t.traces)))
    rows, extra = int((df["stream"] >= 0).sum()), 0.0
secs = time.perf_counter() - t0 - extra
print(f"{secs:.3f} {hwm():.1f} {base:.1f} {rows} {extra:.3f}")
'''


def run_child(kind, path, env):
    out = subprocess.run([sys.executable, "-c", CHILD, kind, path], env=env,
                         capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["failed"]
    secs, peak, base, rows, extra = out.stdout.split()
    loaded = [float(l.split()[1]) for l in out.stderr.splitlines() if l.startswith("load ")]
    return (float(secs), float(peak), float(base), int(rows), float(extra),
            loaded[0] if loaded else None), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--ingest-bench", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--ext-dir", default="", help="build tree's python/ (else the installed package)")
    ap.add_argument("--work", default=tempfile.gettempdir())
    ap.add_argument("--no-hta", action="store_true")
    ap.add_argument("--only", default="", help="comma separated loaders (e.g. tracer,tracer-sql: "
                    "read_sql and HTA take about 1.5 and 3.7 GiB per million kernels)")
    args = ap.parse_args()
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
    if args.ext_dir:
        env["TRACER_PYTHON_EXT_DIR"] = os.path.abspath(args.ext_dir)
        env["PYTHONPATH"] = os.path.abspath(src) + os.pathsep + env.get("PYTHONPATH", "")
    for n in args.kernels:
        prefix = os.path.join(args.work, f"tracer_bench_load_{n}")
        stream, kineto, export = prefix + ".trace", prefix + ".pt.trace.json.gz", prefix + ".sqlite"
        t0 = time.perf_counter()
        if not os.path.exists(stream) or not os.path.exists(kineto):
            subprocess.run([args.ingest_bench, "--kernels", str(n), "--generate", prefix],
                           check=True, stdout=subprocess.DEVNULL)
        if not os.path.exists(export):
            subprocess.run([args.cli, "export", stream, "--format", "sqlite", "-o", export],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hta_dir = prefix + "_hta"
        os.makedirs(hta_dir, exist_ok=True)
        link = os.path.join(hta_dir, "rank-0.pt.trace.json.gz")
        if not os.path.exists(link):
            os.symlink(kineto, link)
        print(f"{n} kernels (inputs ready in {time.perf_counter() - t0:.0f} s): stream "
              f"{os.path.getsize(stream) / 1e6:.0f} MB, SQLite export {os.path.getsize(export) / 1e6:.0f} MB, "
              f"Kineto JSON.gz {os.path.getsize(kineto) / 1e6:.0f} MB", flush=True)
        kinds = [("tracer", stream), ("tracer-sql", export), ("read_sql", export)]
        if not args.no_hta:
            kinds.append(("hta", hta_dir))
        if args.only:
            kinds = [k for k in kinds if k[0] in args.only.split(",")]
        results = {}
        print(f"  {'loader':10} {'seconds':>8} {'peak MiB':>9} {'imports':>8} {'rows':>10}")
        for kind, path in kinds:
            r, err = run_child(kind, path, env)
            if r is None:
                print(f"  {kind:10} failed: {err[0]}", flush=True)
                continue
            results[kind] = r
            note = (f"  (tracer.load {r[5]:.2f} s, then the gpu_ops DataFrame; the ranges "
                    f"DataFrame +{r[4]:.2f} s)" if kind.startswith("tracer") else "")
            print(f"  {kind:10} {r[0]:8.2f} {r[1]:9.0f} {r[2]:8.0f} {r[3]:10d}{note}", flush=True)
        base = results.get("tracer")
        if base:
            for kind in ("read_sql", "hta"):
                if kind in results:
                    r = results[kind]
                    print(f"  {kind} / tracer: time {r[0] / base[0]:.1f}x, peak memory "
                          f"{r[1] / base[1]:.1f}x, memory above imports "
                          f"{(r[1] - r[2]) / max(base[1] - base[2], 1):.1f}x", flush=True)


if __name__ == "__main__":
    main()
