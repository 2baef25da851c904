"""Shared set-up of the Python tests: paths handed over by CMake, the
checkout's tracer package on sys.path, and the skip rule (exit 77 when torch
is not importable, which ctest reports as skipped)."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
import warnings

SKIP = 77
SOURCE_DIR = os.environ.get(
    "TRACER_SOURCE_DIR", os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
)
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

LIB = os.environ.get("TRACER_LIB", "")  # libtracer.so
CLI = os.environ.get("TRACER_CLI", "")  # the `tracer` binary
WORK_DIR = os.environ.get("TRACER_TEST_DIR", "/tmp/tracer-python-tests")
SAMPLE = os.path.join(SOURCE_DIR, "samples", "torch", "lora_finetune.py")


def have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def need_torch() -> None:
    if not have_torch():
        print("torch is not importable: skipped", flush=True)
        sys.exit(SKIP)


def work_dir(name: str) -> str:
    path = os.path.join(WORK_DIR, name)
    os.makedirs(path, exist_ok=True)
    return path


# Which tracer.torch hooks a child uses (the C++ ones of a build tree, or
# the Python ones): kept, as the test itself runs with them.
KEEP = ("TRACER_PYTHON_EXT_DIR", "TRACER_TORCH_NATIVE")


def expected_native():
    """True / False when CMake says whether tracer.torch must use its C++
    hooks (TRACER_EXPECT_NATIVE), None when run by hand."""
    value = os.environ.get("TRACER_EXPECT_NATIVE")
    return None if value is None else value == "1"


def clean_env(**extra) -> dict:
    """The environment without any NVTX/CUDA tool or tracer setting, so a
    test's child sees only what the test gives it."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("TRACER_") and k not in KEEP) and k not in
           ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "LD_PRELOAD")}
    env["PYTHONWARNINGS"] = "ignore"
    env.update(extra)
    return env


def run(cmd, env=None, timeout=300, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd or SOURCE_DIR, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main(require_torch: bool = True) -> None:
    if require_torch:
        need_torch()
    unittest.main(verbosity=2)


_has_run = None


def cli_has_run() -> bool:
    global _has_run
    if _has_run is None:
        try:
            _has_run = bool(CLI) and subprocess.run(
                [CLI, "run", "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                timeout=30).returncode == 0
        except OSError:
            _has_run = False
    return _has_run


def traced(cmd, output, env=None, timeout=300) -> subprocess.CompletedProcess:
    """Runs `cmd` under the tracer writing `output`: `tracer run -o` (what a
    user types), or, with a CLI that has no `run` yet, the environment that
    `tracer run` sets (docs/design.md section 1: the two must behave the same)."""
    env = dict(env if env is not None else clean_env())
    if cli_has_run():
        return run([CLI, "run", "-o", output, "--", *cmd], env=env, timeout=timeout)
    env.update(NVTX_INJECTION64_PATH=LIB, CUDA_INJECTION64_PATH=LIB, TRACER_OUTPUT=output)
    return run(cmd, env=env, timeout=timeout)
