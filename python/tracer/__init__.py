"""Python side of the tracer GPU profiler.

`tracer.torch` annotates a PyTorch model with NVTX ranges named the way
`tracer report --groups` expects (see tracer/torch.py). The package itself
imports nothing heavy; torch is imported only by `tracer.torch`.
"""

__version__ = "0.1.0"

# `tracer export --format parquet` from Python (runs the CLI; docs/parquet.md).
from .parquet import to_parquet  # noqa: E402,F401
