"""tracer.load (the Python API over the C++ reader and analysis): every
report table equals `tracer report --format json` on the same input, the
record tables agree with those reports, columns reach NumPy / pyarrow /
pandas without a copy, and bad input raises one clear exception.

Inputs: the traces bundled with the tests (a recorded stream, a synthetic nsys
SQLite export and a Kineto trace, plus a stream `tracer import` writes from
the export) and, when present beside the checkout, the real nsys and Kineto
traces of the shared data. Exits 77 (skipped) when the extension, pyarrow or
pandas is missing, or the CLI was not built.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

import tracer_testing as tt

SHARED = os.environ.get("TRACER_SHARED_DIR", os.path.join(tt.SOURCE_DIR, "..", "shared"))
BUNDLED = {
    "stream_v1": os.path.join(tt.SOURCE_DIR, "tests", "analysis", "data", "v1_ranges_marks.trace"),
    "nsys_synthetic": os.path.join(tt.SOURCE_DIR, "tests", "fuzz", "corpus", "fuzz_nsys",
                                   "synthetic.sqlite"),
    "kineto_unit": os.path.join(tt.SOURCE_DIR, "tests", "fuzz", "corpus", "fuzz_kineto",
                                "unit_test.json.gz"),
}
REAL = {
    "workflow": os.path.join(SHARED, "data", "nsys", "workflow.sqlite"),
    "cudf": os.path.join(SHARED, "data", "nsys", "cudf-groupby.sqlite"),
    "h100": os.path.join(SHARED, "data", "nsys", "h100_2gpu_mfu.sqlite"),
    "resnet": os.path.join(SHARED, "data", "kineto", "resnet_ddp_rank0.pt.trace.json.gz"),
}
TABLES = ["summary", "ranges", "kernels", "range-kernels", "gpu", "memory", "api", "timeline",
          "phases", "categories", "gaps", "top", "ranks", "comm"]

try:
    import numpy as np
    import pandas as pd  # noqa: F401
    import pyarrow as pa
    import tracer
    from tracer import _core  # noqa: F401
except ImportError as e:  # the extension is built by the project's CMake when nanobind is found
    print("skipped: " + str(e))
    sys.exit(tt.SKIP)


def cli_json(path, tables, *flags):
    """(tables by name, None) from `tracer report --format json`, or (None,
    the first error line) when it fails."""
    out = subprocess.run([tt.CLI, "report", *([path] if isinstance(path, str) else path),
                          "--table", ",".join(tables), "--format", "json", "--no-stream",
                          *flags], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        line = out.stderr.strip().splitlines()[0]
        return None, line[len("tracer report: "):] if line.startswith("tracer report: ") else line
    return json.loads(out.stdout), None


def import_streams(sqlite_path):
    """The export as tracer streams (`tracer import`: one file per process
    of the export, NAME.PID.trace): the recorded-stream reader path."""
    prefix = os.path.join(tt.work_dir("api"), os.path.basename(sqlite_path))
    found = lambda: sorted(glob.glob(prefix + ".*.trace"))  # noqa: E731
    if not found():
        subprocess.run([tt.CLI, "import", sqlite_path, "-o", prefix + ".trace"], check=True,
                       capture_output=True, timeout=300)
    return found()


class ReportTablesMatchTheCli(unittest.TestCase):
    """Each report table, cell for cell, against the CLI's JSON."""

    def compare(self, path, tables=TABLES, load_options=None, report_options=None, flags=()):
        trace = tracer.load(path, **(load_options or {}))
        for name in tables:
            with self.subTest(path=path, table=name, flags=flags):
                expected, error = cli_json(path, [name], *flags)
                if error is not None:
                    with self.assertRaises(tracer.TraceError) as raised:
                        trace.report(name, arrow=True, **(report_options or {}))
                    self.assertEqual(str(raised.exception), error.removeprefix("error: "))
                    continue
                got = trace.report(name, arrow=True, **(report_options or {}))
                if not isinstance(got, dict):
                    got = {name: got}
                self.assertEqual(sorted(got), sorted(k for k in expected if not k.endswith("_notes")))
                for table_name, table in got.items():
                    self.assertEqual(table.to_pylist(), expected[table_name], table_name)
                    notes = json.loads(table.schema.metadata[b"notes"])
                    self.assertEqual(notes, expected.get(table_name + "_notes", []))
        return trace

    def test_bundled_traces(self):
        for key, path in BUNDLED.items():
            self.compare(path)

    def test_imported_streams(self):
        streams = import_streams(BUNDLED["nsys_synthetic"])
        self.assertEqual(len(streams), 2)
        self.compare(streams[0])
        self.compare(streams)  # several files, merged per process

    def test_groups(self):
        path = REAL["h100"] if os.path.exists(REAL["h100"]) else BUNDLED["nsys_synthetic"]
        self.compare(path, ["groups"], report_options={"groups": "mlora"},
                     flags=("--groups", "mlora"))
        self.compare(path, ["groups"], report_options={"groups": "peft", "by": "layer_id"},
                     flags=("--groups", "peft", "--by", "layer_id"))

    def test_options(self):
        path = REAL["resnet"]
        if not os.path.exists(path):
            self.skipTest("no shared Kineto trace at " + path)
        tables = ["ranges", "kernels", "gpu", "phases", "comm"]
        # The same selection given to load() and to report(); the trace's
        # steps are ProfilerStep#101..#105, numbered by their names.
        self.compare(path, tables, load_options={"steps": "102-104"}, flags=("--steps", "102-104"))
        self.compare(path, tables, report_options={"steps": "102-104"},
                     flags=("--steps", "102-104"))
        self.compare(path, ["ranges", "kernels"], report_options={"time": "10ms:"},
                     flags=("--time", "10ms:"))
        self.compare(path, ["ranges", "kernels", "api"],
                     report_options={"top": 5, "sort": "count", "filter": "Optimizer|forward"},
                     flags=("--top", "5", "--sort", "count", "--filter", "Optimizer|forward"))
        self.compare(path, ["ranges"], report_options={"rank": 0, "by": "rank"},
                     flags=("--rank", "0", "--by", "rank"))
        self.compare(path, ["ranges", "gpu"], report_options={"main_thread": "off"},
                     flags=("--main-thread", "off"))

    def test_real_traces(self):
        found = [p for p in REAL.values() if os.path.exists(p)]
        if not found:
            self.skipTest("no shared traces under " + os.path.join(SHARED, "data"))
        for path in found:
            self.compare(path)

    def test_several_files(self):
        paths = [BUNDLED["nsys_synthetic"], BUNDLED["kineto_unit"]]
        self.compare(paths, ["summary", "ranges", "kernels", "ranks"])


