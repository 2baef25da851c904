"""bench/torch's counter reader (perf_counters.py) and bench_step.py's
paired confidence intervals; needs no torch.

With TRACER_BENCH_COUNTERS=hardware only the hardware counters' test runs,
and the script exits 77 (skipped) where perf_event_open gives none (no PMU,
as in most VMs; perf_event_paranoid), saying why."""

import os
import sys
import threading
import time
import unittest

import tracer_testing

sys.path.insert(0, os.path.join(tracer_testing.SOURCE_DIR, "bench", "torch"))
import bench_step  # noqa: E402
import perf_counters as pc  # noqa: E402

TASK_CLOCK = {"task-clock": (pc.PERF_TYPE_SOFTWARE, pc.PERF_COUNT_SW_TASK_CLOCK, False)}
NO_SUCH_EVENT = {"no-such-event": (pc.PERF_TYPE_HARDWARE, 0xFFFF, False)}


def spin(units: int) -> None:
    """Pure Python work proportional to units."""
    total = 0
    for i in range(units * 200_000):
        total += i ^ 5
    spin.sink = total


def counted_in_threads(counters, units: int, threads: int = 2) -> dict:
    """Counts of `spin(units)` run in threads started after the counters
    were opened, while this thread only waits."""
    before = counters.read()
    started = [threading.Thread(target=spin, args=(units,)) for _ in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join()
    after = counters.read()
    return {n: after[n] - before[n] for n in after}


class HardwareCountersTest(unittest.TestCase):
    def test_more_work_counts_more_instructions(self):
        counters, note = pc.Counters.open()
        if counters is None:
            self.skipTest(note)
        try:
            small = counted_in_threads(counters, 1)
            large = counted_in_threads(counters, 8)
        finally:
            counters.close()
        for name in ("instructions:u", "instructions"):
            if name in small:
                # The same Python loop: instructions grow with the work (8x,
                # the interpreter's fixed costs aside), not with the load.
                self.assertGreater(large[name], 5 * small[name], name)
                self.assertGreater(small[name], 2 * 200_000 * 10, name)  # >= 10 an iteration
        if "instructions" in small and "instructions:u" in small:
            self.assertGreaterEqual(large["instructions"] * 1.01, large["instructions:u"])
        if "cycles" in small:
            self.assertGreater(large["cycles"], small["cycles"])


class CounterReaderTest(unittest.TestCase):
    """The same reader on a software event every Linux has (task-clock, ns
    of CPU time), so the plumbing is tested where no PMU is exposed."""

    def setUp(self):
        self.counters, note = pc.Counters.open(TASK_CLOCK)
        if self.counters is None:
            self.skipTest(note)  # perf_event_open itself refused (seccomp, paranoid 3)
        self.addCleanup(self.counters.close)

    def test_counts_the_threads_started_after_open(self):
        cpu0, own0 = time.process_time(), time.thread_time()
        counted = counted_in_threads(self.counters, 4)["task-clock"] / 1e9
        cpu, own = time.process_time() - cpu0, time.thread_time() - own0
        self.assertGreater(cpu - own, 0.01)  # the threads did the work
        # inherit: the exited threads' time is in the count, not only ours
        self.assertGreater(counted, own + 0.5 * (cpu - own))
        self.assertLess(counted, 1.5 * cpu + 0.01)

    def test_more_work_counts_more(self):
        small = counted_in_threads(self.counters, 1)["task-clock"]
        large = counted_in_threads(self.counters, 10)["task-clock"]
        self.assertGreater(small, 0)
        self.assertGreater(large, 2 * small)

    def test_unavailable_event_gives_a_reason(self):
        counters, note = pc.Counters.open(NO_SUCH_EVENT)
        self.assertIsNone(counters)
        self.assertIn("unavailable", note)
        self.assertIn("no-such-event", note)

    def test_refused_event_left_out_and_named(self):
        counters, note = pc.Counters.open({**TASK_CLOCK, **NO_SUCH_EVENT})
        self.addCleanup(counters.close)
        self.assertEqual(counters.names, ["task-clock"])
        self.assertIn("no-such-event", note)
        self.assertNotIn("task-clock", note)


class PairedIntervalTest(unittest.TestCase):
    def test_mean_of_log_ratios_with_student_t(self):
        import math

        est, lo, hi, n = bench_step.paired_ci([math.exp(0.01), math.exp(0.03)], [1.0, 1.0])
        self.assertEqual(n, 2)
        self.assertAlmostEqual(est, (math.exp(0.02) - 1) * 100)
        half = 12.706 * math.sqrt(2e-4) / math.sqrt(2)  # t(1 df) * stdev / sqrt(n)
        self.assertAlmostEqual(lo, (math.exp(0.02 - half) - 1) * 100)
        self.assertAlmostEqual(hi, (math.exp(0.02 + half) - 1) * 100)

    def test_constant_ratio_has_no_width_and_scale_cancels(self):
        est, lo, hi, n = bench_step.paired_ci([2.02, 4.04, 1.01], [2.0, 4.0, 1.0])
        self.assertAlmostEqual(est, 1.0)
        self.assertAlmostEqual(lo, hi)
        self.assertEqual(n, 3)

    def test_large_sample_uses_normal_quantile(self):
        num = [1.0 + (0.01 if i % 2 else -0.01) for i in range(40)]
        est, lo, hi, _ = bench_step.paired_ci(num, [1.0] * 40)
        import math
        import statistics

        logs = [math.log(v) for v in num]
        half = 1.96 * statistics.stdev(logs) / math.sqrt(40)
        self.assertAlmostEqual(hi, (math.exp(statistics.mean(logs) + half) - 1) * 100)

    def test_one_pair_is_no_interval(self):
        self.assertIsNone(bench_step.paired_ci([1.1], [1.0]))


if __name__ == "__main__":
    if os.environ.get("TRACER_BENCH_COUNTERS") == "hardware":
        counters, note = pc.Counters.open()
        if counters is None:
            print(f"{note}: skipped", flush=True)
            sys.exit(tracer_testing.SKIP)
        counters.close()
        unittest.main(defaultTest="HardwareCountersTest")
    unittest.main()
