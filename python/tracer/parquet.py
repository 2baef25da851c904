"""`tracer.to_parquet(paths, out_dir)`: `tracer export --format parquet`.

Runs the tracer CLI (TRACER_CLI, else `tracer` on PATH), which reads the
traces with the same reader and attribution as `tracer report` and streams
the rows to the pyarrow writer (tracer/parquet_writer.py). The dataset layout
and schema are in docs/parquet.md.
"""

import os
import shutil
import subprocess


class ExportError(RuntimeError):
    pass


def _cli():
    cli = os.environ.get("TRACER_CLI") or shutil.which("tracer")
    if not cli:
        raise ExportError("tracer.to_parquet needs the tracer CLI: set TRACER_CLI or put "
                          "`tracer` on PATH")
    return cli


def to_parquet(paths, out_dir, force_overwrite=False, name_rules=None, raw_names=False):
    """Writes the Parquet dataset of the traces in `paths` (a path or a list:
    tracer streams, nsys SQLite exports, Kineto traces) to folder `out_dir`.
    Returns out_dir. Raises ExportError with the CLI's message on failure."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ExportError("tracer.to_parquet: no input traces")
    cmd = [_cli(), "export", *paths, "--format", "parquet", "-o", os.fspath(out_dir)]
    if force_overwrite:
        cmd.append("--force-overwrite")
    if name_rules:
        cmd += ["--name-rules", os.fspath(name_rules)]
    if raw_names:
        cmd.append("--raw-names")
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        lines = [l for l in done.stderr.splitlines() if l.strip()]
        raise ExportError(lines[-1] if lines else "tracer export failed (exit %d)"
                          % done.returncode)
    return os.fspath(out_dir)
