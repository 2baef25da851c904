"""`tracer export --format parquet` (docs/parquet.md): the dataset of a
generated 4-rank training job (bench/analysis/synth_rank_traces), and of the
real nsys and Kineto traces in ../shared/data when present, is read by
DuckDB with the two queries printed in docs/parquet.md, and their rows must
equal the CLI's `tracer report --table range-kernels` / `--table ranks`
(`--format json`) of the same files. Also: the layout (hive rank folders,
schema version in every file), the refusal to overwrite, tracer.to_parquet,
and the one-line errors when python3 or pyarrow is missing.

Exits 77 (skipped) when pyarrow or duckdb is not importable."""

from __future__ import annotations

import glob
import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
import unittest

import tracer_testing as tt

try:
    import duckdb
    import pyarrow.parquet as pq
except ImportError as e:
    print("pyarrow and duckdb are needed (scripts/setup.sh installs them): %s: skipped" % e,
          flush=True)
    sys.exit(tt.SKIP)

import tracer

CLI = tt.CLI
SYNTH = os.environ.get("TRACER_SYNTH", "")
SHARED = os.environ.get("TRACER_SHARED_DIR",
                        os.path.join(tt.SOURCE_DIR, "..", "shared"))
DOC = os.path.join(tt.SOURCE_DIR, "docs", "parquet.md")


def doc_queries():
    """The SQL blocks of docs/parquet.md marked <!-- query: NAME -->."""
    with open(DOC) as f:
        text = f.read()
    found = re.findall(r"<!-- query: ([\w-]+) -->\s*```sql\n(.*?)```", text, re.S)
    return {name: sql for name, sql in found}


def run_cli(*args, env=None):
    return subprocess.run([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env, timeout=600)


def report_json(files, table):
    done = run_cli("report", *files, "--table", table, "--format", "json", "--top", "0")
    if done.returncode != 0:
        raise AssertionError("tracer report failed: " + done.stderr)
    return json.loads(done.stdout)[table]


def doc_settings(temp_dir):
    """The SET statements docs/parquet.md gives for large datasets, spilling
    to temp_dir."""
    with open(DOC) as f:
        text = f.read()
    block = re.search(r"<!-- settings -->\s*```sql\n(.*?)```", text, re.S).group(1)
    sets = [line.split("--")[0].strip().rstrip(";") for line in block.splitlines()]
    sets = [s for s in sets if s]
    return [re.sub(r"temp_directory = '[^']*'", "temp_directory = '%s'" % temp_dir, s)
            for s in sets]


def query(dataset, name):
    sql = doc_queries()[name].replace("'job_parquet/", "'" + dataset + "/")
    con = duckdb.connect()
    # With the documented settings, as a large dataset is queried.
    for s in doc_settings(os.path.join(os.path.dirname(dataset), "duckdb_spill")):
        con.execute(s)
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row)) for row in cur.fetchall()]


def export(files, out, *extra):
    done = run_cli("export", *files, "--format", "parquet", "-o", out, *extra)
    if done.returncode != 0:
        raise AssertionError("export failed: " + done.stderr)
    return done


