"""`tracer report --format html` in a real browser: headless Chromium (the
system's, driven by selenium through the system chromedriver) opens the page
from disk with no network, and the test checks that it loads with no console
error, that every chart renders (SVG with a non-zero size; a screenshot of
the whole page is kept in the test's output folder), that a flame-graph hover
shows the range's name and duration, and that every number the page shows
(table cells and chart elements, read from the DOM) equals the CLI's
`--format json` output for the same tables.

Inputs: the bundled C++ sample (lora_step) recorded by `tracer run`; a
two-rank PyTorch-profiler (Kineto) trace written here with 20,000 distinct
op names (the page stays small: rows are capped, and the page says so); and
the real traces in ../shared/data when present (a 2-GPU nsys export, a
Kineto ResNet trace). Exits 77 (skipped) when chromium, chromedriver or
selenium is missing."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import unittest

from tracer_testing import CLI, LIB, SKIP, SOURCE_DIR, clean_env, run, work_dir

SHARED = os.environ.get("TRACER_SHARED_DIR", os.path.join(SOURCE_DIR, "..", "shared"))
SAMPLE_BIN = os.environ.get("TRACER_SAMPLE_BIN", "")
CHROMIUM = os.environ.get("TRACER_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser") or ""
CHROMEDRIVER = os.environ.get("TRACER_CHROMEDRIVER") or shutil.which("chromedriver") or ""
OUT = work_dir("html_report")


def missing_browser() -> str:
    if not CHROMIUM:
        return "chromium is not installed (Debian package chromium)"
    if not CHROMEDRIVER:
        return "chromedriver is not installed (Debian package chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not importable (pip install selenium)"
    return ""


def make_driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--disable-extensions", "--no-first-run"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def tracer(*args) -> str:
    r = run([CLI, *args], env=clean_env(), timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"tracer {' '.join(args)} failed ({r.returncode}):\n{r.stdout}")
    return r.stdout


# Reads, in the page, every data table (its column names, the row count the
# CLI has, each cell's raw value and text) and every chart element.
READ_DOM = r"""
const out = {tables: {}, bars: [], segs: [], frames: [], spread: [], charts: {}};
for (const t of document.querySelectorAll('table.data')) {
  const cols = Array.from(t.tHead.rows[0].cells).map(th => th.dataset.col);
  const rows = Array.from(t.tBodies[0].rows).map(tr => Array.from(tr.cells).map(td => (
      {v: td.hasAttribute('data-v') ? td.dataset.v : null, text: td.textContent})));
  out.tables[t.dataset.table] = {cols: cols, total: +t.dataset.rows, rows: rows};
}
for (const e of document.querySelectorAll('rect.bar'))
  out.bars.push({label: e.dataset.label, series: e.dataset.series, ns: +e.dataset.ns});
for (const e of document.querySelectorAll('rect.seg'))
  out.segs.push({label: e.dataset.label, series: e.dataset.series, ns: +e.dataset.ns});
for (const e of document.querySelectorAll('g.frame'))
  out.frames.push({label: e.dataset.label, index: +e.dataset.index, ns: +e.dataset.ns});
for (const e of document.querySelectorAll('g.spread-row'))
  out.spread.push({label: e.dataset.label, min: +e.dataset.min, median: +e.dataset.median,
                   max: +e.dataset.max});
