#!/usr/bin/env python3
"""Cost of tracer.torch's hooks per module call, in one process, interleaved:
a chain of N small Linear layers, forward + backward, with no hooks (the
baseline), forward ranges only, backward ranges only, and both. NVTX calls go
to whatever tool is attached (none: they return at once), so this measures
the Python side that any per-module annotation pays, tracer or not.

    python3 bench/torch/bench_hooks.py [--modules 100] [--rounds 7]
    python3 bench/torch/bench_hooks.py --width 16 --batch 32768 --steps 4

The default small tensors keep the hooks' code and data in the CPU caches:
the Python and autograd cost alone. With activations of a few MB between
module calls (the second line: 2 MB per layer, little arithmetic), as in a
real model, each call finds them cold and costs several times more; that
is closer to what a training step sees (bench_step.py).

Prints the best-of-rounds CPU time per step and, per variant, the ratio to
the baseline and the extra microseconds per module call.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(
    0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
)
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
from torch import nn  # noqa: E402

import tracer.torch as tt  # noqa: E402

VARIANTS = {
    "none": None,
    "forward": dict(backward=False),
    "backward": dict(forward=False),
    "both": {},
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modules", type=int, default=100)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--batch", type=int, default=4, help="rows of the input")
    p.add_argument("--steps", type=int, default=20, help="steps per timing")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(args.width, args.width) for _ in range(args.modules)])
    x = torch.randn(args.batch, args.width, requires_grad=True)

    def timed() -> float:
        t = time.process_time()
        for _ in range(args.steps):
            model(x).sum().backward()
        return (time.process_time() - t) / args.steps

    best = {v: float("inf") for v in VARIANTS}
    for _ in range(args.rounds):
        for variant, kw in VARIANTS.items():
            handle = None if kw is None else tt.annotate(model, force=True, **kw)
            timed()  # warm-up after (un)hooking
            best[variant] = min(best[variant], timed())
            if handle is not None:
                handle.remove()
    base = best["none"]
    print(f"{args.modules} Linear({args.width}) modules on {args.batch} rows, forward + backward, "
          f"NVTX client {tt.backend_name()}, best of {args.rounds} rounds x {args.steps} steps (CPU time)")
    print(f"{'variant':<9} {'step':>10} {'vs none':>9} {'per module call':>16}")
    for variant in VARIANTS:
        t = best[variant]
        extra = (t - base) / args.modules * 1e6
        print(f"{variant:<9} {t * 1e3:>7.2f} ms {t / base:>9.3f} {extra:>13.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