class Compare:
    """Row-by-row comparison of the DuckDB rows with the CLI's."""

    def __init__(self, case):
        self.case = case

    def number(self, what, cli, db, rel=0.0, absolute=0.0):
        if cli is None or db is None:
            self.case.assertEqual(cli is None, db is None, what)
            return
        self.case.assertTrue(
            math.isclose(float(cli), float(db), rel_tol=rel, abs_tol=absolute),
            "%s: CLI %r, DuckDB %r" % (what, cli, db))

    def range_kernels(self, cli_rows, db_rows):
        key = lambda r: (r["range"], r["kernel"], r["count"], r["total_ns"])
        self.case.assertGreater(len(cli_rows), 0)
        self.case.assertEqual(len(cli_rows), len(db_rows))
        cli_rows, db_rows = sorted(cli_rows, key=key), sorted(db_rows, key=key)
        for c, d in zip(cli_rows, db_rows):
            what = "%s / %s" % (c["range"], c["kernel"])
            self.case.assertEqual((c["range"], c["kernel"]), (d["range"], d["kernel"]))
            for col in ("range_instances", "count", "total_ns", "min_ns", "max_ns", "avg_ns"):
                self.number(what + " " + col, c[col], d[col])
            # Past 65,536 values the report's median is a histogram bucket's
            # middle (0.4 %) and its stddev comes from running moments.
            exact = c["count"] <= 65536
            self.number(what + " med_ns", c["med_ns"], d["med_ns"], rel=0 if exact else 0.004)
            self.number(what + " stddev_ns", c["stddev_ns"], d["stddev_ns"],
                        rel=0 if exact else 1e-6, absolute=0 if exact else 1)
            self.number(what + " range_share_pct", c["range_share_pct"], d["range_share_pct"],
                        rel=1e-9, absolute=1e-9)

    def ranks(self, cli_rows, db_rows):
        self.case.assertGreater(len(cli_rows), 0)
        by_key = {(r["kind"], r["name"]): r for r in db_rows}
        self.case.assertEqual(sorted(by_key), sorted((r["kind"], r["name"]) for r in cli_rows))
        for c in cli_rows:
            d = by_key[(c["kind"], c["name"])]
            what = "%s %s" % (c["kind"], c["name"])
            self.case.assertEqual(c["ranks"], d["ranks"], what)
            for side in ("cpu", "gpu"):
                for col in ("min_ns", "median_ns", "max_ns"):
                    self.number(what + " " + side + "_" + col, c[side + "_" + col],
                                d[side + "_" + col])
                self.case.assertEqual(c[side + "_slowest"], d[side + "_slowest"], what)
                self.number(what + " " + side + "_spread_pct", c[side + "_spread_pct"],
                            d[side + "_spread_pct"], rel=1e-9, absolute=1e-9)


