"""DataLoader worker processes (fork) under the tracer: with TRACER_FORK=child
each worker writes its own file (named after its pid, its header naming the
parent), with TRACER_FORK=none only the parent writes one."""

import glob
import os
import shutil
import sys
import unittest

import tracer_testing as tt_

tt_.need_torch()

from trace_reader import read_trace  # noqa: E402

WORKERS = 2


def run_with_workers(name, fork_mode):
    out_dir = tt_.work_dir(name)
    shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    cmd = [sys.executable, tt_.SAMPLE,
           "--layers", "1", "--adapters", "2", "--steps", "4", "--hidden", "32", "--heads", "2",
           "--seq", "8", "--workers", str(WORKERS), "--threads", "1"]
    proc = tt_.traced(cmd, os.path.join(out_dir, "run.trace"),
                      env=tt_.clean_env(TRACER_FORK=fork_mode))
    files = sorted(glob.glob(os.path.join(out_dir, "*.trace")))
    return proc, files, os.path.join(out_dir, "run.trace")


class ForkTest(unittest.TestCase):
    def test_child_mode_one_file_per_worker(self):
        proc, files, parent_path = run_with_workers("fork-child", "child")
        self.assertEqual(proc.returncode, 0, proc.stdout[-3000:])
        self.assertIn(parent_path, files)
        parent = read_trace(parent_path)
        self.assertIsNone(parent.error)
        self.assertIn("step", parent.names())
        children = [read_trace(f) for f in files if f != parent_path]
        self.assertEqual(len(children), WORKERS, files)
        for child, path in zip(children, [f for f in files if f != parent_path]):
            self.assertIsNone(child.error, path)
            self.assertEqual(child.parent_pid, parent.pid, path)
            self.assertNotEqual(child.pid, parent.pid)
            self.assertTrue(path.endswith(f"-{child.pid}.trace"), path)
            # The worker's own work, none of the parent's.
            self.assertIn("load_sample", child.names(), path)
            self.assertNotIn("step", child.names(), path)
        loads = sum(1 for c in children for r in c.ranges if r.name == "load_sample")
        self.assertEqual(loads, 4 * 4)  # steps x batch (2 rows per adapter)

    def test_none_mode_parent_file_only(self):
        proc, files, parent_path = run_with_workers("fork-none", "none")
        self.assertEqual(proc.returncode, 0, proc.stdout[-3000:])
        self.assertEqual(files, [parent_path])
        parent = read_trace(parent_path)
        self.assertIsNone(parent.error)
        self.assertIn("step", parent.names())
        self.assertNotIn("load_sample", parent.names())


if __name__ == "__main__":
    tt_.main()
