"""Writes the Parquet dataset of `tracer export --format parquet`.

The tracer CLI reads the traces and sends the rows over this process's stdin
as column batches (framing below, docs/parquet.md "Batch framing"); this
module only checks them against the schema of SCHEMA_VERSION and hands them to
pyarrow's Parquet writer. It needs pyarrow and nothing else, and it runs as a
plain script (`python3 parquet_writer.py DIR`) so that no other part of the
`tracer` package has to be importable.

Layout: DIR/<table>/rank=<R>/part-<P>.parquet (hive partitioning; R = the
process's rank, -1 when it has none; P = the process's index in the export),
DIR/names/part-0.parquet (the dataset's names, shared by every process),
and DIR/_tracer_dataset.json describing the tables (a name starting with "_"
is skipped by Spark, DuckDB globs and pyarrow datasets).

Memory: one batch (at most 128 k rows) at a time; each batch is written as a
row group and dropped.
"""

import json
import os
import struct
import sys

SCHEMA_VERSION = 1

# Per table: (column, type, nullable). Types: int64, float64, string, bool.
# The CLI sends the columns in this order; docs/parquet.md describes them.
TABLES = {
    "processes": [
        ("process", "int64", False), ("pid", "int64", False), ("label", "string", False),
        ("host", "string", False), ("source", "string", False),
        ("source_file", "string", False), ("world_size", "int64", True),
        ("local_rank", "int64", True), ("device", "string", True),
        ("tracer_version", "string", False), ("step_range", "string", True),
    ],
    "threads": [
        ("process", "int64", False), ("tid", "int64", False), ("name", "string", False),
        ("main", "bool", False),
    ],
    # One table for the dataset (not partitioned): ids are shared by every
    # process, so queries group by integers and join names once.
    "names": [
        ("name_id", "int64", False), ("name", "string", False),
        ("short_name", "string", False),
    ],
    "ranges": [
        ("process", "int64", False), ("range_id", "int64", False),
        ("parent_id", "int64", True), ("depth", "int64", False), ("tid", "int64", False),
        ("kind", "string", False), ("domain_id", "int64", False), ("name_id", "int64", False),
        ("raw_name_id", "int64", False), ("start_ns", "int64", False),
        ("end_ns", "int64", False), ("cpu_ns", "int64", False),
        ("gpu_start_ns", "int64", True), ("gpu_end_ns", "int64", True),
        ("gpu_span_ns", "int64", True), ("gpu_busy_ns", "int64", True),
        ("gpu_ops", "int64", False), ("kernels", "int64", False),
        ("kernel_ns", "int64", False), ("step", "int64", True),
    ],
    "gpu_ops": [
        ("process", "int64", False), ("kind", "string", False), ("op_id", "int64", False),
        ("name_id", "int64", True), ("start_ns", "int64", False), ("end_ns", "int64", False),
        ("duration_ns", "int64", False), ("device", "int64", True), ("stream", "int64", True),
        ("correlation_id", "int64", False), ("bytes", "int64", True),
        ("copy_kind", "int64", True), ("graph_id", "int64", True),
        ("launch_tid", "int64", True), ("launch_ns", "int64", True),
        ("range_id", "int64", True), ("stack_id", "int64", False),
        ("attribution", "string", False), ("inherited", "bool", False),
    ],
    "stacks": [
        ("process", "int64", False), ("stack_id", "int64", False),
        ("position", "int64", False), ("range_id", "int64", False), ("own", "bool", False),
    ],
    "api_calls": [
        ("process", "int64", False), ("api_id", "int64", False), ("tid", "int64", False),
        ("domain", "string", False), ("cbid", "int64", False), ("name_id", "int64", False),
        ("start_ns", "int64", False), ("end_ns", "int64", False),
        ("duration_ns", "int64", False), ("correlation_id", "int64", False),
        ("return_value", "int64", False),
    ],
    "pm_samples": [
        ("process", "int64", False), ("device", "int64", False),
        ("metric_id", "int64", False), ("start_ns", "int64", False),
        ("end_ns", "int64", False), ("value", "float64", False),
    ],
}

# Columns with few distinct values per file (ids of names, threads, kinds,
# devices): the ones dictionary-encoded in the large tables. Dictionary
# encoding the others (timestamps, ids of instances) only spends time until
# pyarrow falls back to plain: writing a 1 M-kernel rank's gpu_ops took 3.3x
# the CPU time and gave a 2.2x larger file (bench/parquet/writer_options.py).
# Tables not listed (a few rows per process) dictionary-encode every column.
DICTIONARY_COLUMNS = {
    "ranges": ["process", "depth", "tid", "kind", "domain_id", "name_id", "raw_name_id",
               "step"],
    "gpu_ops": ["process", "kind", "name_id", "device", "stream", "copy_kind", "graph_id",
                "launch_tid", "attribution", "inherited"],
    "stacks": ["process", "position", "own"],
    "api_calls": ["process", "tid", "domain", "cbid", "name_id", "return_value"],
    "pm_samples": ["process", "device", "metric_id"],
}

# Framing type codes (libtracer/analysis/export/column_batch.h).
_TYPE_CODES = {1: "int64", 2: "float64", 3: "string", 4: "bool"}
_FRAMING_VERSION = 1
_UNPARTITIONED = -(2 ** 63)  # ColumnBatch::kUnpartitioned: a table written once


class WriterError(Exception):
    pass


def _fail(message):
    sys.stderr.write("tracer export: " + message + "\n")
    sys.exit(2)


def _import_pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        _fail("--format parquet needs pyarrow for " + sys.executable + " (pip install pyarrow)")
    return pyarrow, pyarrow.parquet


