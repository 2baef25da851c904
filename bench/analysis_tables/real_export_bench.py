#!/usr/bin/env python3
"""`tracer report` end to end against the user's SQL of the per-range kernel
attribution (tests/tables/data/seeds000.sql, run by the sqlite3 library, as
the sqlite3 shell does) on a real Nsight Systems export, in one run.

Prints the best of N wall times of each and the ratio SQL / tracer for the
default report and for --table range-kernels (target >= 3x).

  real_export_bench.py TRACER_CLI EXPORT.sqlite [--repeats N]
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tracer")
    ap.add_argument("export")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sql", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests",
                                                  "tables", "data", "seeds000.sql"))
    args = ap.parse_args()
    if not os.path.exists(args.export):
        print("real_export_bench: no export at " + args.export + " (skipped)")
        return 0
    sql = open(args.sql).read()
    work = tempfile.mkdtemp()
    try:
        def run_sql():
            # A fresh copy each time: the SQL creates a temporary table and an
            # index, as a user's session would on their export.
            db = os.path.join(work, "x.sqlite")
            shutil.copyfile(args.export, db)
            con = sqlite3.connect(db)
            n = 0
            for statement in [s for s in sql.split(";") if s.strip()]:
                for _ in con.execute(statement):
                    n += 1
            con.close()
            return n

        def copy_only():
            shutil.copyfile(args.export, os.path.join(work, "y.sqlite"))

        def tracer(*extra):
            subprocess.run([args.tracer, "report", args.export, *extra], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        t_copy = best(copy_only, args.repeats)
        t_sql = best(run_sql, args.repeats) - t_copy
        t_default = best(lambda: tracer(), args.repeats)
        t_rk = best(lambda: tracer("--table", "range-kernels"), args.repeats)
        print("export: %s (%.1f MB)" % (args.export, os.path.getsize(args.export) / 1e6))
        print("user SQL via sqlite3 (baseline, copy excluded): %8.1f ms" % (1e3 * t_sql))
        print("tracer report (default tables):                 %8.1f ms  SQL/tracer %.2fx" %
              (1e3 * t_default, t_sql / t_default))
        print("tracer report --table range-kernels:            %8.1f ms  SQL/tracer %.2fx" %
              (1e3 * t_rk, t_sql / t_rk))
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
