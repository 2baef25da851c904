#!/usr/bin/env python3
"""Parquet writer options for `tracer export --format parquet` (not run by ctest).

Generates one synthetic rank (bench/analysis/synth_rank_traces), exports it,
then rewrites its large tables (gpu_ops, ranges, stacks) batch by batch as
python/tracer/parquet_writer.py writes them, with the writer's per-table
dictionary columns (DICTIONARY_COLUMNS) against the baseline of dictionary
encoding every column (pyarrow's default), both zstd, in the same run: CPU
time (best of 3) and file size, and their ratio.

    bench/parquet/writer_options.py [BUILD_DIR] [KERNELS]   (defaults: build, 1000000)
"""
import glob
import os
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "python", "tracer"))
import parquet_writer  # noqa: E402


def write(path, table, batches, use_dictionary):
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        w = pq.ParquetWriter(path, table.schema, compression="zstd", use_dictionary=use_dictionary)
        for b in batches:
            w.write_batch(b)
        w.close()
        best = min(best, time.process_time() - t0)
    return best, os.path.getsize(path)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "build")
    kernels = sys.argv[2] if len(sys.argv) > 2 else "1000000"
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([os.path.join(build, "bench/analysis/synth_rank_traces"), "--ranks", "1",
                        "--kernels", kernels, "--out", work], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([os.path.join(build, "tools/tracer"), "export", os.path.join(
            work, "tracer-rank0.trace"), "--format", "parquet", "-o", os.path.join(work, "ds")],
            check=True, stderr=subprocess.DEVNULL)
        for name in ("gpu_ops", "ranges", "stacks"):
            table = pq.read_table(glob.glob(os.path.join(work, "ds", name, "*", "*.parquet"))[0])
            table = table.drop_columns([c for c in table.column_names if c == "rank"])
            batches = table.to_batches(max_chunksize=131072)  # the CLI's batch size
            out = os.path.join(work, "out.parquet")
            base_s, base_b = write(out, table, batches, True)
            ours_s, ours_b = write(out, table, batches,
                                   parquet_writer.DICTIONARY_COLUMNS[name])
            print("%-8s %9d rows  all-dictionary %.3f s %.1f MB  chosen columns %.3f s %.1f MB"
                  "  cpu ratio %.2f  size ratio %.2f"
                  % (name, table.num_rows, base_s, base_b / 1e6, ours_s, ours_b / 1e6,
                     base_s / ours_s, base_b / ours_b))


if __name__ == "__main__":
    main()