class SyntheticJob(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not CLI or not SYNTH:
            raise unittest.SkipTest("TRACER_CLI and TRACER_SYNTH are set by ctest")
        cls.work = tt.work_dir("parquet")
        cls.traces_dir = os.path.join(cls.work, "job")
        shutil.rmtree(cls.traces_dir, ignore_errors=True)
        subprocess.run([SYNTH, "--ranks", "4", "--kernels", "3000", "--layers", "4",
                        "--out", cls.traces_dir], check=True, stdout=subprocess.DEVNULL)
        cls.files = sorted(glob.glob(os.path.join(cls.traces_dir, "*.trace")))
        cls.dataset = os.path.join(cls.work, "job_parquet")
        shutil.rmtree(cls.dataset, ignore_errors=True)
        export(cls.files, cls.dataset)

    def test_layout_and_schema_version(self):
        with open(os.path.join(self.dataset, "_tracer_dataset.json")) as f:
            desc = json.load(f)
        self.assertEqual(desc["schema_version"], 1)
        for table in ("processes", "ranges", "gpu_ops", "stacks", "api_calls"):
            parts = sorted(os.listdir(os.path.join(self.dataset, table)))
            self.assertEqual(parts, ["rank=0", "rank=1", "rank=2", "rank=3"], table)
            f = glob.glob(os.path.join(self.dataset, table, "rank=2", "*.parquet"))
            self.assertEqual(len(f), 1)
            meta = pq.read_schema(f[0]).metadata
            self.assertEqual(meta[b"tracer.schema_version"], b"1")
            self.assertEqual(meta[b"tracer.table"], table.encode())
        # Names: one table for the dataset, each name once.
        names = pq.read_table(os.path.join(self.dataset, "names", "part-0.parquet"))
        self.assertEqual(names.schema.metadata[b"tracer.schema_version"], b"1")
        self.assertEqual(len(set(names.column("name").to_pylist())), names.num_rows)
        self.assertEqual(names.column("name_id").to_pylist(), list(range(names.num_rows)))
        con = duckdb.connect()
        ops = "read_parquet('%s/gpu_ops/*/*.parquet', hive_partitioning = true)" % self.dataset
        per_rank = con.execute("SELECT rank, kind, count(*) FROM %s GROUP BY ALL ORDER BY ALL"
                               % ops).fetchall()
        # synth_rank_traces: whole steps of 4 layers x 10 kernels forward and
        # backward + 2, each with one memcpy and one memset.
        steps = math.ceil(3000 / 82)
        expected = []
        for rank in range(4):
            expected += [(rank, "kernel", steps * 82), (rank, "memcpy", steps),
                         (rank, "memset", steps)]
        self.assertEqual(per_rank, expected)
        self.assertEqual(desc["tables"]["gpu_ops"]["rows"], 4 * steps * 84)
        # PM samples: one per step (value 40 + step % 50), on the rank's device.
        pm = con.execute(
            "SELECT rank, count(*), min(value), max(value), min(device), any_value(n.name) "
            "FROM read_parquet('%s/pm_samples/*/*.parquet', hive_partitioning = true) "
            "JOIN read_parquet('%s/names/*.parquet') n ON n.name_id = metric_id "
            "GROUP BY rank ORDER BY rank" % (self.dataset, self.dataset)).fetchall()
        self.assertEqual(pm, [(r, steps, 40.0, 40.0 + min(steps - 1, 49), r,
                               "sm__throughput.avg.pct_of_peak_sustained_elapsed")
                              for r in range(4)])
        # Every op of a recorded stream has its launch record.
        self.assertEqual(con.execute("SELECT DISTINCT attribution FROM %s" % ops).fetchall(),
                         [("launch_record",)])
        # Steps: the train_step instances, numbered from 0 on each rank.
        rng = "read_parquet('%s/ranges/*/*.parquet', hive_partitioning = true)" % self.dataset
        self.assertEqual(
            con.execute("SELECT rank, count(step), min(step), max(step) FROM %s "
                        "GROUP BY rank ORDER BY rank" % rng).fetchall(),
            [(r, steps, 0, steps - 1) for r in range(4)])

    def test_range_kernels_query_equals_report(self):
        Compare(self).range_kernels(report_json(self.files, "range-kernels"),
                                    query(self.dataset, "range-kernels"))

    def test_ranks_query_equals_report(self):
        cli = report_json(self.files, "ranks")
        Compare(self).ranks(cli, query(self.dataset, "ranks"))
        # The straggler is found: rank 3's kernels run 20 % longer.
        step_all = [r for r in cli if r["kind"] == "steps"]
        self.assertEqual(len(step_all), 1)
        self.assertTrue(step_all[0]["gpu_slowest"].startswith("rank 3 "), step_all[0])

    def test_queries_hold_no_group_in_memory(self):
        # median(), quantiles, count(DISTINCT) and list aggregates keep every
        # value of a group in memory and do not spill: at 16 M kernels
        # median() ran out of a 4 GB limit. The documented queries use hash
        # aggregates and joins only (DuckDB spills those to temp_directory).
        holistic = re.compile(r"\b(median|quantile\w*|mode|list|array_agg|string_agg)\s*\(|"
                              r"\(\s*DISTINCT\b", re.I)
        code = lambda sql: "\n".join(line.split("--")[0] for line in sql.splitlines())
        queries = doc_queries()
        self.assertIsNone(holistic.search(code(queries["range-kernels"])))
        # The straggler table's medians are over one value per rank: each
        # rank's sums first (per_rank), then the spread over them.
        ranks = code(queries["ranks"])
        self.assertEqual([m.start() > ranks.index("spread AS") for m in holistic.finditer(ranks)],
                         [True, True])
        self.assertIn("FROM per_rank", ranks[ranks.index("spread AS"):])
        settings = doc_settings("/tmp/x")
        self.assertIn("SET memory_limit = '4GB'", settings)
        self.assertIn("SET temp_directory = '/tmp/x'", settings)
        # Past the limit the query spills instead of failing: the range x
        # kernel query under a limit of a few tens of MB gives the report's
        # numbers. (DuckDB 2.0 needs more than 24 MB of buffers for this plan
        # before it spills at all; 1.x ran it in 24 MB.)
        con = duckdb.connect()
        for s in settings:
            con.execute(s)
        con.execute("SET memory_limit = '48MB'")
        con.execute("SET threads = 1")
        con.execute("SET temp_directory = '%s'" % os.path.join(self.work, "tight_spill"))
        cur = con.execute(doc_queries()["range-kernels"].replace("'job_parquet/",
                                                                 "'" + self.dataset + "/"))
        cols = [d[0] for d in cur.description]
        Compare(self).range_kernels(report_json(self.files, "range-kernels"),
                                    [dict(zip(cols, row)) for row in cur.fetchall()])

    def test_report_refuses_to_read_whole_what_does_not_fit(self):
        # TRACER_REPORT_MEMORY stands for a machine whose memory the whole
        # trace would not fit (256 ranks x 1 M kernels: about 90 GB).
        small = dict(os.environ, TRACER_REPORT_MEMORY="1M")
        whole = run_cli("report", *self.files, "--format", "json")
        self.assertEqual(whole.returncode, 0, whole.stderr)
        whole = json.loads(whole.stdout)
        self.assertIn("metrics", whole)
        # The default tables: bounded, all but metrics (PM samples need the
        # whole trace), with the same numbers, and one line saying so.
        done = run_cli("report", *self.files, "--format", "json", env=small)
        self.assertEqual(done.returncode, 0, done.stderr)
        bounded = json.loads(done.stdout)
        self.assertNotIn("metrics", bounded)
        for table in ("summary", "ranges", "kernels", "gpu", "memory", "api"):
            self.assertEqual(bounded[table], whole[table], table)
        self.assertIn("the metrics table is left out", done.stderr)
        self.assertIn("of the 1 MiB available", done.stderr)
        # The ranks table: one file read whole at a time, the same numbers.
        done = run_cli("report", *self.files, "--table", "ranks", "--format", "json", env=small)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("with bounded memory", done.stderr)
        self.assertEqual(json.loads(done.stdout)["ranks"], report_json(self.files, "ranks"))
        # A table only the whole trace gives: refused at once, in one line.
        done = run_cli("report", *self.files, "--table", "timeline", env=small)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stdout, "")
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        self.assertIn("table 'timeline' is computed from the whole trace", done.stderr)
        self.assertIn("--no-stream reads it whole anyway", done.stderr)
        # --no-stream reads it whole all the same.
        done = run_cli("report", *self.files, "--table", "ranks", "--format", "json",
                       "--no-stream", env=small)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["ranks"], report_json(self.files, "ranks"))
        done = run_cli("report", *self.files, "--table", "timeline", "--format", "json",
                       "--no-stream", env=small)
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_refuses_to_overwrite(self):
        done = run_cli("export", *self.files, "--format", "parquet", "-o", self.dataset)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr.strip().count("\n"), 0, done.stderr)
        self.assertIn("not empty", done.stderr)
        self.assertIn("--force-overwrite", done.stderr)
        # Forced, with fewer inputs: the old partitions are gone.
        other = os.path.join(self.work, "forced")
        shutil.copytree(self.dataset, other, dirs_exist_ok=True)
        export(self.files[:2], other, "--force-overwrite")
        self.assertEqual(sorted(os.listdir(os.path.join(other, "ranges"))), ["rank=0", "rank=1"])
        shutil.rmtree(other)

    def test_unreadable_input_leaves_no_dataset(self):
        out = os.path.join(self.work, "unreadable")
        shutil.rmtree(out, ignore_errors=True)
        missing = os.path.join(self.work, "no-such.trace")
        done = run_cli("export", missing, "--format", "parquet", "-o", out)
        self.assertEqual(done.returncode, 1)
        self.assertIn("no-such.trace: cannot open", done.stderr)
        self.assertTrue(done.stderr.rstrip().endswith("tracer export: nothing could be read"),
                        done.stderr)
        self.assertFalse(os.path.exists(out))

    def test_python_entry(self):
        out = os.path.join(self.work, "py_parquet")
        shutil.rmtree(out, ignore_errors=True)
        env_before = os.environ.get("TRACER_CLI")
        os.environ["TRACER_CLI"] = CLI
        try:
            self.assertEqual(tracer.to_parquet(self.files[1], out), out)
            with self.assertRaises(tracer.parquet.ExportError) as e:
                tracer.to_parquet(self.files[1], out)
            self.assertIn("not empty", str(e.exception))
        finally:
            if env_before is None:
                del os.environ["TRACER_CLI"]
        t = pq.read_table(os.path.join(out, "ranges", "rank=1"))
        cli = report_json([self.files[1]], "summary")
        self.assertEqual(t.num_rows, cli[0]["ranges"])
        shutil.rmtree(out)

    def test_missing_python_or_pyarrow(self):
        out = os.path.join(self.work, "nopy")
        shutil.rmtree(out, ignore_errors=True)
        env = dict(os.environ, TRACER_PYTHON="/nonexistent/python3")
        done = run_cli("export", self.files[0], "--format", "parquet", "-o", out, env=env)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        self.assertIn("needs python3 with pyarrow", done.stderr)
        # A python3 that cannot import pyarrow (site-packages off).
        wrapper = os.path.join(self.work, "python-without-site")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec %s -S -I \"$@\"\n" % sys.executable)
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
        if subprocess.run([wrapper, "-c", "import pyarrow"],
                          stderr=subprocess.DEVNULL).returncode == 0:
            self.skipTest("pyarrow is importable without site-packages here")
        done = run_cli("export", self.files[0], "--format", "parquet", "-o", out,
                       env=dict(os.environ, TRACER_PYTHON=wrapper))
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr.count("\n"), 1, done.stderr)
        self.assertIn("needs pyarrow", done.stderr)
        self.assertFalse(os.path.exists(out))


