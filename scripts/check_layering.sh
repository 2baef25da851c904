#!/usr/bin/env bash
# Layering rule of docs/design.md section 2: core and analysis never include CUDA,
# CUPTI or NVTX headers; analysis never includes capture; core includes only
# core. Prints each violation and exits 1 if there is any.
set -u
cd "$(dirname "$0")/.."
status=0
check() {  # folder, forbidden regex, reason
  local hits
  hits=$(grep -rnE "^\s*#\s*include\s*[<\"]($2)" "$1" --include='*.h' --include='*.cc' --include='*.cpp' 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "layering: $1 must not include $3:"
    echo "$hits"
    status=1
  fi
}
cuda='cupti|cuda|nvToolsExt|nvtx3|generated_nvtx'
check libtracer/core "$cuda" "CUDA/CUPTI/NVTX headers"
check libtracer/analysis "$cuda" "CUDA/CUPTI/NVTX headers"
check libtracer/core 'libtracer/(capture|analysis|cupti_api)|proto/' "higher layers or generated protobuf"
check libtracer/analysis 'libtracer/(capture|cupti_api)' "capture-side code"
check libtracer/cupti_api 'libtracer/(capture|analysis)' "higher layers"
check libtracer/capture 'libtracer/analysis|proto/' "analysis or generated protobuf (the injected library writes the wire format itself)"
# The reporter's pipeline: a stage includes only itself and earlier stages.
stages=(read importers model aggregate tables reports export)
for i in "${!stages[@]}"; do
  later=$(IFS='|'; echo "${stages[*]:$((i + 1))}")
  [ -n "$later" ] && check "libtracer/analysis/${stages[$i]}" "libtracer/analysis/($later)/" \
    "later stages of the pipeline ($later)"
done
[ $status -eq 0 ] && echo "layering: ok"
exit $status
