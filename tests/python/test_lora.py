"""tracer.torch on a LoRA model as peft builds it (tests/python/peft_like.py):
frozen base layers, trainable lora_A / lora_B adapters, the first decoder
layer's input (a frozen embedding's output) needing no gradient.

  * every layer's backward range holds its adapters' backward ranges and
    their weight gradients, at the right depth (layer > self_attn > q_proj >
    adapter), the first layer included;
  * losses and gradients are bit for bit those without annotate, over
    several optimizer steps, with dropout, under deterministic settings;
  * adapters that share a module name across projections get distinct
    range names;
  * end to end under libtracer: the same, from the trace file.

The in-process tests record the hooks' NVTX calls with nvtx_recorder (a
stand-in for an NVTX client, see there).
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import unittest
import warnings
from collections import defaultdict

import tracer_testing

tracer_testing.need_torch()

import torch  # noqa: E402
from torch import nn  # noqa: E402

import peft_like  # noqa: E402
import tracer.torch as tt  # noqa: E402
from nvtx_recorder import Recorder, replay  # noqa: E402

LAYERS = 3
PROJ = ("q_proj", "v_proj")
LAYER_PATH = "base_model.model.model.layers.{}"


def adapter_params(model, adapter="default"):
    """The active adapter's weights (the "chat" adapter is never called)."""
    return {n: p for n, p in model.named_parameters() if p.requires_grad and f".{adapter}." in n}


class rec_range:
    """step / forward / backward ranges through a Recorder."""

    def __init__(self, rec, name):
        self.push, self.pop = rec.make_push(name), rec.pop

    def __enter__(self):
        self.push()

    def __exit__(self, *exc):
        self.pop()


