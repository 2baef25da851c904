#!/usr/bin/env python3
"""Multi-LoRA fine-tuning of a tiny Llama-style model, to be traced.

    tracer run -o run.trace -- python3 samples/torch/lora_finetune.py --steps 3
    tracer report run.trace --groups samples/torch/lora.groups

RMSNorm, rotary attention, SwiGLU MLP; every q/k/v/o projection carries
several LoRA adapters, trained at once on their own slice of the batch (as
mLoRA does: one frozen base GEMM, then per adapter split, dropout, A, B,
scaling and add). Random weights, synthetic tokens, fixed seeds: a step takes
well under a second on CPU with the defaults and runs as is on a GPU.

Module names are chosen so that tracer.torch's default naming yields the
range names of an mLoRA profiling study (f_attention_norm_3, f_linear_wq_3,
f_lora_a_alpaca_3, f_w1_m_w3_3, ...); samples/torch/lora.groups sums them
into that report's metric groups. One deliberate difference: the rotary
embedding is spelled ``rotary_emb`` (the seed's ``rotray`` is a typo).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings

# The checkout's package when tracer is not pip-installed.
_PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
if os.path.isdir(_PYTHON_DIR):
    sys.path.insert(0, os.path.normpath(_PYTHON_DIR))

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import tracer.torch as tt  # noqa: E402

ADAPTER_NAMES = ["alpaca", "gsm", "sql", "chat", "code", "math", "poem", "wiki"]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Rope(nn.Module):
    """Rotary position embedding of one projection, (B, S, hidden) in,
    (B, S, heads, head_dim) out."""

    def __init__(self, heads: int, head_dim: int, max_seq: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        angles = torch.outer(torch.arange(max_seq).float(), inv_freq)
        angles = torch.cat([angles, angles], dim=-1)  # (S, head_dim)
        self.register_buffer("cos", angles.cos()[None, :, None, :], persistent=False)
        self.register_buffer("sin", angles.sin()[None, :, None, :], persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        x = x.view(b, s, self.heads, self.head_dim)
        half = self.head_dim // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos[:, :s] + rotated * self.sin[:, :s]


class RotaryEmb(nn.Module):
    def __init__(self, heads: int, head_dim: int, max_seq: int) -> None:
        super().__init__()
        self.q_rope = Rope(heads, head_dim, max_seq)
        self.k_rope = Rope(heads, head_dim, max_seq)

    def forward(self, q, k):
        return self.q_rope(q), self.k_rope(k)


class Attention(nn.Module):
    """Causal scaled dot-product attention over (B, S, H, D) inputs."""

    def forward(self, q, k, v):
        b, s, h, d = q.shape
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.view(b, s, h, d).transpose(1, 2), is_causal=True
        )
        return out.transpose(1, 2).reshape(b, s, h * d)


class Split(nn.Module):
    """An adapter's rows of the batch."""

    def forward(self, x, lo: int, hi: int):
        return x[lo:hi]


