#!/usr/bin/env bash
# Compares every `tracer report` table and format of two tracer programs on
# the given inputs (nsys exports, Kineto traces, tracer streams): a speed
# change to the report must not change one byte of its output.
#
#   report_outputs_check.sh NEW_TRACER BASELINE_TRACER INPUT...
#
# Each input is reported alone; an input naming several files ("a.trace
# b.trace", quoted) is reported as one multi-file report. Exit 0 when every
# output (stdout, stderr, exit code) is identical, 1 otherwise.
set -u
new=$1 base=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tables="summary ranges kernels range-kernels gpu memory api all timeline phases categories gaps top ranks comm metrics"
groups=$(cd "$(dirname "$0")/../.." && pwd)/data/groups/mlora.groups
fail=0 runs=0
check() {  # args: label, report arguments...
  local label=$1
  shift
  "$new" report "$@" >"$work/new.out" 2>"$work/new.err"
  echo "rc=$?" >>"$work/new.out"
  "$base" report "$@" >"$work/base.out" 2>"$work/base.err"
  echo "rc=$?" >>"$work/base.out"
  runs=$((runs + 1))
  if ! cmp -s "$work/new.out" "$work/base.out" || ! cmp -s "$work/new.err" "$work/base.err"; then
    echo "DIFFERS: $label: report $*"
    diff "$work/base.out" "$work/new.out" | head -5
    diff "$work/base.err" "$work/new.err" | head -5
    fail=1
  fi
}
for input in "$@"; do
  # shellcheck disable=SC2086
  set -- $input
  for format in text csv md json; do
    check "$input default $format" "$@" --format "$format"
    for t in $tables; do
      check "$input $t $format" "$@" --table "$t" --format "$format"
    done
  done
  check "$input by-process" "$@" --by-process --table all
  check "$input filter" "$@" --filter '^aten::(to|mm)' --table ranges,range-kernels
  check "$input top sort" "$@" --top 5 --sort name
  check "$input raw names" "$@" --raw-names --table ranges,range-kernels
  check "$input main-thread off" "$@" --main-thread off --table all
  check "$input timeunit" "$@" --timeunit us
  check "$input steps" "$@" --steps 0-1
  # A groups file by path: by name it resolves next to each program.
  check "$input groups" "$@" --groups "$groups"
  check "$input stream" "$@" --stream
  check "$input html" "$@" --format html
done
echo "report_outputs_check: $runs reports compared, $([ $fail = 0 ] && echo identical || echo DIFFERENCES)"
exit $fail
