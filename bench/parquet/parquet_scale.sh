#!/usr/bin/env bash
# Scale test of the Parquet path (docs/parquet.md; not run by ctest):
# generates RANKS x KERNELS synthetic tracer streams
# (bench/analysis/synth_rank_traces: a transformer training loop with real
# kernel names, the last rank a straggler), then measures wall time and peak
# RSS (GNU time's "Maximum resident set size": the largest process of the
# command, the Python writer included) of
#   export:  tracer export --format parquet (one rank in memory at a time)
#   query-*: DuckDB running each query of docs/parquet.md marked
#            "<!-- query: NAME -->" (one process each), with the settings
#            docs/parquet.md gives (threads, memory_limit, temp_directory)
#   report:  tracer report --table range-kernels,ranks --no-stream over the
#            same files (the whole trace in one process, about 360 B per
#            kernel: run only when that fits half the available memory, or
#            REPORT=1)
#   ranks:   tracer report --table ranks over the same files, the bounded
#            path chosen on its own (one file read whole at a time)
#   stream:  tracer report --table range-kernels over the same files, the
#            bounded path chosen on its own (2 GiB of input or more)
# and deletes the generated data at the end (KEEP=1 keeps it; a WORK folder
# already holding RANKS traces is reused, its generation not measured again).
#
#   bench/parquet/parquet_scale.sh [BUILD_DIR]
#     env: RANKS=256 KERNELS=1000000 WORK=/tmp/... DUCKDB_MEMORY=4GB
#          DUCKDB_THREADS=$(nproc) DUCKDB_TEMP_MAX=(DuckDB's: 90 % of the free
#          disk) KEEP=0 REPORT=auto STEPS="generate export query-ranks
#          report ranks stream query-range-kernels" (a subset reruns those
#          steps on a kept WORK)
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

# STEPS: the steps to run (default all: generate export query-ranks report
# ranks stream query-range-kernels); e.g. STEPS="ranks stream" on a kept WORK.
steps=" ${STEPS:-generate export query-ranks report ranks stream query-range-kernels} "
want() { [[ "$steps" == *" $1 "* ]]; }

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
if [ "$(ls "$work"/traces/*.trace 2>/dev/null | wc -l)" = "$ranks" ] || ! want generate; then
  echo "generate reusing $work/traces"
else
  rm -rf "$work/traces" "$work/dataset"
  measure generate "$synth" --ranks "$ranks" --kernels "$kernels" --out "$work/traces"
fi
echo "traces: $(du -sh "$work/traces" | cut -f1)"
if want export; then
  rm -rf "$work/dataset"
  measure export "$tracer" export "$work"/traces/*.trace --format parquet -o "$work/dataset"
fi
[ -d "$work/dataset" ] && echo "dataset: $(du -sh "$work/dataset" | cut -f1)"

# One process per documented query, so each gets its own time and peak,
# with the settings docs/parquet.md gives (spilling to $work/duckdb_tmp;
# DUCKDB_MEMORY / DUCKDB_THREADS override its memory_limit / threads).
cat >"$work/query.py" <<PYEOF
import re, sys, duckdb
doc = open("$src/docs/parquet.md").read()
con = duckdb.connect()
settings = re.search(r"<!-- settings -->\s*\`\`\`sql\n(.*?)\`\`\`", doc, re.S).group(1)
override = {"memory_limit": "${DUCKDB_MEMORY:-}", "threads": "${DUCKDB_THREADS:-}",
            "temp_directory": "$work/duckdb_tmp"}
for line in settings.splitlines():
    m = re.match(r"SET (\w+) = ('?)([^';]*)\2;", line.split("--")[0].strip())
    if m:
        value = override.get(m.group(1)) or m.group(3)
        con.execute("SET %s = %s%s%s" % (m.group(1), m.group(2), value, m.group(2)))
        print("SET", m.group(1), "=", value, file=sys.stderr)
if "${DUCKDB_TEMP_MAX:-}":
    con.execute("SET max_temp_directory_size = '${DUCKDB_TEMP_MAX:-}'")
    print("SET max_temp_directory_size = ${DUCKDB_TEMP_MAX:-}", file=sys.stderr)
queries = dict(re.findall(r"<!-- query: ([\w-]+) -->\s*\`\`\`sql\n(.*?)\`\`\`", doc, re.S))
rows = con.execute(queries[sys.argv[1]].replace("'job_parquet/", "'$work/dataset/")).fetchall()
print(sys.argv[1], len(rows), "rows")
PYEOF
query() {
  measure "query-$1" "$py" "$work/query.py" "$1" && cat "$work/query-$1.out"
  rm -rf "$work/duckdb_tmp"
}
want query-ranks && query ranks
report=${REPORT:-auto}
if [ "$report" = auto ]; then
  # Reading whole takes about 360 B per kernel (docs/parquet.md).
  need_mib=$((ranks * kernels * 360 / 1048576))
  avail_mib=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
  report=0
  if [ "$need_mib" -lt $((avail_mib / 2)) ]; then report=1; fi
  [ "$report" = 1 ] || echo "report   not run: reading whole needs about $need_mib MiB, $avail_mib MiB available"
fi
if [ "$report" = 1 ] && want report; then
  measure report "$tracer" report "$work"/traces/*.trace --table range-kernels,ranks --format json --no-stream
fi
if want ranks; then
  measure ranks "$tracer" report "$work"/traces/*.trace --table ranks --format json
  grep -h "^tracer report:" "$work/ranks.time" | head -2 || true
fi
if want stream; then
  measure stream "$tracer" report "$work"/traces/*.trace --table range-kernels --format json
  grep -h "^tracer report:" "$work/stream.time" | head -2 || true
fi
# The heaviest step last.
if want query-range-kernels; then query range-kernels; fi
