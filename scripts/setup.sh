#!/usr/bin/env bash
# Installs everything tracer needs on a fresh Debian 12 machine. Idempotent:
# packages already present are left alone, so re-running costs seconds.
set -euo pipefail

apt_packages=(
  build-essential cmake ninja-build pkg-config
  protobuf-compiler libprotobuf-dev
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev sqlite3 zlib1g-dev
  clang-format python3-venv
  clang libclang-rt-14-dev  # libFuzzer for scripts/fuzz.sh (tests/fuzz)
  chromium chromium-driver  # headless browser of tests/python/test_html_report.py
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x /usr/local/cuda/bin/nvcc ] || [ ! -f /usr/local/cuda/include/cupti.h ]; then
  echo "setup: the CUDA 13 toolkit (nvcc, CUPTI, NVTX3 headers) is expected at /usr/local/cuda" >&2
  exit 1
fi

# Python: the `nvtx` package is a real third-party NVTX client for the tests;
# torch (CPU execution is enough) drives the PyTorch sample and its tests.
py=${PYTHON:-python3}
pip_quiet="--quiet --disable-pip-version-check"
"$py" -c 'import nvtx' 2>/dev/null || "$py" -m pip install $pip_quiet nvtx
# protobuf (Python): the torch tests build a message in a process that has
# libtracer.so preloaded, to show that no protobuf symbol clashes.
"$py" -c 'import google.protobuf' 2>/dev/null || "$py" -m pip install $pip_quiet protobuf
if [ "${TRACER_SKIP_TORCH:-0}" != 1 ]; then
  "$py" -c 'import torch' 2>/dev/null || "$py" -m pip install $pip_quiet torch
fi
# Holistic Trace Analysis: the comm/compute table is checked against it on a
# real PyTorch profiler trace (tests/python/test_hta_compare.py).
"$py" -c 'import hta, psutil' 2>/dev/null ||
  "$py" -m pip install $pip_quiet HolisticTraceAnalysis psutil
# selenium drives the system chromium (through chromium-driver) in the HTML
# report's browser test.
"$py" -c 'import selenium' 2>/dev/null || "$py" -m pip install $pip_quiet selenium
# tracer.load (python/): nanobind and scikit-build-core build the extension
# (the project's build too, when nanobind is importable), pyarrow and pandas
# take its tables.
"$py" -c 'import nanobind, scikit_build_core, pyarrow, pandas' 2>/dev/null ||
  "$py" -m pip install $pip_quiet nanobind scikit-build-core pyarrow pandas
echo "setup: done"