class _Reader:
    def __init__(self, stream):
        self._s = stream

    def exact(self, n):
        data = self._s.read(n)
        if len(data) != n:
            raise WriterError("the batch stream ended early (the tracer CLI stopped)")
        return data

    def unpack(self, fmt):
        return struct.unpack("<" + fmt, self.exact(struct.calcsize("<" + fmt)))

    def name(self):
        (n,) = self.unpack("H")
        return self.exact(n).decode("utf-8")


class DatasetWriter:
    def __init__(self, out_dir, pa, pq, tracer_version=""):
        self.out_dir = out_dir
        self.pa, self.pq = pa, pq
        self.tracer_version = tracer_version
        self._types = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string(),
                       "bool": pa.bool_()}
        self._schemas = {t: self._schema(t, cols) for t, cols in TABLES.items()}
        self._key = None
        self._writer = None
        self.rows = {t: 0 for t in TABLES}
        self.files = {t: 0 for t in TABLES}

    def _schema(self, table, cols):
        fields = [self.pa.field(n, self._types[ty], nullable=nu) for n, ty, nu in cols]
        meta = {"tracer.schema_version": str(SCHEMA_VERSION), "tracer.table": table}
        if self.tracer_version:
            meta["tracer.version"] = self.tracer_version
        return self.pa.schema(fields, metadata=meta)

    def _open(self, table, rank, process):
        key = (table, rank, process)
        if self._key == key:
            return
        self._close()
        folder = os.path.join(self.out_dir, table)
        if rank != _UNPARTITIONED:
            folder = os.path.join(folder, "rank=%d" % rank)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "part-%d.parquet" % process)
        self._writer = self.pq.ParquetWriter(path, self._schemas[table], compression="zstd",
                                             use_dictionary=DICTIONARY_COLUMNS.get(table, True))
        self._key = key
        self.files[table] += 1

    def _close(self):
        if self._writer is not None:
            self._writer.close()
        self._writer, self._key = None, None

    def read_batch(self, r):
        (version,) = r.unpack("I")
        if version != _FRAMING_VERSION:
            raise WriterError("batch framing version %d, this writer reads %d"
                              % (version, _FRAMING_VERSION))
        table = r.name()
        rank, process, ncols, nrows = r.unpack("qIIQ")
        expected = TABLES.get(table)
        if expected is None:
            raise WriterError("unknown table '%s'" % table)
        if ncols != len(expected):
            raise WriterError("table %s: %d columns, schema %d has %d"
                              % (table, ncols, SCHEMA_VERSION, len(expected)))
        pa = self.pa
        arrays = []
        for name, ty, nullable in expected:
            code, has_validity = r.unpack("BB")
            got = r.name()
            if got != name or _TYPE_CODES.get(code) != ty or bool(has_validity) != nullable:
                raise WriterError("table %s: column %s (%s) where schema %d has %s (%s)"
                                  % (table, got, _TYPE_CODES.get(code), SCHEMA_VERSION, name, ty))
            data_bytes = r.unpack("Q")[0] if ty == "string" else None
            validity = pa.py_buffer(r.exact((nrows + 7) // 8)) if nullable else None
            if ty == "string":
                offsets = pa.py_buffer(r.exact(4 * (nrows + 1)))
                values = pa.py_buffer(r.exact(data_bytes))
                arr = pa.Array.from_buffers(pa.string(), nrows, [validity, offsets, values])
            elif ty == "bool":
                # One byte per value on the wire; Arrow packs booleans in bits.
                raw = pa.Array.from_buffers(pa.uint8(), nrows,
                                            [validity, pa.py_buffer(r.exact(nrows))])
                arr = raw.cast(pa.bool_())
            else:
                arr = pa.Array.from_buffers(self._types[ty], nrows,
                                            [validity, pa.py_buffer(r.exact(8 * nrows))])
            arrays.append(arr)
        batch = pa.RecordBatch.from_arrays(arrays, schema=self._schemas[table])
        self._open(table, rank, process)
        self._writer.write_batch(batch)
        self.rows[table] += nrows

    def run(self, stream):
        r = _Reader(stream)
        try:
            while True:
                magic = stream.read(4)
                if magic == b"TPQE":
                    break
                if magic != b"TPQB":
                    raise WriterError("the batch stream ended early (the tracer CLI stopped)"
                                      if len(magic) < 4 else "bad batch magic %r" % magic)
                self.read_batch(r)
        finally:
            self._close()
        self._write_description()

    def _write_description(self):
        tables = {}
        for table, cols in TABLES.items():
            tables[table] = {
                "files": self.files[table], "rows": self.rows[table],
                "columns": [{"name": n, "type": ty, "nullable": nu} for n, ty, nu in cols],
                "partitioning": ("none: part-0.parquet" if table == "names"
                                 else "hive: rank=<R>/part-<process>.parquet"),
            }
        description = {"format": "tracer parquet dataset", "schema_version": SCHEMA_VERSION,
                       "tracer_version": self.tracer_version, "tables": tables}
        with open(os.path.join(self.out_dir, "_tracer_dataset.json"), "w") as f:
            json.dump(description, f, indent=1)
            f.write("\n")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: parquet_writer.py DIR [TRACER_VERSION] < batches\n"
                         "       parquet_writer.py --check   (exit 0 when pyarrow imports)\n")
        return 2
    pa, pq = _import_pyarrow()
    if argv[1] == "--check":
        return 0
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    writer = DatasetWriter(out_dir, pa, pq, argv[2] if len(argv) > 2 else "")
    try:
        writer.run(sys.stdin.buffer)
    except WriterError as e:
        _fail("parquet writer: " + str(e))
    except OSError as e:
        _fail("parquet writer: " + str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