class RealTraces(unittest.TestCase):
    """The real nsys exports and Kineto trace of ../shared/data."""

    def check(self, name, files, ranks_too=False):
        files = [os.path.join(SHARED, "data", f) for f in files]
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            self.skipTest("real traces not present (../shared/data): %s" % missing[0])
        out = os.path.join(tt.work_dir("parquet"), name)
        shutil.rmtree(out, ignore_errors=True)
        export(files, out)
        Compare(self).range_kernels(report_json(files, "range-kernels"),
                                    query(out, "range-kernels"))
        if ranks_too:
            Compare(self).ranks(report_json(files, "ranks"), query(out, "ranks"))
        shutil.rmtree(out)

    def test_nsys_workflow(self):
        self.check("workflow", ["nsys/workflow.sqlite"])

    def test_nsys_cudf_domains(self):
        self.check("cudf", ["nsys/cudf-groupby.sqlite"], ranks_too=True)

    def test_nsys_two_gpus(self):
        self.check("h100", ["nsys/h100_2gpu_mfu.sqlite"], ranks_too=True)

    def test_kineto_worker_thread_inheritance(self):
        self.check("kineto", ["kineto/resnet_ddp_rank0.pt.trace.json.gz"], ranks_too=True)


if __name__ == "__main__":
    if not CLI:
        print("TRACER_CLI is not set (ctest sets it): skipped", flush=True)
        sys.exit(tt.SKIP)
    unittest.main(verbosity=2)