class RecordTables(unittest.TestCase):
    def trace(self):
        path = REAL["cudf"] if os.path.exists(REAL["cudf"]) else BUNDLED["nsys_synthetic"]
        return path, tracer.load(path)

    def test_ranges_agree_with_the_ranges_and_gpu_reports(self):
        path, t = self.trace()
        ranges = t.ranges
        report, _ = cli_json(path, ["ranges", "gpu", "summary"])
        by_name = {(r["domain"], r["range"]): r for r in report["ranges"]}
        self.assertEqual(len(ranges), sum(r["ranges"] for r in report["summary"]))
        grouped = ranges.groupby(["domain", "name"], observed=True)
        totals = grouped["cpu_ns"].sum()
        counts = grouped.size()
        self.assertEqual(len(totals), len(by_name))
        for (domain, name), total in totals.items():
            row = by_name[(domain, name)]
            self.assertEqual(int(total), row["cpu_total_ns"], name)
            self.assertEqual(int(counts[(domain, name)]), row["instances"], name)
        gpu = {(r["domain"], r["range"]): r for r in report["gpu"]}
        proj = ranges.dropna(subset=["gpu_proj_ns"]).groupby(["domain", "name"], observed=True)
        sums = proj[["gpu_proj_ns", "gpu_busy_ns", "kernel_ns", "gpu_ops"]].sum()
        self.assertEqual(set(sums.index), {k for k, r in gpu.items() if r["proj_instances"] > 0})
        for key, row in sums.iterrows():
            self.assertEqual(int(row["gpu_proj_ns"]), gpu[key]["proj_total_ns"], key)
            self.assertEqual(int(row["gpu_busy_ns"]), gpu[key]["busy_ns"], key)
            self.assertEqual(int(row["kernel_ns"]), gpu[key]["kernel_ns"], key)
            self.assertEqual(int(row["gpu_ops"]), gpu[key]["ops"], key)
        # Parents are rows of the same table, one level up.
        has_parent = ranges[ranges["parent"] >= 0]
        parents = ranges.iloc[has_parent["parent"].to_numpy()]
        np.testing.assert_array_equal(parents["depth"].to_numpy() + 1, has_parent["depth"].to_numpy())
        self.assertTrue((parents["start_ns"].to_numpy() <= has_parent["start_ns"].to_numpy()).all())

    def test_gpu_ops_agree_with_the_kernels_and_memory_reports(self):
        path, t = self.trace()
        ops = t.gpu_ops
        report, _ = cli_json(path, ["kernels", "memory", "summary"])
        kernels = ops[ops["kind"] == "kernel"]
        self.assertEqual(len(kernels), sum(r["count"] for r in report["kernels"]))
        self.assertEqual(int(kernels["duration_ns"].sum()),
                         sum(r["total_ns"] for r in report["kernels"]))
        by_name = kernels.groupby("full_name", observed=True)["duration_ns"].sum()
        expected = {}
        for r in report["kernels"]:
            expected[r["full_name"]] = expected.get(r["full_name"], 0) + r["total_ns"]
        self.assertEqual({k: int(v) for k, v in by_name.items()}, expected)
        shorts = set(kernels["short_name"].astype(str))
        self.assertEqual(shorts, {r["kernel"] for r in report["kernels"]})
        mem = ops[ops["kind"] != "kernel"].groupby("name", observed=True)["bytes"].sum()
        for r in report["memory"]:
            self.assertEqual(int(mem[r["operation"]]), r["bytes"], r["operation"])
        # Attributed ops point at a range instance that launched them.
        attributed = ops[ops["range"] >= 0]
        self.assertGreater(len(attributed), 0)
        rows = t.ranges.iloc[attributed["range"].to_numpy()]
        np.testing.assert_array_equal(rows["name"].astype(str).to_numpy(),
                                      attributed["range_name"].astype(str).to_numpy())
        outside = sum(r["ops_outside_ranges"] + r["unattributed_ops"] for r in report["summary"])
        self.assertEqual(len(ops) - len(attributed), outside)

    def test_api_calls_agree_with_the_api_report(self):
        path, t = self.trace()
        api = t.api_calls
        report, _ = cli_json(path, ["api"])
        self.assertEqual(len(api), sum(r["calls"] for r in report["api"]))
        totals = api.groupby("name", observed=True)["duration_ns"].sum()
        for r in report["api"]:
            self.assertEqual(int(totals[r["function"]]), r["total_ns"], r["function"])

    def test_pm_samples_table_has_its_columns(self):
        _, t = self.trace()
        self.assertEqual(t.table("pm_samples").column_names,
                         ["process", "rank", "pid", "device", "metric", "start_ns", "end_ns", "value"])


