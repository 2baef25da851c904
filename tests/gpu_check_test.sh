#!/usr/bin/env bash
# ctest gpu_check / gpu_pm_check: scripts/gpu_check.sh or gpu_pm_check.sh
# BUILD_DIR. Without a driver (every CI machine) it must print exactly its
# one "no CUDA driver" line and exit 0; where a driver is present it runs
# the real check and its status is ours.
script="$1"
build="$2"
out="$("$script" "$build")"
rc=$?
printf '%s\n' "$out"
case "$out" in
  *"no CUDA driver"*)
    [ $rc -eq 0 ] || { echo "FAIL: exit $rc without a driver"; exit 1; }
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || { echo "FAIL: more than one line"; exit 1; }
    [[ "$out" =~ ^gpu_(pm_)?check:\ no\ CUDA\ driver\ \(.+\)\;\ nothing\ checked$ ]] ||
      { echo "FAIL: unexpected wording"; exit 1; }
    exit 0
    ;;
  *) exit $rc ;;
esac
