"""Python side of the tracer GPU profiler.

`tracer.load(path)` reads a trace (a recorded stream, an nsys SQLite export
or a PyTorch profiler trace) with the same C++ reader and analysis as
`tracer report`, and gives its records and every report table as pyarrow
Tables and pandas DataFrames (see tracer/_trace.py and python/README.md).

`tracer.torch` annotates a PyTorch model with NVTX ranges named the way
`tracer report --groups` expects (see tracer/torch.py). The package itself
imports nothing heavy: numpy, pyarrow and the compiled extension are
imported by `load`, torch only by `tracer.torch`.
"""

import os as _os

__version__ = "0.1.0"

# A build tree's extension (tests/python: the project's CMake build puts
# tracer/_core*.so under <build>/python/tracer) beside this source package.
_ext_dir = _os.environ.get("TRACER_PYTHON_EXT_DIR")
if _ext_dir:
    __path__.append(_os.path.join(_ext_dir, "tracer"))  # noqa: F821 (package __path__)


def load(paths, **options):
    """Reads one trace file or several (a list: merged per process, as
    `tracer report a b` does) and returns a `tracer.Trace`.

    Options (the `tracer report` flags of the same names): rank, pid (an int
    or a list), steps ("10-20", "5", "3-"), time ("1.5s:2.5s"), step_range,
    main_thread ("auto", "off" or an OS thread id), raw_names, name_rules
    (a file). Raises FileNotFoundError for a missing file and
    tracer.TraceError (a ValueError) with the CLI's one-line message for a
    file that cannot be read or a bad option.
    """
    from tracer._trace import load as _load

    return _load(paths, **options)


def __getattr__(name):
    if name in ("Trace", "TraceError"):
        from tracer import _trace

        return getattr(_trace, name)
    raise AttributeError(f"module 'tracer' has no attribute {name!r}")
