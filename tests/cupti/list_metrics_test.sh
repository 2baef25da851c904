#!/usr/bin/env bash
# `tracer list-metrics` on the real libcupti (its profiler-host half needs no
# GPU). Skipped (exit 77) only when that host API fails here.
tracer="$1"
fail() { echo "FAIL: $*"; exit 1; }
out="$("$tracer" list-metrics --chip GA102 2>&1)"
rc=$?
case "$out" in
  *"cuptiProfilerHostGetSupportedChips failed"* | *"libcupti not found"*)
    echo "SKIP: libcupti's host API fails here: $out"; exit 77 ;;
esac
[ $rc -eq 0 ] || fail "--chip GA102 exit $rc: $out"
printf '%s\n' "$out" | head -n 1 | grep -q '^# PM sampling metrics on GA102 (' || fail "header: $(printf '%s\n' "$out" | head -n 1)"
printf '%s\n' "$out" | grep -qE '^#   basic +SM active.*sm__cycles_active\.avg\.pct_of_peak_sustained_elapsed,dram__throughput' ||
  fail "basic preset line missing"
printf '%s\n' "$out" | grep -q 'not on this chip' && fail "a preset does not fit GA102: $out"
printf '%s\n' "$out" | grep -qE '^dram__throughput +throughput ' || fail "dram__throughput line missing"
n=$(printf '%s\n' "$out" | grep -vc '^#')
[ "$n" -gt 500 ] || fail "only $n metrics"

all="$("$tracer" list-metrics --chip GH100 --all 2>&1)" || fail "--all exit $?"
printf '%s\n' "$all" | grep -qx 'dram__throughput.avg.pct_of_peak_sustained_elapsed' ||
  fail "--all lacks dram__throughput.avg.pct_of_peak_sustained_elapsed"

bad="$("$tracer" list-metrics --chip XY999 2>&1)"
rc=$?
[ $rc -eq 2 ] || fail "unknown chip exit $rc"
[ "$(printf '%s\n' "$bad" | wc -l)" -eq 1 ] || fail "unknown chip: more than one line: $bad"
[[ "$bad" == *"chip 'XY999' is not supported"*"GA102"* ]] || fail "unknown chip wording: $bad"

# Without --chip and without a driver: one line saying why and the chips.
if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' >/dev/null 2>&1; then
  none="$("$tracer" list-metrics 2>&1)"
  rc=$?
  [ $rc -eq 2 ] || fail "no chip, no driver: exit $rc"
  [ "$(printf '%s\n' "$none" | wc -l)" -eq 1 ] || fail "no chip: more than one line: $none"
  [[ "$none" == "tracer list-metrics: no GPU driver here (libcuda.so.1 not found); pass --chip NAME, one of: "*" GA102 "*" GH100 "* ]] ||
    fail "no chip wording: $none"
fi
echo "list-metrics: ok"