for (const c of document.querySelectorAll('section.chart')) {
  const svg = c.querySelector('.plot svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  out.charts[c.id] = {width: box.width, height: box.height,
                      shapes: svg ? svg.querySelectorAll('rect, line, circle').length : 0};
}
return out;
"""


class HtmlReportTest(unittest.TestCase):
    driver = None

    @classmethod
    def setUpClass(cls):
        cls.driver = make_driver()

    @classmethod
    def tearDownClass(cls):
        if cls.driver is not None:
            cls.driver.quit()

    # The page of `inputs` (with `options`), opened and checked against the
    # CLI's JSON. Returns (page data, DOM, CLI JSON) for further checks.
    def check_page(self, name, inputs, options=()):
        page = os.path.join(OUT, name + ".html")
        tracer("report", *inputs, *options, "--format", "html", "-o", page)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        self.assertNotIn("https:", html)
        self.assertNotIn("<link", html)
        d = self.driver
        d.get_log("browser")  # drop anything from before this page
        d.get("file://" + page)
        data = d.execute_script(
            "return JSON.parse(document.getElementById('tracer-data').textContent)")
        dom = d.execute_script(READ_DOM)
        errors = [e for e in d.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
        self.assertEqual(errors, [], f"{name}: console errors")

        # Every chart rendered.
        self.assertTrue(data["charts"], f"{name}: no chart")
        for chart in data["charts"]:
            box = dom["charts"]["chart-" + chart["id"]]
            self.assertGreater(box["width"], 0, f"{name}: chart {chart['id']}")
            self.assertGreater(box["height"], 0, f"{name}: chart {chart['id']}")
            self.assertGreater(box["shapes"], 0, f"{name}: chart {chart['id']} is empty")

        # A screenshot of the whole page, kept as the test's artifact.
        height = d.execute_script("return document.documentElement.scrollHeight")
        d.set_window_size(1400, min(max(height, 800), 12000))
        d.save_screenshot(os.path.join(OUT, name + ".png"))
        d.set_window_size(1400, 1000)

        # The CLI's JSON for the same tables (the flame graph's timeline at
        # its step).
        names = [t["name"] for t in data["tables"] if t["name"] != "flame"]
        flame = [c for c in data["charts"] if c["kind"] == "flame"]
        args = ["report", *inputs, *options, "--format", "json", "--table", ",".join(names)]
        if flame:
            args += ["--iteration", str(flame[0]["step"])]
        cli = json.loads(tracer(*args))
        self.compare_tables(name, dom, cli)
        self.compare_charts(name, data, dom, cli)
        return data, dom, cli, html

    def compare_tables(self, name, dom, cli):
        self.assertTrue(dom["tables"])
        for table, shown in dom["tables"].items():
            rows = cli[table]
            self.assertEqual(shown["total"], len(rows), f"{name}/{table}: row count")
            if table == "timeline":  # trimmed for the flame graph: by index
                key = {(r.get("process"), r["index"]): r for r in rows}
                idx = shown["cols"].index("index")
                pcol = shown["cols"].index("process") if "process" in shown["cols"] else -1
                expected = [key[(r[pcol]["text"] if pcol >= 0 else None, int(r[idx]["v"]))]
                            for r in shown["rows"]]
            else:
                self.assertEqual(len(shown["rows"]), min(len(rows), 200), f"{name}/{table}")
                expected = rows
            for i, row in enumerate(shown["rows"]):
                for col, cell in zip(shown["cols"], row):
                    want = expected[i][col]
                    where = f"{name}/{table} row {i} column {col}"
                    if cell["v"] is not None:
                        self.assertEqual(float(cell["v"]), want, where)
                    elif want is None or want == "":
                        self.assertEqual(cell["text"], "-", where)
                    else:
                        self.assertEqual(cell["text"], want, where)

    def compare_charts(self, name, data, dom, cli):
        kinds = {c["kind"]: c for c in data["charts"]}
        if "bars" in kinds:
            chart = kinds["bars"]
            rows = cli[chart["table"]]
            self.assertTrue(dom["bars"], f"{name}: no bar")
            for bar in dom["bars"]:
                match = [r for r in rows
                         if " / ".join(str(r[c]) for c in chart["label"]
                                       if r.get(c) not in (None, "")) == bar["label"]
                         and r[bar["series"]] == bar["ns"]]
                self.assertTrue(match, f"{name}: bar {bar} is not in the CLI's {chart['table']}")
        if "stack" in kinds:
            rows = cli["phases"]
            first = rows[0].get("process")
            self.assertTrue(dom["segs"], f"{name}: no phase segment")
            for seg in dom["segs"]:
                row = [r for r in rows if r.get("process") == first and r["step"] == seg["label"]]
                self.assertEqual(len(row), 1, f"{name}: step {seg['label']}")
                self.assertEqual(row[0][seg["series"]], seg["ns"], f"{name}: {seg}")
            steps = [r for r in rows if r.get("process") == first and r["step"] != "all"]
            self.assertEqual(len({s["label"] for s in dom["segs"]}), len(steps))
        if "flame" in kinds:
            chart = kinds["flame"]
            rows = [r for r in cli["timeline"] if r.get("process") == cli["timeline"][0].get("process")]
            by_index = {r["index"]: r for r in rows}
            self.assertTrue(dom["frames"], f"{name}: no flame frame")
            for f in dom["frames"]:
                r = by_index[f["index"]]
                self.assertEqual(r["cpu_ns"], f["ns"], f"{name}: frame {f}")
                self.assertEqual(r["range"].strip(), f["label"].strip(), f"{name}: frame {f}")
            # The step shown by default is the median of the first process's steps.
            if "median" in chart["title"]:
                first = cli["phases"][0].get("process")
                steps = sorted((r["step_cpu_ns"], int(r["step"])) for r in cli["phases"]
                               if r.get("process") == first and r["step"] != "all")
                self.assertEqual(chart["step"], steps[(len(steps) - 1) // 2][1])
            self.hover_frame(name)
        if "spread" in kinds:
            rows = {r["name"]: r for r in cli["ranks"]}
            self.assertTrue(dom["spread"], f"{name}: no spread row")
            for s in dom["spread"]:
                r = rows[s["label"]]
                self.assertEqual((r["cpu_min_ns"], r["cpu_median_ns"], r["cpu_max_ns"]),
                                 (s["min"], s["median"], s["max"]), f"{name}: {s}")

    def hover_frame(self, name):
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By

        d = self.driver
        frame = d.find_elements(By.CSS_SELECTOR, "g.frame rect")[0]
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", frame)
        ActionChains(d).move_to_element(frame).perform()
        tip = d.find_element(By.ID, "tip")
        label = frame.find_element(By.XPATH, "..").get_attribute("data-label")
        self.assertTrue(tip.is_displayed(), f"{name}: no tooltip on hover")
        self.assertIn(label, tip.text)
        self.assertIn("CPU ", tip.text)
        # A click zooms to the range: it then spans the plot's width.
        frames = d.find_elements(By.CSS_SELECTOR, "g.frame")
        target = frames[1] if len(frames) > 1 else frames[0]
        index = target.get_attribute("data-index")
        d.execute_script(
            "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))",
            target.find_element(By.TAG_NAME, "rect"))
        zoomed = d.find_element(By.CSS_SELECTOR, f"g.frame[data-index='{index}'] rect")
        plot = d.find_element(By.CSS_SELECTOR, "#chart-flame svg")
        self.assertGreater(float(zoomed.get_attribute("width")),
                           0.9 * (float(plot.get_attribute("width")) - 120), f"{name}: zoom")
        self.assertIn("zoomed:", d.find_element(By.ID, "chart-flame").text)

    def test_bundled_sample(self):
        if not (SAMPLE_BIN and LIB and os.path.exists(SAMPLE_BIN)):
            self.skipTest("the lora_step sample or libtracer.so is not built")
        trace = os.path.join(OUT, "lora_step.trace")
        if os.path.exists(trace):
            os.remove(trace)
        r = run([CLI, "run", "-o", trace, "--", SAMPLE_BIN], env=clean_env(), timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)
        data, dom, cli, _ = self.check_page("lora_step", [trace],
                                            ["--groups", "mlora", "--step-range", "step"])
        self.assertIn("groups", dom["tables"])
        self.assertEqual(data["charts"][0]["table"], "groups")
        # CPU time only: the sample has no GPU work (no driver), and an
        # empty GPU cell draws no bar.
        self.assertEqual({b["series"] for b in dom["bars"]}, {"cpu_ns"})
        self.assertEqual(len(dom["bars"]), min(25, len(cli["groups"])))
        self.assertIn("flame", {c["kind"] for c in data["charts"]})

    def test_two_ranks_with_20k_names(self):
        inputs = []
        for rank in (0, 1):
            path = os.path.join(OUT, f"many_names_rank{rank}.pt.trace.json.gz")
            write_kineto(path, rank, names=20000, steps=3, slow=1.0 + 0.5 * rank)
            inputs.append(path)
        data, dom, cli, html = self.check_page("many_names_2ranks", inputs)
        # 20,000 names: the page stays small and says that rows are capped.
        self.assertLess(len(html), 4 << 20, "page size")
        self.assertGreater(len(cli["ranges"]), 20000)
        self.assertIn(f"Showing the first 200 of {len(cli['ranges'])} rows", html)
        self.assertIn("spread", {c["kind"] for c in data["charts"]})
        # Bars: the first 25 ranges, CPU and GPU projected time each.
        self.assertEqual({b["series"] for b in dom["bars"]},
                         {"cpu_total_ns", "gpu_proj_total_ns"})
        self.assertEqual(len({b["label"] for b in dom["bars"]}), 25)
        # Rank 1 is slower in every step: the page names it the slowest.
        steps = [s for s in dom["spread"] if s["label"].startswith("ProfilerStep")]
        self.assertTrue(steps)
        slowest = {r["name"]: r["cpu_slowest"] for r in cli["ranks"]}
        for s in steps:
            self.assertIn("1", slowest[s["label"]])
        # The flame graph leaves out ops too short to see and says so.
        self.assertIn("ranges left out", html)

    def test_flame_step_option(self):
        path = os.path.join(OUT, "flame_step.pt.trace.json.gz")
        write_kineto(path, 0, names=50, steps=5, slow=1.0)
        data, _, _, _ = self.check_page("flame_step", [path], ["--flame-step", "3"])
        flame = [c for c in data["charts"] if c["kind"] == "flame"][0]
        self.assertEqual(flame["step"], 3)
        # --html-rows: each table's cap, said in the page; 0 shows every row.
        for rows, capped in (("5", True), ("0", False)):
            page = os.path.join(OUT, f"rows_{rows}.html")
            tracer("report", path, "--format", "html", "--html-rows", rows, "-o", page)
            with open(page, encoding="utf-8") as f:
                self.assertEqual("Showing the first 5 of" in f.read(), capped, rows)
        # A step the trace does not hold is an error, not a page without it.
        r = run([CLI, "report", path, "--format", "html", "--flame-step", "9", "-o",
                 os.path.join(OUT, "no_such_step.html")], env=clean_env())
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("--flame-step 9", r.stdout)

    def test_diff(self):
        a = os.path.join(OUT, "diff_a.pt.trace.json.gz")
        b = os.path.join(OUT, "diff_b.pt.trace.json.gz")
        write_kineto(a, 0, names=30, steps=3, slow=1.0)
        write_kineto(b, 0, names=30, steps=3, slow=1.3)
        page = os.path.join(OUT, "diff.html")
        tracer("diff", a, b, "--format", "html", "-o", page)
        cli = json.loads(tracer("diff", a, b, "--format", "json"))
        d = self.driver
        d.get_log("browser")
        d.get("file://" + page)
        dom = d.execute_script(READ_DOM)
        self.assertEqual([e for e in d.get_log("browser") if e["level"] == "SEVERE"], [])
        d.save_screenshot(os.path.join(OUT, "diff.png"))
        self.assertGreater(dom["charts"]["chart-bars"]["width"], 0)
        self.assertTrue(dom["bars"])
        series = {bar["series"] for bar in dom["bars"]}
        self.assertIn("cpu_total_ns_a", series)
        self.assertIn("cpu_total_ns_b", series)
        for bar in dom["bars"]:
            match = [r for r in cli
                     if " / ".join(str(r[c]) for c in ("domain", "range")
                                   if r.get(c) not in (None, "")) == bar["label"]
                     and r[bar["series"]] == bar["ns"]]
            self.assertTrue(match, f"diff: bar {bar} is not in the CLI's rows")
        self.compare_tables("diff", dom, {"ranges_diff": cli})

    def test_shared_two_gpu_export(self):
        path = os.path.join(SHARED, "data", "nsys", "h100_2gpu_mfu.sqlite")
        if not os.path.exists(path):
            self.skipTest(f"{path} is not present")
        self.check_page("h100_2gpu_mfu", [path])

    def test_shared_kineto_resnet(self):
        path = os.path.join(SHARED, "data", "kineto", "resnet_ddp_rank0.pt.trace.json.gz")
        if not os.path.exists(path):
            self.skipTest(f"{path} is not present")
        self.check_page("resnet_ddp_rank0", [path])


def write_kineto(path, rank, names, steps, slow):
    """A PyTorch-profiler-shaped trace: ProfilerStep#N steps each holding
    forward (`names` distinct cpu ops, op_0 .. op_{names-1}, op k taking
    k % 7 + 1 us), backward and optimizer annotations, one kernel launched
    per phase; every duration times `slow`."""
    events = []
    ts = 1000.0
    corr = 1
    for step in range(steps):
        start = ts
        for phase, n in (("forward", names), ("backward", 3), ("optimizer", 2)):
            p0 = ts
            ts += 1
            for k in range(n):
                dur = (k % 7 + 1) * slow
                op = f"op_{k}" if phase == "forward" else f"{phase}_op_{k}"
                events.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 10 + rank,
                               "tid": 10 + rank, "ts": ts, "dur": dur})
                ts += dur + 0.5
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 10 + rank, "tid": 10 + rank, "ts": ts, "dur": 2,
                           "args": {"cbid": 211, "correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": f"{phase}_kernel", "pid": 0,
                           "tid": 7, "ts": ts + 3, "dur": 20 * slow,
                           "args": {"device": 0, "context": 1, "stream": 7,
                                    "correlation": corr}})
            corr += 1
            ts += 3
            events.append({"ph": "X", "cat": "user_annotation", "name": phase, "pid": 10 + rank,
                           "tid": 10 + rank, "ts": p0, "dur": ts - p0})
            ts += 1
        ts += 25 * slow  # the last kernel ends inside the step
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}",
                       "pid": 10 + rank, "tid": 10 + rank, "ts": start - 0.5,
                       "dur": ts - start + 1})
        ts += 10
    trace = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}],
             "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
             "traceEvents": events, "displayTimeUnit": "ns"}
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(trace, f)


if __name__ == "__main__":
    reason = missing_browser()
    if reason:
        print(f"skipped: {reason}", flush=True)
        sys.exit(SKIP)
    if not CLI:
        print("skipped: TRACER_CLI is not set (run through ctest)", flush=True)
        sys.exit(SKIP)
    unittest.main(verbosity=2)
