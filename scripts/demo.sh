#!/usr/bin/env bash
# The main job: install, build, trace a LoRA training step and print the report.
# With torch importable: the PyTorch multi-LoRA fine-tuning sample
# (samples/torch/lora_finetune.py, CPU or GPU) and its mLoRA metric groups;
# otherwise the C++ NVTX sample lora_step.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2
out=${TMPDIR:-/tmp}/tracer-demo
mkdir -p "$out"
tracer=./build/tools/tracer
if python3 -c 'import torch' 2>/dev/null; then
  trace="$out/lora_finetune.trace"
  "$tracer" run --force-overwrite -o "$trace" python3 samples/torch/lora_finetune.py --steps 3
  "$tracer" report "$trace"
  # The mLoRA metric groups and the step's phases.
  "$tracer" report "$trace" --table groups,phases --groups samples/torch/lora.groups \
    --step-range step
else
  echo "demo: torch is not importable; tracing the C++ sample instead" >&2
  "$tracer" run --force-overwrite -o "$out/lora_step.trace" ./build/samples/lora_step
  "$tracer" report "$out/lora_step.trace"
fi
