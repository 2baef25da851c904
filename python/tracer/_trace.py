"""tracer.load and tracer.Trace: the trace's records and report tables as
pyarrow Tables and pandas DataFrames, from the C++ reader and analysis that
`tracer report` runs (the compiled tracer._core).

Record tables cross without a per-row copy: the extension hands over NumPy
arrays that borrow the C++ column buffers (a capsule frees them when the
last array or Arrow buffer over them goes), and pyarrow / pandas wrap those
arrays. Strings are dictionary-encoded (codes + one name per distinct
value): pyarrow dictionary arrays, pandas categoricals.
"""

from __future__ import annotations

import json
import os
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from tracer import _core

TraceError = _core.TraceError

RECORD_TABLES = ("ranges", "gpu_ops", "api_calls", "pm_samples")
CORE_TABLES = ("summary", "ranges", "kernels", "range-kernels", "gpu", "memory", "api")


def _int_list(value, what: str) -> List[int]:
    if value is None:
        return []
    if isinstance(value, (int, np.integer)):
        value = [value]
    elif isinstance(value, str):
        value = [v for v in value.split(",") if v]
    try:
        out = [int(v) for v in value]
    except (TypeError, ValueError):
        raise TraceError(f"{what}: expected numbers (e.g. 0,3), got {value!r}") from None
    if any(v < 0 for v in out):
        raise TraceError(f"{what}: expected numbers (e.g. 0,3), got {value!r}")
    return out


def _groups_dirs() -> List[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "groups"), _core.source_groups_dir]


def resolve_groups(arg: str) -> str:
    """The file `groups=` means: the path itself when it is a file, else a
    shipped groups file by name (mlora, peft), as `tracer report --groups`."""
    if os.path.isfile(arg):
        return arg
    name = arg if arg.endswith(".groups") else arg + ".groups"
    known = set()
    for d in _groups_dirs():
        path = os.path.join(d, name)
        if os.path.isfile(path):
            return path
        if os.path.isdir(d):
            known.update(f[: -len(".groups")] for f in os.listdir(d) if f.endswith(".groups"))
    raise TraceError(
        f"--groups: '{arg}' is neither a file nor a shipped groups file"
        f" (shipped: {', '.join(sorted(known)) or 'none found'})")


