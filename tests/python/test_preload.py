"""libtracer.so preloaded into a PyTorch process: torch's libtorch_cpu.so
exports its own protobuf (hundreds of google::protobuf symbols), and the
Python protobuf package brings another. The tracer must neither export nor
import any protobuf symbol, and a process using both protobufs while traced
must run normally and leave a valid trace."""

import os
import subprocess
import sys
import textwrap
import unittest

import tracer_testing as tt_

tt_.need_torch()

from trace_reader import read_trace  # noqa: E402


def dynamic_symbols(path, which):
    out = subprocess.run(["nm", "-D", which, path], stdout=subprocess.PIPE, text=True, check=True)
    return [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]


class SymbolTest(unittest.TestCase):
    def test_no_protobuf_symbol_exported_or_imported(self):
        for which in ("--defined-only", "--undefined-only"):
            syms = dynamic_symbols(tt_.LIB, which)
            self.assertTrue(syms or which == "--undefined-only")
            bad = [s for s in syms if "protobuf" in s or "google" in s]
            self.assertEqual(bad, [], which)

    def test_no_protobuf_library_needed(self):
        out = subprocess.run(["readelf", "-d", tt_.LIB], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
        needed = [line for line in out.splitlines() if "NEEDED" in line]
        self.assertFalse(any("protobuf" in line for line in needed), needed)

    def test_torch_really_carries_protobuf(self):
        # What makes the check above matter: if this stops being true the
        # test below proves less, and this says so.
        import torch

        lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        if not os.path.exists(lib):
            self.skipTest("no libtorch_cpu.so in this torch build")
        syms = dynamic_symbols(lib, "--defined-only")
        self.assertTrue(any("protobuf" in s for s in syms))


SCRIPT = textwrap.dedent(
    """
    import sys, warnings
    warnings.filterwarnings("ignore")
    import torch
    import torch.cuda.nvtx as nvtx
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        descriptor_pb2 = None
    with nvtx.range("preloaded"):
        y = torch.nn.Linear(8, 8)(torch.ones(2, 8)).sum()
        y.backward()
    if descriptor_pb2 is not None:
        m = descriptor_pb2.FileDescriptorProto(name="x.proto", package="p")
        m.message_type.add(name="M").field.add(name="f", number=1, type=5)
        back = descriptor_pb2.FileDescriptorProto.FromString(m.SerializeToString())
        assert back == m and back.message_type[0].field[0].name == "f"
        print("protobuf", back.ByteSize())
    print("ok")
    sys.exit(3)  # the host's exit code must come through unchanged
    """
)


class PreloadTest(unittest.TestCase):
    def test_torch_and_protobuf_with_tracer_preloaded(self):
        out_dir = tt_.work_dir("preload")
        path = os.path.join(out_dir, "preload.trace")
        if os.path.exists(path):
            os.remove(path)
        env = tt_.clean_env(LD_PRELOAD=tt_.LIB, TRACER_OUTPUT=path)
        proc = tt_.run([sys.executable, "-c", SCRIPT], env=env)
        self.assertEqual(proc.returncode, 3, proc.stdout[-3000:])
        self.assertIn("ok", proc.stdout)
        trace = read_trace(path)
        self.assertIsNone(trace.error)
        self.assertIsNotNone(trace.footer)
        self.assertIn("preloaded", trace.names())


if __name__ == "__main__":
    tt_.main()