class LoraRangesTest(unittest.TestCase):
    """One annotated step of the peft-like model, recorded."""

    @classmethod
    def setUpClass(cls):
        cls.rec = rec = Recorder()
        cls.model = model = peft_like.build(layers=LAYERS)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cls.handle = tt.annotate(model, force=True, backend=rec)
        cls.warnings = [str(w.message) for w in caught]
        # Each weight gradient, as it is accumulated, marks the range open then.
        for name, p in adapter_params(model).items():
            p.register_post_accumulate_grad_hook(lambda _, name=name: rec.mark(name))
        tokens, labels = peft_like.batch()
        # Two steps, the second one checked: from the second call of a
        # module on, the calls inside an outermost one hand their end
        # markers up and push from a pre-hook on their outputs' nodes.
        cls.trees = []
        for _ in range(2):
            rec.events.clear()
            with rec_range(rec, "step"):
                with rec_range(rec, "forward"):
                    loss = model(tokens, labels)
                with rec_range(rec, "backward"):
                    loss.backward()
            model.zero_grad(set_to_none=True)
            root = replay(rec.events)[threading.get_ident()]
            cls.trees.append([(n.depth, n.name, tuple(n.marks)) for n in root.descendants()])
        cls.handle.remove()
        cls.root = replay(rec.events)[threading.get_ident()]
        cls.by_name = defaultdict(list)
        for n in cls.root.descendants():
            cls.by_name[n.name].append(n)

    def one(self, name):
        nodes = self.by_name.get(name, [])
        self.assertEqual(len(nodes), 1, f"{name}: {len(nodes)} ranges")
        return nodes[0]

    def test_first_step_gives_the_same_ranges(self):
        # The first step's calls each feed their own end marker.
        self.assertEqual(self.trees[0], self.trees[1])

    def test_every_range_is_balanced_on_one_thread(self):
        # replay() raised otherwise; CPU autograd runs on the calling thread.
        self.assertEqual(list(replay(self.rec.events)), [threading.get_ident()])

    def test_adapter_ranges_nest_under_their_projection_attention_and_layer(self):
        for i in range(LAYERS):
            for proj in PROJ:
                for part in ("lora_A", "lora_B", "lora_dropout"):
                    for prefix in ("f_", "b_"):
                        if (i, part, prefix) == (0, "lora_dropout", "b_"):
                            # Dropout of an input needing no gradient: no backward.
                            self.assertNotIn(f"b_{proj}_{part}_default_0", self.by_name)
                            continue
                        node = self.one(f"{prefix}{proj}_{part}_default_{i}")
                        up = [a.name for a in node.ancestors()]
                        phase = "forward" if prefix == "f_" else "backward"
                        self.assertEqual(
                            up[: up.index(phase) + 1],
                            [f"{prefix}{proj}_{i}", f"{prefix}self_attn_{i}", f"{prefix}layers_{i}",
                             f"{prefix}model_model", f"{prefix}base_model_model",
                             f"{prefix}base_model", phase],
                            node.name)

    def test_layer_backward_holds_its_adapters_weight_gradients(self):
        # Layer 0's input needs no gradient and the layer has no trainable
        # weight of its own: its range must still last until the last of its
        # adapters' gradients is made (it used to close at once).
        for name in adapter_params(self.model):
            parts = name.split(".")
            layer, proj, part = int(parts[4]), parts[6], parts[7]
            holders = [n for n in self.root.descendants() if name in n.marks]
            self.assertEqual([n.name for n in holders], [f"b_{proj}_{part}_default_{layer}"], name)
            self.assertIn(f"b_layers_{layer}", [a.name for a in holders[0].ancestors()], name)

    def test_layer_backward_lasts_as_long_as_its_contents(self):
        for i in range(LAYERS):
            layer = self.one(f"b_layers_{i}")
            inside = [n for n in layer.descendants() if "lora_" in n.name]
            per_proj = 2 if i == 0 else 3  # A, B (and dropout where its input needs a gradient)
            self.assertEqual(len(inside), per_proj * len(PROJ), [n.name for n in inside])
            self.assertGreaterEqual(layer.end_ns - layer.start_ns,
                                    sum(c.end_ns - c.start_ns for c in layer.children))
            # The base layer: no backward work (frozen weight, input needing
            # no gradient) in layer 0, a range of its own (input gradient) after.
            self.assertEqual(len(self.by_name[f"b_q_proj_base_layer_{i}"]), 0 if i == 0 else 1)

    def test_unused_adapter_has_no_ranges(self):
        self.assertFalse([n for n in self.by_name if "_chat_" in n])

    def test_shared_adapter_names_are_told_apart(self):
        names = [f for f, _ in self.handle.ranges.values()]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(self.warnings, [])
        ranges = self.handle.ranges
        for i in range(LAYERS):
            for proj in PROJ:
                path = f"{LAYER_PATH.format(i)}.self_attn.{proj}"
                self.assertEqual(ranges[f"{path}.lora_A.default"],
                                 (f"f_{proj}_lora_A_default_{i}", f"b_{proj}_lora_A_default_{i}"))
                self.assertEqual(ranges[path][0], f"f_{proj}_{i}")
            # Names no other module shares stay as they were.
            self.assertEqual(ranges[f"{LAYER_PATH.format(i)}.self_attn.k_proj"][0], f"f_k_proj_{i}")
            self.assertEqual(ranges[f"{LAYER_PATH.format(i)}.mlp.up_proj"][0], f"f_up_proj_{i}")

    def test_shared_names_kept_on_request(self):
        model = peft_like.build(layers=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            handle = tt.annotate(model, force=True, backend=Recorder(), distinct_names=False)
        handle.remove()
        path = f"{LAYER_PATH.format(0)}.self_attn"
        self.assertEqual(handle.ranges[f"{path}.q_proj.lora_A.default"],
                         handle.ranges[f"{path}.v_proj.lora_A.default"])
        self.assertTrue(any("shared by several modules" in str(w.message) for w in caught))


class OtherBackwardsTest(unittest.TestCase):
    def setUp(self):
        self.rec = Recorder()
        self.model = peft_like.build(layers=2)
        self.handle = tt.annotate(self.model, force=True, backend=self.rec)

    def tearDown(self):
        self.handle.remove()

    def test_autograd_grad_of_the_adapters_balances(self):
        # torch.autograd.grad runs only what leads to the asked tensors and
        # accumulates nothing; ranges still pair up. Modules whose inputs lead
        # to the asked tensors keep their backward ranges; those whose inputs
        # need no gradient (layer 0's) have their end off those paths.
        params = list(adapter_params(self.model).values())
        loss = self.model(*peft_like.batch())
        grads = torch.autograd.grad(loss, params)
        self.assertTrue(all(g is not None for g in grads))
        roots = replay(self.rec.events)
        names = {n.name for r in roots.values() for n in r.descendants()}
        for name in ("b_layers_1", "b_q_proj_1", "b_q_proj_lora_A_default_1", "b_lm_head"):
            self.assertIn(name, names)

    def test_backward_of_some_inputs_balances(self):
        wanted = "layers.1.self_attn.v_proj.lora_B.default.weight"
        params = [p for n, p in self.model.named_parameters() if n.endswith(wanted)]
        self.model(*peft_like.batch()).backward(inputs=params)
        replay(self.rec.events)
        self.assertIsNotNone(params[0].grad)

    def test_module_called_twice_gets_two_ranges(self):
        rec = Recorder()
        base = nn.Linear(8, 8)
        base.weight.requires_grad_(False)
        base.bias.requires_grad_(False)
        lora = peft_like.LoraLinear(base, ["default"], rank=2, alpha=4.0, dropout=0.0)
        model = nn.Sequential(lora)
        handle = tt.annotate(model, force=True, backend=rec)
        a = lora.lora_A["default"].weight
        a.register_post_accumulate_grad_hook(lambda _: rec.mark("A"))
        x = torch.randn(4, 8)
        (lora(x) * lora(x + 1)).sum().backward()
        handle.remove()
        root = replay(rec.events)[threading.get_ident()]
        b = [n for n in root.children if n.name == "b_0"]
        self.assertEqual(len(b), 2)
        # The weight gradient is made once, after both calls' backward: in
        # the range of the call that ran first (whose backward runs last).
        self.assertEqual(["A" in [m for d in [n, *n.descendants()] for m in d.marks] for n in b],
                         [False, True])


def train(model_fn, steps, annotate_with=None, seed=1234):
    """Losses (exact, as hex) and per-step gradients and final weights of
    `steps` AdamW steps, deterministic, with dropout."""
    torch.use_deterministic_algorithms(True)
    model = model_fn()
    handle = None
    if annotate_with is not None:
        handle = tt.annotate(model, force=True, backend=annotate_with, warn_shared_names=False)
        assert handle.ranges
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    torch.manual_seed(seed)
    losses, grads = [], []
    for i in range(steps):
        loss = model(*peft_like.batch(seed=i))
        loss.backward()
        losses.append(loss.item().hex())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        opt.step()
        opt.zero_grad(set_to_none=True)
    if handle is not None:
        handle.remove()
    weights = {n: p.detach().clone() for n, p in model.named_parameters()}
    return losses, grads, weights


class NumericsTest(unittest.TestCase):
    STEPS = 4

    def setUp(self):
        self.threads = torch.get_num_threads()
        torch.set_num_threads(1)

    def tearDown(self):
        torch.set_num_threads(self.threads)
        torch.use_deterministic_algorithms(False)

    def assert_same(self, a, b):
        la, ga, wa = a
        lb, gb, wb = b
        self.assertEqual(la, lb)
        self.assertEqual(len(ga), len(gb))
        for step, (x, y) in enumerate(zip(ga, gb)):
            self.assertEqual(set(x), set(y))
            self.assertTrue(x, "gradients were made")
            for name in x:
                self.assertTrue(torch.equal(x[name], y[name]), f"step {step}: {name}")
        for name in wa:
            self.assertTrue(torch.equal(wa[name], wb[name]), name)

    def test_peft_model_bit_identical(self):
        build = lambda: peft_like.build(layers=LAYERS)  # noqa: E731
        plain = train(build, self.STEPS)
        self.assertEqual(len(set(plain[0])), self.STEPS)  # the loss does move
        self.assert_same(plain, train(build, self.STEPS, Recorder()))
        torch_nvtx = tt._nvtx.select_backend("torch")
        if torch_nvtx.name == "torch":  # the client `tracer run` uses
            self.assert_same(plain, train(build, self.STEPS, torch_nvtx))

    def test_sample_model_bit_identical(self):
        # The mLoRA-style sample: one input feeds the base GEMM and every
        # adapter of q, k and v, the case where grouping gradients changes
        # their sum's rounding.
        spec = importlib.util.spec_from_file_location("lora_finetune", tracer_testing.SAMPLE)
        sample = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sample)
        cfg = sample.parse_args(["--layers", "2", "--adapters", "2", "--hidden", "32",
                                 "--heads", "2", "--seq", "16", "--vocab", "64"])

        class Wrapped(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(0)
                self.m = sample.TinyLlama(cfg)

            def forward(self, tokens, labels):
                return self.m(tokens, labels)

        self.assert_same(train(Wrapped, 3), train(Wrapped, 3, Recorder()))

    def test_identity_on_inputs_would_change_the_bits(self):
        # Why the hooks put nothing on a module's inputs: an identity node
        # there (what full backward hooks add) sums the gradients of the
        # module's own uses of an input first, then adds that to the other
        # uses', a different rounding. This is the check above failing for it.
        class Identity(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view_as(x)

            @staticmethod
            def backward(ctx, g):
                return g

        def build_wrapped():
            model = peft_like.build(layers=LAYERS)
            for m in model.modules():
                if isinstance(m, peft_like.LoraLinear):
                    m.register_forward_pre_hook(
                        lambda mod, args: (Identity.apply(args[0]),) + args[1:])
            return model

        plain = train(lambda: peft_like.build(layers=LAYERS), 1)
        wrapped = train(build_wrapped, 1)
        self.assertEqual(plain[0], wrapped[0])  # forward values are unchanged...
        differ = [n for n in plain[1][0] if not torch.equal(plain[1][0][n], wrapped[1][0][n])]
        self.assertTrue(differ, "...but some gradient's bits are not")


class TracedLoraTest(unittest.TestCase):
    """Under libtracer: the trace's ranges, and the numbers of the run."""

    STEPS = 3

    @classmethod
    def setUpClass(cls):
        if not (tracer_testing.LIB and os.path.exists(tracer_testing.LIB)):
            raise unittest.SkipTest("TRACER_LIB not given")
        cls.dir = tracer_testing.work_dir("lora")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peft_like.py")
        common = [sys.executable, script, "--steps", str(cls.STEPS), "--layers", str(LAYERS),
                  "--hidden", "128", "--seq", "64"]
        env = tracer_testing.clean_env(TRACER_SOURCE_DIR=tracer_testing.SOURCE_DIR)
        cls.trace_path = os.path.join(cls.dir, "lora.trace")
        if os.path.exists(cls.trace_path):
            os.remove(cls.trace_path)
        cls.runs = {}
        for name, traced, extra in (("traced", True, ["--annotate"]), ("plain", False, [])):
            out = os.path.join(cls.dir, f"{name}.json")
            cmd = common + ["--out", out] + extra
            proc = (tracer_testing.traced(cmd, cls.trace_path, env=env) if traced
                    else tracer_testing.run(cmd, env=env))
            if proc.returncode != 0:
                raise AssertionError(f"{name}: {proc.stdout[-3000:]}")
            with open(out) as f:
                cls.runs[name] = json.load(f)
        from trace_reader import read_trace

        cls.trace = read_trace(cls.trace_path)
        cls.by_id = {r.id: r for r in cls.trace.ranges}

    def ancestors(self, r):
        while r.parent_id:
            r = self.by_id[r.parent_id]
            yield r

    def test_same_numbers_with_the_tracer(self):
        traced, plain = self.runs["traced"], self.runs["plain"]
        self.assertTrue(traced["annotated"])
        self.assertFalse(plain["annotated"])
        self.assertEqual(traced["losses"], plain["losses"])
        self.assertEqual(traced["grads"], plain["grads"])
        self.assertEqual(len(traced["grads"][0]), 4 * LAYERS)  # A and B of q and v

    def test_adapter_ranges_nest_at_their_depth(self):
        self.assertIsNone(self.trace.error)
        ranges = [r for r in self.trace.ranges if r.name.startswith("b_") and "_lora_A_" in r.name]
        self.assertEqual(len(ranges), self.STEPS * LAYERS * len(PROJ))
        for r in ranges:
            i = r.name.rsplit("_", 1)[1]
            proj = r.name[2:8]
            up = [a.name for a in self.ancestors(r)]
            self.assertEqual(up[:3], [f"b_{proj}_{i}", f"b_self_attn_{i}", f"b_layers_{i}"], r.name)
            layer = self.by_id[r.parent_id]
            while layer.name != f"b_layers_{i}":
                layer = self.by_id[layer.parent_id]
            self.assertEqual(r.depth, layer.depth + 3)
            self.assertTrue(layer.start_ns <= r.start_ns and r.end_ns <= layer.end_ns)

    def test_shipped_peft_groups_bind_the_adapter(self):
        # `tracer report --groups peft` on this trace (data/groups/peft.groups):
        # q_proj.lora_A.default is the adapter "default", not "A_default".
        if not tracer_testing.CLI:
            self.skipTest("TRACER_CLI not given")
        proc = subprocess.run([tracer_testing.CLI, "report", self.trace_path, "--groups", "peft",
                               "--table", "groups", "--format", "json"],
                              cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        rows = {r["group"]: r for r in json.loads(proc.stdout)["groups"]}
        names = {r.name for r in self.trace.ranges}
        for prefix in ("f_", "b_"):
            adapter = re.compile(prefix + r"((q|v)_proj_)?lora_(A|B|dropout)_default_\d+$")
            base = re.compile(prefix + r"((q|v)_proj_)?base_layer_\d+$")
            self.assertEqual(rows[prefix + "lora_default"]["members"],
                             len([n for n in names if adapter.match(n)]))
            self.assertGreaterEqual(rows[prefix + "lora_default"]["members"], 2 * LAYERS)
            if prefix == "f_":
                self.assertEqual(rows["f_linear"]["members"],
                                 len([n for n in names if base.match(n)]))
        self.assertFalse([g for g in rows if "lora_A" in g or "lora_B" in g], list(rows))

    def test_first_layer_backward_is_not_instant(self):
        children = defaultdict(list)
        for r in self.trace.ranges:
            children[r.parent_id].append(r)
        # Layer 0 computes no input gradient through its frozen weights (its
        # input needs none) but all the rest: its range still lasts until its
        # modules' gradients are made (it used to close after microseconds,
        # before them). Each step, every layer's backward range holds the
        # ranges of the same modules, one after the other. Not a ratio of
        # durations: on a loaded machine pauses of tens of ms land in some
        # layers' ranges and miss others.
        held = defaultdict(list)  # layer index -> per step, its modules
        for r in self.trace.ranges:
            if r.name.startswith("b_layers_"):
                kids = children[r.id]
                self.assertTrue(kids, r.name)
                self.assertGreaterEqual(r.duration_ns, sum(k.duration_ns for k in kids), r.name)
                index = r.name.rsplit("_", 1)[1]
                names, todo = set(), list(kids)
                while todo:
                    k = todo.pop()
                    self.assertTrue(k.name.endswith(f"_{index}"), (r.name, k.name))
                    names.add(k.name[: -len(index) - 1])
                    todo += children[k.id]
                held[index].append(names)
        self.assertEqual(sorted(held), [str(i) for i in range(LAYERS)])
        for index, steps in held.items():
            self.assertEqual(len(steps), self.STEPS, index)
            for names in steps:  # the same modules every step
                self.assertEqual(names, steps[0], f"b_layers_{index}")
            if index != "0":
                self.assertEqual(steps[0], held["1"][0], f"b_layers_{index}")
        # Layer 0's modules whose input needs no gradient (its norm, k_proj,
        # the frozen base layers) may run no backward; its adapters do.
        first, other = held["0"][0], held["1"][0]
        adapters = {n for n in other if "_lora_A_" in n or "_lora_B_" in n}
        self.assertTrue(adapters)
        self.assertLessEqual(adapters | {"b_self_attn"}, first)
        self.assertLessEqual(first, other)


if __name__ == "__main__":
    tracer_testing.main()
