#!/usr/bin/env bash
# The main job: install, build, trace the bundled sample and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2
out=${TMPDIR:-/tmp}/tracer-demo
mkdir -p "$out"
./build/tools/tracer run -o "$out/lora_step.trace" -- ./build/samples/lora_step
./build/tools/tracer report "$out/lora_step.trace"