class Trace:
    """A loaded trace (see tracer.load). Record tables: `ranges`,
    `gpu_ops`, `api_calls`, `pm_samples` (pandas DataFrames, computed on
    first use), or `table(name)` as a pyarrow Table; report tables:
    `report(name, ...)`."""

    def __init__(self, handle, paths: List[str]):
        self._handle = handle
        self.paths = paths
        self._columns: Dict[str, list] = {}

    # --- record tables ---------------------------------------------------
    @property
    def warnings(self) -> List[str]:
        """What the reader said about damaged or partial input, one line each."""
        return list(self._handle.warnings)

    @property
    def processes(self):
        import pandas as pd

        return pd.DataFrame(self._handle.processes())

    def columns(self, name: str) -> Dict[str, np.ndarray]:
        """The raw columns of a record table: NumPy arrays over the C++
        buffers (dictionary columns as int32 codes; see `dictionary`)."""
        return {c[0]: c[1] for c in self._raw(name)}

    def _raw(self, name: str) -> list:
        if name not in RECORD_TABLES:
            raise TraceError(f"unknown record table '{name}' ({', '.join(RECORD_TABLES)})")
        if name not in self._columns:
            self._columns[name] = getattr(self._handle, name)()
        return self._columns[name]

    def table(self, name: str):
        """A record table (ranges, gpu_ops, api_calls, pm_samples) as a
        pyarrow Table sharing the C++ buffers."""
        import pyarrow as pa

        arrays, names = [], []
        for col, values, valid, dictionary in self._raw(name):
            names.append(col)
            if dictionary is not None:
                codes = pa.array(values, mask=values < 0) if (values < 0).any() else pa.array(values)
                arrays.append(pa.DictionaryArray.from_arrays(
                    codes, pa.array(dictionary, type=pa.string())))
            elif valid is not None:
                arrays.append(pa.array(values, mask=valid == 0))
            elif col == "inherited":
                arrays.append(pa.array(values.view(np.bool_)))
            else:
                arrays.append(pa.array(values))
        return pa.Table.from_arrays(arrays, names=names)

    def df(self, name: str):
        """A record table as a pandas DataFrame: numeric columns over the
        C++ buffers, strings as categoricals, missing values (a range with
        no GPU work has no projection, not 0) as pandas nullable integers."""
        import pandas as pd

        data = {}
        for col, values, valid, dictionary in self._raw(name):
            if dictionary is not None:
                # Dictionaries hold each text once (the extension dedups).
                data[col] = pd.Categorical.from_codes(values, categories=dictionary)
            elif valid is not None:
                mask = valid == 0
                if values.dtype.kind == "f":
                    data[col] = pd.arrays.FloatingArray(values, mask)
                else:
                    data[col] = pd.arrays.IntegerArray(values, mask)
            elif col == "inherited":
                data[col] = values.view(np.bool_)
            else:
                data[col] = values
        return pd.DataFrame(data, copy=False)

    @property
    def ranges(self):
        """Range instances: process, rank, pid, tid, domain, name (normalised),
        raw_name, kind, depth, parent (row of the parent, -1), start_ns,
        end_ns, cpu_ns, and the GPU projection gpu_start_ns, gpu_end_ns,
        gpu_proj_ns, gpu_busy_ns, kernel_ns, gpu_ops, kernels (null when the
        instance launched no GPU work)."""
        return self.df("ranges")

    @property
    def gpu_ops(self):
        """Kernels, memcpys and memsets: kind, name, short_name, device,
        stream, start/end/duration_ns, bytes, correlation_id, graph_id,
        launch_tid, launch_ns, inherited, and range (row in `ranges` of the
        innermost range it counts toward, -1 when none) with its range_name."""
        return self.df("gpu_ops")

    @property
    def api_calls(self):
        return self.df("api_calls")

    @property
    def pm_samples(self):
        return self.df("pm_samples")

    # --- report tables ---------------------------------------------------
    def report(self, name: Union[str, Sequence[str]], arrow: bool = False, **options):
        """A report table, with the numbers `tracer report --table NAME`
        prints: summary, ranges, kernels, range-kernels, gpu, memory, api,
        groups, timeline, phases, categories, gaps, top, ranks, comm.

        Options, as the CLI's flags: groups (a file or a shipped name:
        mlora, peft), by, top, sort, filter, domain, by_process, step_range,
        iteration, phase_rules, category_rules, and a further selection on
        top of load()'s: rank, pid, steps, time, main_thread.

        Returns a pandas DataFrame (a pyarrow Table with arrow=True); a name
        that gives several tables (categories; a list of names) returns a
        dict {table name: table}. The table's notes are in df.attrs["notes"]
        (Arrow: schema metadata "notes", JSON)."""
        names = [name] if isinstance(name, str) else list(name)
        tables: List[str] = []
        for n in names:
            for t in n.split(","):
                t = t.strip()
                if t == "all":
                    tables.extend(CORE_TABLES)
                elif t:
                    tables.append(t)
        req = _core.ReportRequest()
        req.tables = tables
        groups = options.pop("groups", None)
        if groups:
            req.groups_file = resolve_groups(groups)
        elif "groups" in tables:
            raise TraceError("the groups table needs groups= (a groups file, or mlora / peft)")
        for key in ("by", "sort", "filter", "domain", "step_range", "phase_rules",
                    "category_rules", "steps", "time", "main_thread"):
            value = options.pop(key, None)
            if value is not None:
                setattr(req, key, str(value))
        req.top = int(options.pop("top", 0) or 0)
        req.by_process = bool(options.pop("by_process", False))
        iteration = options.pop("iteration", None)
        if iteration is not None:
            req.iteration = int(iteration)
        req.ranks = _int_list(options.pop("rank", None), "rank")
        req.pids = _int_list(options.pop("pid", None), "pid")
        if options:
            raise TypeError(f"report() got unexpected options: {', '.join(sorted(options))}")
        built = self._handle.report(req)
        out = {}
        for table_name, title, columns, notes in built:
            out[table_name] = (_report_arrow if arrow else _report_pandas)(title, columns, notes)
        if len(out) == 1:
            return next(iter(out.values()))
        return out

    def __repr__(self) -> str:
        procs = self._handle.processes()
        kernels = sum(p["kernels"] for p in procs)
        ranges = sum(p["ranges"] for p in procs)
        return (f"<tracer.Trace {len(procs)} process(es), {ranges} ranges, "
                f"{kernels} kernels: {', '.join(self.paths)}>")


def _report_arrow(title: str, columns, notes):
    import pyarrow as pa

    arrays, names = [], []
    for col, kind, values, valid in columns:
        names.append(col)
        if valid is None:
            arrays.append(pa.array(values, type=pa.string()
                                   if all(v is None or isinstance(v, str) for v in values) else None))
        else:
            arrays.append(pa.array(values, mask=valid == 0))
    meta = {"title": title, "notes": json.dumps(list(notes))}
    return pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(meta)


def _report_pandas(title: str, columns, notes):
    import pandas as pd

    data = {}
    for col, kind, values, valid in columns:
        if valid is None:
            data[col] = pd.Series(values, dtype=object)
        elif values.dtype.kind == "f":
            data[col] = np.where(valid == 0, np.nan, values)
        elif (valid == 0).any():
            data[col] = pd.arrays.IntegerArray(values, valid == 0)
        else:
            data[col] = values
    df = pd.DataFrame(data, copy=False)
    df.attrs["title"] = title
    df.attrs["notes"] = list(notes)
    return df


def load(paths: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]], *,
         rank=None, pid=None, steps: Optional[str] = None, time: Optional[str] = None,
         step_range: Optional[str] = None, main_thread: Union[str, int] = "auto",
         raw_names: bool = False, name_rules: Optional[str] = None) -> Trace:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise TraceError("load: no trace file given")
    for p in paths:
        if not os.path.exists(p):
            raise FileNotFoundError(2, "No such file or directory", p)
    opts = _core.LoadOptions()
    opts.paths = paths
    opts.ranks = _int_list(rank, "rank")
    opts.pids = _int_list(pid, "pid")
    opts.steps = steps or ""
    opts.time = time or ""
    opts.step_range = step_range or ""
    opts.main_thread = str(main_thread)
    opts.raw_names = bool(raw_names)
    opts.name_rules = name_rules or ""
    return Trace(_core.TraceHandle(opts), paths)
