#!/usr/bin/env bash
# Installs dependencies, builds everything and runs every test (ctest -j2),
# then the unit tests under ASan + UBSan and TSan (scripts/sanitizers.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j2
(cd build && ctest -j2 --output-on-failure --timeout 600)
./scripts/sanitizers.sh
