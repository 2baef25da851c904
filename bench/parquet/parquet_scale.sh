#!/usr/bin/env bash
# Scale test of the Parquet path (docs/parquet.md; not run by ctest):
# generates RANKS x KERNELS synthetic tracer streams
# (bench/analysis/synth_rank_traces: a transformer training loop with real
# kernel names, the last rank a straggler), then measures wall time and peak
# RSS (GNU time's "Maximum resident set size": the largest process of the
# command, the Python writer included) of
#   export:  tracer export --format parquet (one rank in memory at a time)
#   query:   DuckDB running docs/parquet.md's range-kernels and ranks queries
#   report:  tracer report --table range-kernels,ranks over the same files
#            (the whole trace in one process; REPORT=0 skips it, for sizes
#            that do not fit memory)
#   stream:  tracer report --stream --table range-kernels (bounded reader)
# and deletes the generated data at the end (KEEP=1 keeps it).
#
#   bench/parquet/parquet_scale.sh [BUILD_DIR]    (env: RANKS=256 KERNELS=1000000 WORK=/tmp/...)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
ranks=${RANKS:-256}
kernels=${KERNELS:-1000000}
work=${WORK:-$(mktemp -d /tmp/tracer-parquet-scale.XXXXXX)}
py=${TRACER_PYTHON:-python3}
tracer=$build/tools/tracer
synth=$build/bench/analysis/synth_rank_traces
for b in "$tracer" "$synth"; do
  [ -x "$b" ] || { echo "parquet_scale: $b is not built (cmake --build $build --target tracer synth_rank_traces)" >&2; exit 1; }
done
"$py" -c 'import pyarrow, duckdb' || { echo "parquet_scale: needs pyarrow and duckdb for $py" >&2; exit 1; }
mkdir -p "$work"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

# Runs "$@" under GNU time; prints "<label> wall_s=<s> peak_rss_mib=<MiB>".
measure() {
  local label=$1; shift
  local log=$work/$label.time
  /usr/bin/time -v "$@" 2>"$log" >"$work/$label.out" || {
    sed '/Command being timed/,$d' "$log" | tail -5 >&2
    return 1
  }
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
  printf '%-8s wall_s=%-8s peak_rss_mib=%s\n' "$label" "$wall" "$rss"
}

echo "parquet_scale: $ranks ranks x $kernels kernels in $work ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
measure generate "$synth" --ranks "$ranks" --kernels "$kernels" --out "$work/traces"
echo "traces: $(du -sh "$work/traces" | cut -f1)"
measure export "$tracer" export "$work"/traces/*.trace --format parquet -o "$work/dataset"
echo "dataset: $(du -sh "$work/dataset" | cut -f1)"

cat >"$work/query.py" <<PYEOF
import re, sys, duckdb
doc = open("$src/docs/parquet.md").read()
con = duckdb.connect()
con.execute("SET threads = $(nproc)")
# The machine is shared: DuckDB spills to disk past this instead of taking
# 80 % of memory (its default).
con.execute("SET memory_limit = '${DUCKDB_MEMORY:-4GB}'")
con.execute("SET temp_directory = '$work/duckdb_tmp'")
for name, sql in re.findall(r"<!-- query: ([\w-]+) -->\s*\`\`\`sql\n(.*?)\`\`\`", doc, re.S):
    rows = con.execute(sql.replace("'job_parquet/", "'$work/dataset/")).fetchall()
    print(name, len(rows), "rows")
PYEOF
measure query "$py" "$work/query.py"
cat "$work/query.out"
if [ "${REPORT:-1}" = 1 ]; then
  measure report "$tracer" report "$work"/traces/*.trace --table range-kernels,ranks --format json
fi
measure stream "$tracer" report "$work"/traces/*.trace --stream --table range-kernels --format json