class PmSamples(unittest.TestCase):
    """A trace that holds PM samples (a generated 2-rank job: one SM
    throughput sample per step, bench/analysis/synth_rank_traces): every
    sample reaches `pm_samples` with its rank, device, metric, times and
    value, row for row as `tracer export --format parquet` writes them."""

    def test_samples_of_a_generated_job(self):
        synth = os.environ.get("TRACER_SYNTH", "")
        if not synth:
            self.skipTest("TRACER_SYNTH is not set (ctest sets it when the benchmarks are built)")
        work = tt.work_dir("api_pm")
        job = os.path.join(work, "job")
        shutil.rmtree(job, ignore_errors=True)
        subprocess.run([synth, "--ranks", "2", "--kernels", "2000", "--layers", "2", "--out", job],
                       check=True, stdout=subprocess.DEVNULL, timeout=300)
        files = sorted(glob.glob(os.path.join(job, "*.trace")))
        self.assertEqual(len(files), 2)
        pm = tracer.load(files).pm_samples
        self.assertGreater(len(pm), 2)
        self.assertEqual(sorted(pm["rank"].unique().tolist()), [0, 1])
        self.assertTrue((pm["end_ns"] > pm["start_ns"]).all())
        self.assertEqual(pm["metric"].nunique(), 1)
        # One sample per step of each rank: as many as the ranks' steps.
        ranges = tracer.load(files).ranges
        self.assertEqual(len(pm), int((ranges["name"] == "train_step").sum()))

        dataset = os.path.join(work, "job_parquet")
        out = subprocess.run([tt.CLI, "export", *files, "--format", "parquet", "-o", dataset,
                              "--force-overwrite"], capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            self.skipTest("parquet export unavailable: " + out.stderr.strip().splitlines()[-1])
        import pyarrow.dataset as ds
        exported = ds.dataset(os.path.join(dataset, "pm_samples"), format="parquet",
                              partitioning="hive").to_table().to_pandas()
        names = ds.dataset(os.path.join(dataset, "names"), format="parquet").to_table().to_pandas()
        exported["metric"] = exported["metric_id"].map(dict(zip(names["name_id"], names["name"])))
        key = ["rank", "device", "start_ns", "end_ns"]
        mine = pm.assign(metric=pm["metric"].astype(str))[key + ["metric", "value"]]
        theirs = exported[key + ["metric", "value"]]
        mine = mine.astype({"rank": "int64", "device": "int64"}).sort_values(key)
        theirs = theirs.astype({"rank": "int64", "device": "int64"}).sort_values(key)
        self.assertEqual(mine.values.tolist(), theirs.values.tolist())


# An mLoRA-shaped program for the README's example: 8 steps of forward /
# backward / optimizer holding per-layer base and adapter ranges.
NOTEBOOK_PROGRAM = """
import nvtx
for step in range(8):
    with nvtx.annotate("step"):
        for phase, prefix in (("forward", "f"), ("backward", "b")):
            with nvtx.annotate(phase):
                for layer in range(2):
                    for part in ("linear", "lora_a_alpaca", "lora_b_alpaca"):
                        with nvtx.annotate(f"{prefix}_{part}_{layer}"):
                            sum(range(2000))
        with nvtx.annotate("optimizer"):
            sum(range(2000))
"""


class ReadmeExample(unittest.TestCase):
    """The README's notebook example, as a user pastes it, on a traced
    program with steps and LoRA ranges (matplotlib's part only when it is
    installed, as the example itself does)."""

    def test_notebook_example_runs(self):
        with open(os.path.join(tt.SOURCE_DIR, "README.md")) as f:
            readme = f.read()
        section = readme[readme.index("### In a notebook"):]
        code = section[section.index("```python\n") + len("```python\n"):]
        code = code[:code.index("```")]
        self.assertIn("tracer.load(\"run.trace\")", code)
        try:
            import nvtx  # noqa: F401
        except ImportError:
            self.skipTest("the nvtx package is not importable (scripts/setup.sh installs it)")
        work = tt.work_dir("api_readme")
        for old in glob.glob(os.path.join(work, "*")):
            os.remove(old)
        with open(os.path.join(work, "program.py"), "w") as f:
            f.write(NOTEBOOK_PROGRAM)
        traced = subprocess.run([tt.CLI, "run", "--no-cuda", "-o", "run.trace", sys.executable,
                                 "program.py"], cwd=work, capture_output=True, text=True,
                                timeout=300)
        self.assertEqual(traced.returncode, 0, traced.stderr)
        # What the example shows, checked after it ran.
        checks = ("\nassert len(steps) == 8, steps\n"
                  "assert (steps.cpu_ns > 0).all()\n"
                  "g = t.report('groups', groups='mlora', by='layer_id')\n"
                  "assert len(g) > 0 and set(g.layer_id.astype(str)) >= {'0', '1'}, g\n"
                  "assert len(t.report('ranges', steps='5-')) > 0\n")
        with open(os.path.join(work, "example.py"), "w") as f:
            f.write(code + checks)
        env = dict(os.environ, MPLBACKEND="Agg",
                   PYTHONPATH=os.pathsep.join(filter(None, [
                       os.path.join(tt.SOURCE_DIR, "python"), os.environ.get("PYTHONPATH")])))
        ran = subprocess.run([sys.executable, "example.py"], cwd=work, env=env,
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(ran.returncode, 0, ran.stdout + ran.stderr)


class ZeroCopy(unittest.TestCase):
    def test_columns_borrow_the_cpp_buffers(self):
        t = tracer.load(BUNDLED["nsys_synthetic"])
        cols = t.columns("gpu_ops")
        start = cols["start_ns"]
        self.assertGreater(len(start), 0)
        self.assertFalse(start.flags.owndata)  # NumPy did not allocate it
        base = start.base
        self.assertNotIsInstance(base, np.ndarray)  # a view of the extension's buffer
        # pyarrow and pandas wrap the same memory.
        table = t.table("gpu_ops")
        buf = table.column("start_ns").chunk(0).buffers()[1]
        self.assertEqual(buf.address, start.ctypes.data)
        codes = table.column("name").chunk(0).indices.buffers()[1]
        self.assertEqual(codes.address, cols["name"].ctypes.data)
        df = t.df("gpu_ops")
        self.assertTrue(np.shares_memory(df["start_ns"].to_numpy(), start))
        # The buffers outlive the Trace that made them.
        expected = start.copy()
        del t, cols, table, df
        np.testing.assert_array_equal(start, expected)

    def test_strings_are_dictionary_encoded(self):
        t = tracer.load(BUNDLED["nsys_synthetic"])
        table = t.table("ranges")
        name = table.column("name")
        self.assertTrue(pa.types.is_dictionary(name.type))
        self.assertEqual(name.type.index_type, pa.int32())
        self.assertLessEqual(len(name.chunk(0).dictionary), len(table))


class SharesAProcess(unittest.TestCase):
    def test_with_torch_and_protobuf(self):
        """torch (its own protobuf inside) and Python's protobuf loaded first,
        then the extension: each keeps its symbols."""
        if not tt.have_torch():
            self.skipTest("torch is not importable")
        code = ("import torch, google.protobuf.descriptor_pb2 as d, tracer\n"
                "m = d.FileDescriptorProto(name='x.proto'); assert d.FileDescriptorProto.FromString("
                "m.SerializeToString()).name == 'x.proto'\n"
                "t = tracer.load(%r)\n"
                "print(int(t.report('kernels', arrow=True).column('count').to_numpy().sum()),"
                " float(torch.ones(3).sum()))\n" % BUNDLED["nsys_synthetic"])
        env = dict(os.environ, PYTHONPATH=os.path.join(tt.SOURCE_DIR, "python"))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split(), ["3", "3.0"])


class Errors(unittest.TestCase):
    def test_missing_file(self):
        with self.assertRaises(FileNotFoundError):
            tracer.load("/nonexistent/run.trace")

    def test_corrupt_trace_gives_the_cli_line(self):
        bad = os.path.join(tt.work_dir("api"), "corrupt.trace")
        with open(bad, "wb") as f:
            f.write(b"\x00garbage that is no trace at all\n" * 10)
        expected, error = cli_json(bad, ["summary"])
        self.assertIsNone(expected)
        with self.assertRaises(tracer.TraceError) as raised:
            tracer.load(bad)
        message = str(raised.exception)
        self.assertEqual(message, error)
        self.assertNotIn("\n", message)
        self.assertIsInstance(raised.exception, ValueError)

    def test_bad_options(self):
        path = BUNDLED["nsys_synthetic"]
        bad_rules = os.path.join(tt.work_dir("api"), "bad_names.rules")
        with open(bad_rules, "w") as f:
            f.write("fwd -> f\n(unclosed -> x\n")
        missing_rules = os.path.join(tt.work_dir("api"), "no_such.rules")
        for flags, kwargs in ((("--steps", "x-y"), {"steps": "x-y"}),
                              (("--time", "later"), {"time": "later"}),
                              (("--rank", "7"), {"rank": 7}),
                              (("--name-rules", bad_rules), {"name_rules": bad_rules}),
                              (("--name-rules", missing_rules), {"name_rules": missing_rules})):
            _, error = cli_json(path, ["summary"], *flags)
            with self.assertRaises(tracer.TraceError) as raised:
                tracer.load(path, **kwargs)
            self.assertEqual(str(raised.exception), error)
        t = tracer.load(path)
        with self.assertRaises(tracer.TraceError):
            t.report("nonsense")
        with self.assertRaises(tracer.TraceError):
            t.report("groups", groups="no-such-groups")
        with self.assertRaises(tracer.TraceError):
            t.report("ranges", filter="(")


if __name__ == "__main__":
    if not tt.CLI:
        print("skipped: TRACER_CLI is not set (the tracer CLI is built with the tests)")
        sys.exit(tt.SKIP)
    unittest.main(verbosity=2)
