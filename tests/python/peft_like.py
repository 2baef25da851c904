"""A small Llama-style causal LM with LoRA adapters in the module structure
that peft builds (PeftModel > LoraModel > LlamaForCausalLM; q_proj / v_proj
become lora.Linear with base_layer, lora_dropout / lora_A / lora_B
ModuleDicts keyed by adapter name), made by hand so the tests need neither
peft nor transformers. As with peft: every weight is frozen but the
adapters', the decoder layer calls its attention with keyword arguments
(hidden_states=...), the attention returns a tuple, and an adapter that is
not active has modules that are never called (its weights get no gradient).

Also runnable, to be traced (tests/python/test_lora.py):

    python3 peft_like.py --steps 3 --out run.json [--annotate]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402


class LoraLinear(nn.Module):
    """peft.tuners.lora.layer.Linear, reduced to what its forward does."""

    def __init__(self, base_layer: nn.Linear, adapters, rank: int, alpha: float, dropout: float):
        super().__init__()
        self.base_layer = base_layer
        self.lora_dropout = nn.ModuleDict()
        self.lora_A = nn.ModuleDict()
        self.lora_B = nn.ModuleDict()
        self.lora_embedding_A = nn.ParameterDict()  # empty, as peft has them
        self.lora_embedding_B = nn.ParameterDict()
        self.scaling = {}
        for name in adapters:
            self.lora_dropout[name] = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
            self.lora_A[name] = nn.Linear(base_layer.in_features, rank, bias=False)
            self.lora_B[name] = nn.Linear(rank, base_layer.out_features, bias=False)
            self.scaling[name] = alpha / rank
            # peft starts B at zero; random here so that A gets a non-zero gradient.
            nn.init.normal_(self.lora_B[name].weight, std=0.02)
        self.active_adapters = [adapters[0]]

    def forward(self, x, *args, **kwargs):
        result = self.base_layer(x, *args, **kwargs)
        for name in self.active_adapters:
            lora_A, lora_B = self.lora_A[name], self.lora_B[name]
            dropout, scaling = self.lora_dropout[name], self.scaling[name]
            result = result + lora_B(lora_A(dropout(x))) * scaling
        return result


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)

    def forward(self, hidden_states, attention_mask=None):
        b, s, h = hidden_states.shape
        shape = (b, s, self.heads, h // self.heads)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, h)), None


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.self_attn = Attention(hidden, heads)
        self.mlp = MLP(hidden, ffn)
        self.input_layernorm = RMSNorm(hidden)
        self.post_attention_layernorm = RMSNorm(hidden)

    def forward(self, hidden_states, attention_mask=None):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states=hidden_states,
                                          attention_mask=attention_mask)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        return residual + self.mlp(hidden_states)


class LlamaModel(nn.Module):
    def __init__(self, vocab, hidden, heads, ffn, layers) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(DecoderLayer(hidden, heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(hidden)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        for layer in self.layers:
            h = layer(h, attention_mask=None)
        return self.norm(h)


class LlamaForCausalLM(nn.Module):
    def __init__(self, vocab, hidden, heads, ffn, layers) -> None:
        super().__init__()
        self.model = LlamaModel(vocab, hidden, heads, ffn, layers)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, labels):
        logits = self.lm_head(self.model(input_ids))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class LoraModel(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args):
        return self.model(*args)


class PeftModel(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.base_model = LoraModel(model)

    def forward(self, *args):
        return self.base_model(*args)


def build(vocab=64, hidden=32, heads=2, ffn=64, layers=3, rank=4, alpha=8.0, dropout=0.1,
          target_modules=("q_proj", "v_proj"), adapters=("default", "chat"), seed=0) -> PeftModel:
    """What get_peft_model(LlamaForCausalLM(...), LoraConfig(...)) gives:
    everything frozen, then a LoraLinear around each target module."""
    torch.manual_seed(seed)
    base = LlamaForCausalLM(vocab, hidden, heads, ffn, layers)
    for p in base.parameters():
        p.requires_grad_(False)
    for layer in base.model.layers:
        for name in target_modules:
            base_layer = getattr(layer.self_attn, name)
            setattr(layer.self_attn, name,
                    LoraLinear(base_layer, list(adapters), rank, alpha, dropout))
    return PeftModel(base)


def batch(vocab=64, rows=4, seq=16, seed=1):
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(0, vocab, (rows, seq + 1), generator=g)
    return data[:, :-1], data[:, 1:]


def tensor_bytes(t: torch.Tensor) -> str:
    """The exact bits of a tensor, as hex (numpy may be missing)."""
    return bytes(t.detach().contiguous().view(-1).view(torch.uint8).tolist()).hex()


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--out", required=True)
    p.add_argument("--annotate", action="store_true",
                   help="tracer.torch.annotate (when a tracer is attached)")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.join(os.environ.get("TRACER_SOURCE_DIR", ""), "python"))
    import tracer.torch as tt

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model = build(hidden=args.hidden, heads=2, ffn=2 * args.hidden, layers=args.layers)
    handle = tt.annotate(model) if args.annotate else None
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    torch.manual_seed(1234)  # dropout masks
    losses, grads = [], []
    for i in range(args.steps):
        tokens, labels = batch(seq=args.seq, seed=i)
        with tt.step(i):
            with tt.forward():
                loss = model(tokens, labels)
            with tt.backward():
                loss.backward()
            grads.append({n: tensor_bytes(q.grad) for n, q in model.named_parameters()
                          if q.grad is not None})
            with tt.optimizer():
                opt.step()
                opt.zero_grad(set_to_none=True)
        losses.append(loss.item().hex())
    with open(args.out, "w") as f:
        json.dump({"losses": losses, "grads": grads,
                   "annotated": bool(handle and handle.active)}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