class Scale(nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


class LoraAdd(nn.Module):
    """Adds an adapter's output to its rows of the base output (out of place,
    so autograd and full backward hooks see a plain function)."""

    def forward(self, base, delta, lo: int, hi: int):
        return base.slice_scatter(base[lo:hi] + delta, dim=0, start=lo, end=hi)


class Add(nn.Module):
    def forward(self, a, b):
        return a + b


class Mul(nn.Module):
    def forward(self, a, b):
        return a * b


class LoraLinear(nn.Module):
    """A frozen linear layer plus one LoRA adapter per batch slice."""

    def __init__(self, dim_in, dim_out, base_name, adapters, rank, alpha, dropout):
        super().__init__()
        self.base_name = base_name
        base = nn.Linear(dim_in, dim_out, bias=False)
        base.weight.requires_grad_(False)
        setattr(self, base_name, base)
        self.adapters = list(adapters)
        self.lora_split = nn.ModuleDict({a: Split() for a in adapters})
        self.dropout = nn.ModuleDict({a: nn.Dropout(dropout) for a in adapters})
        self.lora_a = nn.ModuleDict({a: nn.Linear(dim_in, rank, bias=False) for a in adapters})
        self.lora_b = nn.ModuleDict({a: nn.Linear(rank, dim_out, bias=False) for a in adapters})
        self.scaling = nn.ModuleDict({a: Scale(alpha / rank) for a in adapters})
        self.lora_add = nn.ModuleDict({a: LoraAdd() for a in adapters})
        for a in adapters:
            nn.init.normal_(self.lora_b[a].weight, std=0.02)  # not zero: real gradients

    def forward(self, x):
        out = getattr(self, self.base_name)(x)
        rows = x.shape[0] // len(self.adapters)
        for i, a in enumerate(self.adapters):
            lo, hi = i * rows, (i + 1) * rows
            xa = self.lora_split[a](x, lo, hi)
            delta = self.scaling[a](self.lora_b[a](self.lora_a[a](self.dropout[a](xa))))
            out = self.lora_add[a](out, delta, lo, hi)
        return out


class Block(nn.Module):
    def __init__(self, cfg) -> None:
        super().__init__()
        h, heads = cfg.hidden, cfg.heads
        lora = dict(adapters=cfg.adapter_names, rank=cfg.rank, alpha=cfg.alpha, dropout=0.05)
        self.attention_norm = RMSNorm(h)
        self.q = LoraLinear(h, h, "linear_wq", **lora)
        self.k = LoraLinear(h, h, "linear_wk", **lora)
        self.v = LoraLinear(h, h, "linear_wv", **lora)
        self.rotary_emb = RotaryEmb(heads, h // heads, cfg.seq)
        self.attention = Attention()
        self.o = LoraLinear(h, h, "linear_wo", **lora)
        self.o_add = Add()
        self.ffn_norm = RMSNorm(h)
        ffn = cfg.ffn
        self.w1 = nn.Linear(h, ffn, bias=False)
        self.w3 = nn.Linear(h, ffn, bias=False)
        self.silu_w2 = nn.SiLU()
        self.w1_m_w3 = Mul()
        self.w2 = nn.Linear(ffn, h, bias=False)
        self.w2_add = Add()
        for m in (self.w1, self.w3, self.w2):
            m.weight.requires_grad_(False)

    def forward(self, x):
        n = self.attention_norm(x)
        q, k = self.rotary_emb(self.q(n), self.k(n))
        a = self.attention(q, k, self.v(n))
        x = self.o_add(x, self.o(a))
        n = self.ffn_norm(x)
        gated = self.w1_m_w3(self.silu_w2(self.w1(n)), self.w3(n))
        return self.w2_add(x, self.w2(gated))


class CalcLoss(nn.Module):
    def forward(self, logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class TinyLlama(nn.Module):
    def __init__(self, cfg) -> None:
        super().__init__()
        self.embedding = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.rmsnorm = RMSNorm(cfg.hidden)
        self.output = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        self.calc_loss = CalcLoss()
        self.embedding.weight.requires_grad_(False)
        self.output.weight.requires_grad_(False)

    def forward(self, tokens, targets):
        x = self.embedding(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.calc_loss(self.output(self.rmsnorm(x)), targets)


class SyntheticTokens(torch.utils.data.Dataset):
    """Deterministic random token rows. In DataLoader worker processes each
    sample is a `load_sample` range (in the main process it would be one
    more top-level range beside `step`)."""

    def __init__(self, n: int, seq: int, vocab: int, seed: int) -> None:
        self.n, self.seq, self.vocab, self.seed = n, seq, vocab, seed

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if torch.utils.data.get_worker_info() is None:
            return self._make(i)
        with tt.range("load_sample"):
            return self._make(i)

    def _make(self, i):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        row = torch.randint(0, self.vocab, (self.seq + 1,), generator=g)
        return row[:-1], row[1:]


def train_step(model, opt, tokens, targets, index=None, sync=None):
    """One training step in the step / forward / backward / optimizer ranges
    (bench/torch/bench_step.py times this same function); returns the loss.
    sync: waits for the device inside the step range (a GPU's queued work
    belongs to the step that launched it)."""
    with tt.step(index):
        with tt.forward():
            loss = model(tokens, targets)
        with tt.backward():
            loss.backward()
        with tt.optimizer():
            opt.step()
            opt.zero_grad(set_to_none=True)
        if sync is not None:
            sync()
    return loss


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--adapters", type=int, default=2, help="LoRA adapters (batch is split among them)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=0, help="default: 2 rows per adapter")
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--annotate", action=argparse.BooleanOptionalAction, default=True,
                   help="per-module NVTX ranges (only when a tracer is attached, unless --force-annotate)")
    p.add_argument("--force-annotate", action="store_true", help="register the hooks even without a tracer")
    p.add_argument("--nvtx", choices=["auto", "torch", "nvtx"], default="auto", help="NVTX client")
    p.add_argument("--profiler", choices=["none", "torch"], default="none",
                   help="torch: run under torch.profiler, same ranges via record_function")
    p.add_argument("--profiler-out", default="", help="Chrome JSON of the torch.profiler run")
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes (fork)")
    p.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stats-json", default="", help="write step times here")
    args = p.parse_args(argv)
    if args.adapters < 1 or args.adapters > 64:
        p.error("--adapters must be 1..64")
    args.adapter_names = [ADAPTER_NAMES[i] if i < len(ADAPTER_NAMES) else f"adapter{i}"
                          for i in range(args.adapters)]
    args.batch = args.batch or 2 * args.adapters
    if args.batch % args.adapters:
        p.error(f"--batch {args.batch} must be a multiple of --adapters {args.adapters}")
    if args.hidden % args.heads or (args.hidden // args.heads) % 2:
        p.error("--hidden must split into --heads heads of even size")
    args.ffn = 4 * args.hidden * 2 // 3 // 8 * 8 or 8
    args.alpha = 2.0 * args.rank
    return args


def main(argv=None) -> int:
    cfg = parse_args(argv)
    torch.manual_seed(cfg.seed)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = cfg.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"

    if cfg.profiler == "torch":
        # Same ranges, recorded by torch.profiler instead of NVTX.
        tt.set_backend(tt.RecordFunctionBackend())
        tt.set_enabled(True)
    elif cfg.nvtx != "auto":
        tt.set_backend(cfg.nvtx)

    model = TinyLlama(cfg).to(device)
    handle = None
    if cfg.annotate:
        # q, k, v and o share their adapters' range names on purpose (as in that study):
        # the enclosing f_q_3 / f_k_3 range tells them apart.
        handle = tt.annotate(model, force=cfg.force_annotate or cfg.profiler == "torch",
                             warn_shared_names=False, distinct_names=False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)

    data = SyntheticTokens(cfg.steps * cfg.batch, cfg.seq, cfg.vocab, cfg.seed)
    loader_kw = {}
    if cfg.workers:
        loader_kw = dict(num_workers=cfg.workers, multiprocessing_context="fork")
    loader = torch.utils.data.DataLoader(data, batch_size=cfg.batch, shuffle=False, **loader_kw)

    prof = None
    if cfg.profiler == "torch":
        acts = [torch.profiler.ProfilerActivity.CPU]
        if device == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()

    sync = torch.cuda.synchronize if device == "cuda" else None
    times, cpu_times, losses = [], [], []
    for i, (tokens, targets) in enumerate(loader):
        tokens, targets = tokens.to(device), targets.to(device)
        c0 = time.process_time()  # all threads of the process, the tracer's too
        t0 = time.perf_counter()
        loss = train_step(model, opt, tokens, targets, i, sync)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        losses.append(loss.item())
        print(f"step {i}: {times[-1] * 1e3:.1f} ms loss {losses[-1]:.4f}", flush=True)

    if prof is not None:
        prof.__exit__(None, None, None)
        if cfg.profiler_out:
            prof.export_chrome_trace(cfg.profiler_out)
    if handle is not None:
        handle.remove()

    steady = times[1:] or times
    mean = sum(steady) / len(steady)
    print(f"mean step {mean * 1e3:.2f} ms over {len(steady)} steps (device {device}, "
          f"annotated {bool(handle and handle.active)}, nvtx {tt.backend_name()})", flush=True)
    if cfg.stats_json:
        with open(cfg.stats_json, "w") as f:
            json.dump({"step_s": times, "step_cpu_s": cpu_times, "loss": losses, "device": device,
                       "annotated_modules": len(handle.ranges) if handle else 0}, f)
    return 0 if all(math.isfinite(x) for x in losses) else 1


if __name__ == "__main__":
    sys.exit(main())
