#!/usr/bin/env bash
# Same output from two builds of `tracer` on nsys SQLite exports: every
# report table in every format (and with --raw-names, --by-process,
# --main-thread off, --stream), `tracer import` and `tracer export`
# (chrome, sqlite dumped as SQL). For changes to the nsys importer that must
# not change a byte (say, how it reads the rows); the exports are given, or
# a synthetic emit_nvtx one is written (bench/analysis_tables).
#
#   scripts/check_nsys_import.sh BASE_TRACER NEW_TRACER [EXPORT.sqlite ...]
#
# Prints one line per difference and a count; exit status 1 when any.
set -u
base=$1
new=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  python3 "$root/bench/analysis_tables/synthetic_nsys_export.py" "$work/synthetic.sqlite" \
    --ops 20000 >/dev/null
  files=("$work/synthetic.sqlite")
fi

diffs=0
runs=0
# run NAME ARGS...: both builds, stdout, stderr and exit status compared.
run() {
  local name=$1
  shift
  "$base" "$@" >"$work/a.out" 2>"$work/a.err"
  echo "rc=$?" >>"$work/a.err"
  "$new" "$@" >"$work/b.out" 2>"$work/b.err"
  echo "rc=$?" >>"$work/b.err"
  runs=$((runs + 1))
  if ! cmp -s "$work/a.out" "$work/b.out" || ! cmp -s "$work/a.err" "$work/b.err"; then
    echo "DIFFERS: $name: $*"
    diffs=$((diffs + 1))
  fi
}

tables="summary ranges kernels range-kernels gpu memory api all groups timeline phases \
categories gaps top ranks comm metrics"
for f in "${files[@]}"; do
  for fmt in text csv md json html; do
    run "default $fmt" report "$f" --format "$fmt"
    for t in $tables; do
      extra=()
      # A path, not a name: each build would name its own copy.
      [ "$t" = groups ] && extra=(--groups "$root/data/groups/mlora.groups")
      run "$t $fmt" report "$f" --table "$t" --format "$fmt" "${extra[@]}"
    done
  done
  for opts in "--raw-names" "--by-process" "--main-thread off" "--stream" "--sort name --top 5"; do
    # shellcheck disable=SC2086
    run "all $opts" report "$f" --table all $opts
  done
  # Whole import (every field), written back and read again.
  for b in base new; do
    bin=$base
    [ $b = new ] && bin=$new
    rm -rf "$work/imp_$b" && mkdir "$work/imp_$b"
    "$bin" import "$f" -o "$work/imp_$b/out.trace" >/dev/null 2>&1
    "$bin" export "$f" --format chrome -o "$work/imp_$b/out.json" >/dev/null 2>&1
    "$bin" export "$f" --format sqlite -o "$work/imp_$b/out.sqlite" >/dev/null 2>&1
    sqlite3 "$work/imp_$b/out.sqlite" .dump >"$work/imp_$b/out.sql" 2>/dev/null
    rm -f "$work/imp_$b/out.sqlite"
  done
  runs=$((runs + 1))
  if ! diff -r "$work/imp_base" "$work/imp_new" >/dev/null; then
    echo "DIFFERS: import / export of $f:"
    diff -rq "$work/imp_base" "$work/imp_new"
    diffs=$((diffs + 1))
  fi
done
echo "$runs comparisons, $diffs differ"
[ "$diffs" -eq 0 ]
