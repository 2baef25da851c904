"""tracer.torch hooks with a recording NVTX shim: balanced, properly nested
push/pop on the thread that runs each module, forward and backward.

The shim (nvtx_recorder.Recorder) stands for an NVTX client: it logs
push(name) / pop() with the calling thread instead of calling NVTX, so the
test sees exactly the sequence libtracer would receive.
"""

import copy
import gc
import importlib.util
import inspect
import os
import pickle
import sys
import threading
import unittest
import warnings
import weakref

import tracer_testing

tracer_testing.need_torch()

import torch  # noqa: E402
from torch import nn  # noqa: E402

import tracer.torch as tt  # noqa: E402
from tracer import _nvtx  # noqa: E402
from nvtx_recorder import Recorder, replay  # noqa: E402


def load_sample():
    spec = importlib.util.spec_from_file_location("lora_finetune", tracer_testing.SAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = load_sample()
# The sample keeps the seeds' names, shared by q, k, v and o on purpose.
SAMPLE_NAMES = dict(warn_shared_names=False, distinct_names=False)


def tiny_model(layers=2, adapters=2):
    cfg = SAMPLE.parse_args(
        ["--layers", str(layers), "--adapters", str(adapters), "--hidden", "32", "--heads", "2",
         "--seq", "8", "--vocab", "64"]
    )
    torch.manual_seed(0)
    return cfg, SAMPLE.TinyLlama(cfg)


def batch(cfg):
    g = torch.Generator().manual_seed(1)
    rows = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq + 1), generator=g)
    return rows[:, :-1], rows[:, 1:]


class HookTest(unittest.TestCase):
    def setUp(self):
        self.rec = Recorder()
        tt.set_backend(self.rec)
        tt.set_enabled(True)

    def tearDown(self):
        tt.set_backend(None)
        tt.set_enabled(None)

    def run_step(self, model, cfg, warm=True):
        """One recorded step; with `warm`, after an unrecorded one: from the
        second call of a module on, the calls inside an outermost one hand
        their end markers up and push from a pre-hook on their outputs'
        nodes (the first call of each gives its own outputs an edge)."""
        tokens, targets = batch(cfg)
        for _ in range(2 if warm else 1):
            self.rec.events.clear()
            with tt.step(0):
                with tt.forward():
                    loss = model(tokens, targets)
                with tt.backward():
                    loss.backward()
            model.zero_grad(set_to_none=True)
        return loss

    def test_first_and_later_steps_give_the_same_ranges(self):
        cfg, model = tiny_model()
        handle = tt.annotate(model, **SAMPLE_NAMES)
        trees = []
        for _ in range(3):
            self.run_step(model, cfg, warm=False)
            root = replay(self.rec.events)[threading.get_ident()]
            trees.append([(n.depth, n.name) for n in root.descendants()])
        handle.remove()
        self.assertGreater(len([n for _, n in trees[0] if n.startswith("b_")]), 100)
        self.assertEqual(trees[1], trees[0])
        self.assertEqual(trees[2], trees[0])

    def test_forward_and_backward_balanced_and_nested(self):
        cfg, model = tiny_model()
        handle = tt.annotate(model, **SAMPLE_NAMES)
        self.assertTrue(handle.active)
        self.run_step(model, cfg)
        handle.remove()
        roots = replay(self.rec.events)
        # CPU autograd runs backward on the calling thread.
        self.assertEqual(list(roots), [threading.get_ident()])
        root = roots[threading.get_ident()]
        (step,) = root.children
        self.assertEqual(step.name, "step")
        fwd, bwd = step.children
        self.assertEqual((fwd.name, bwd.name), ("forward", "backward"))
        fnames = {n.name for n in fwd.descendants()}
        bnames = {n.name for n in bwd.descendants()}
        self.assertTrue(all(n.startswith("f_") for n in fnames), fnames)
        self.assertTrue(all(n.startswith("b_") for n in bnames), bnames)
        for layer in range(cfg.layers):
            for a in cfg.adapter_names:
                for part in ("lora_split", "dropout", "lora_a", "lora_b", "scaling", "lora_add"):
                    self.assertIn(f"f_{part}_{a}_{layer}", fnames)
                    self.assertIn(f"b_{part}_{a}_{layer}", bnames)
            for part in ("q", "k", "v", "o", "attention", "w1", "w2", "w3", "w1_m_w3",
                         "silu_w2", "ffn_norm", "q_rope", "k_rope"):
                self.assertIn(f"f_{part}_{layer}", fnames)
                self.assertIn(f"b_{part}_{layer}", bnames)
        self.assertIn("f_embedding", fnames)
        self.assertNotIn("b_embedding", bnames)  # indices: no backward range

    def test_module_ranges_contain_their_children(self):
        cfg, model = tiny_model(layers=1)
        handle = tt.annotate(model, **SAMPLE_NAMES)
        self.run_step(model, cfg)
        handle.remove()
        root = replay(self.rec.events)[threading.get_ident()]
        by_name = {}
        for n in root.descendants():
            by_name.setdefault(n.name, []).append(n)
        for prefix in ("f_", "b_"):
            (q,) = by_name[prefix + "q_0"]
            inside = {n.name for n in q.descendants()}
            self.assertIn(prefix + "linear_wq_0", inside)
            self.assertIn(prefix + "lora_a_alpaca_0", inside)
            self.assertIn(prefix + "lora_b_gsm_0", inside)
            self.assertNotIn(prefix + "linear_wk_0", inside)
            (rot,) = by_name[prefix + "rotary_emb_0"]
            self.assertEqual({n.name for n in rot.children}, {prefix + "q_rope_0", prefix + "k_rope_0"})
        # Backward runs in reverse: the loss first, the first layer's norm last.
        bwd_order = [n.name for n in root.descendants() if n.name.startswith("b_")]
        self.assertLess(bwd_order.index("b_calc_loss"), bwd_order.index("b_w2_0"))
        self.assertLess(bwd_order.index("b_w2_0"), bwd_order.index("b_q_0"))

    def test_exception_in_forward_still_pops(self):
        class Boom(nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        model = nn.Sequential(nn.Linear(4, 4), Boom())
        handle = tt.annotate(model)
        with self.assertRaises(ValueError):
            model(torch.ones(2, 4))
        handle.remove()
        replay(self.rec.events)  # raises if unbalanced
        self.assertEqual([e[2] for e in self.rec.events if e[1] == "push"], ["f_0", "f_1"])

    def test_remove_and_filters(self):
        cfg, model = tiny_model(layers=2)
        handle = tt.annotate(model, include=["layers.*"], exclude=["lora_*", nn.Dropout],
                             max_depth=3, **SAMPLE_NAMES)
        paths = set(handle.ranges)
        self.assertIn("layers.1.q", paths)
        self.assertIn("layers.0.q", paths)
        self.assertNotIn("layers.0.q.linear_wq", paths)  # depth 4
        self.assertNotIn("embedding", paths)
        self.assertFalse(any(".lora_" in p or ".dropout" in p for p in paths), paths)
        self.assertFalse(any(p.count(".") >= 3 for p in paths), paths)
        handle.remove()
        self.rec.events.clear()
        tokens, targets = batch(cfg)
        model(tokens, targets).backward()
        self.assertEqual(self.rec.events, [])

    def test_name_fn_and_root(self):
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        handle = tt.annotate(model, include_root=True,
                             name_fn=lambda path, m: None if isinstance(m, nn.ReLU) else
                             (path or "root").upper())
        self.assertEqual(handle.ranges, {"": ("f_ROOT", "b_ROOT"), "0": ("f_0", "b_0")})
        handle.remove()

    def test_shared_names_qualified_until_distinct(self):
        def stack():
            layer = nn.Module()
            layer.attn = nn.Module()
            layer.attn.q = nn.Linear(2, 2)
            s = nn.Module()
            s.layers = nn.ModuleList([layer])
            return s

        model = nn.Module()
        model.encoder, model.decoder, model.head = stack(), stack(), nn.Linear(2, 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            handle = tt.annotate(model)
        handle.remove()
        self.assertEqual(caught, [])
        names = {p: f for p, (f, _) in handle.ranges.items()}
        self.assertEqual(names["encoder.layers.0.attn.q"], "f_encoder_layers_attn_q_0")
        self.assertEqual(names["decoder.layers.0.attn.q"], "f_decoder_layers_attn_q_0")
        self.assertEqual(names["encoder.layers.0"], "f_encoder_layers_0")
        self.assertEqual(names["head"], "f_head")  # not shared: as before
        self.assertEqual(len(set(names.values())), len(names))

    def test_inplace_module_and_siblings_are_forward_only(self):
        model = nn.Sequential(nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True)), nn.Linear(4, 1))
        handle = tt.annotate(model)
        self.assertEqual(handle.ranges["0.0"], ("f_0_0", None))
        self.assertEqual(handle.ranges["0.1"], ("f_1_0", None))
        self.assertEqual(handle.ranges["1"], ("f_1", "b_1"))
        x = torch.ones(2, 4, requires_grad=True)
        model(x).sum().backward()  # would raise with backward hooks on 0.0
        handle.remove()
        replay(self.rec.events)
        pushes = sorted(e[2] for e in self.rec.events if e[1] == "push")
        self.assertEqual(pushes, ["b_0", "b_1", "f_0", "f_0_0", "f_1", "f_1_0"])

    def test_frozen_input_range_waits_for_weight_gradient(self):
        # Input needs no gradient: torch fires the full backward hook before
        # the weight gradient is made; the range must still contain it.
        lin = nn.Linear(4, 4)
        lin.weight.register_hook(lambda g: self.rec.events.append((threading.get_ident(), "mark", "wgrad")))
        # The root annotated too: from the second call on, the layer's end
        # marker is fed by the root's output edge and it pushes from a
        # pre-hook on its output's node.
        model = nn.Sequential(lin)
        handle = tt.annotate(model, force=True, include_root=True)
        for _ in range(3):
            model(torch.ones(2, 4)).sum().backward()
        handle.remove()
        seq = [(e[1], e[2]) for e in self.rec.events]
        marks = [i for i, x in enumerate(seq) if x == ("mark", "wgrad")]
        self.assertEqual(len(marks), 3)
        for i in marks:
            self.assertEqual(seq[i - 1], ("push", "b_0"))
            self.assertEqual(seq[i + 1], ("pop", None))
        replay([e for e in self.rec.events if e[1] != "mark"])

    def test_parameter_without_gradient_still_balances(self):
        class TwoWeights(nn.Module):
            def __init__(self):
                super().__init__()
                self.used = nn.Parameter(torch.ones(4))
                self.unused = nn.Parameter(torch.ones(4))  # never gets a gradient

            def forward(self, x):
                return x * self.used

        m = nn.Sequential(TwoWeights())
        handle = tt.annotate(m)
        for _ in range(3):
            m(torch.ones(2, 4)).sum().backward()
        handle.remove()
        # The range ends when the module's backward nodes are done, whichever
        # of its parameters got a gradient.
        replay(self.rec.events)
        self.assertEqual([e[2] for e in self.rec.events if e[1] == "push"].count("b_0"), 3)

    def test_backward_on_another_thread_pairs_on_that_thread(self):
        # Stands for the GPU case, where backward runs on engine threads:
        # the pre-hook (push) and hook (pop) must land on the same thread.
        cfg, model = tiny_model(layers=1)
        handle = tt.annotate(model, **SAMPLE_NAMES)
        tokens, targets = batch(cfg)
        model(tokens, targets).backward()  # the first calls: each its own output edge
        self.rec.events.clear()
        loss = model(tokens, targets)
        worker = threading.Thread(target=loss.backward)
        worker.start()
        worker.join()
        handle.remove()
        roots = replay(self.rec.events)
        self.assertIn(worker.ident, roots)
        names = {n.name for n in roots[worker.ident].descendants()}
        self.assertIn("b_q_0", names)
        self.assertFalse(any(n.startswith("f_") for n in names))


class ForwardWrapperTest(unittest.TestCase):
    """With the C++ hooks, annotate() sets a forward wrapper on each module
    (Module.__call__ then takes its no-hook fast path); with the Python hooks
    it registers forward hooks. Either way the model must compute, copy,
    pickle and come apart as one without ranges would."""

    def setUp(self):
        self.rec = Recorder()

    def pushes(self):
        return [e[2] for e in self.rec.events if e[1] == "push"]

    def test_copy_computes_with_its_own_weights(self):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        handle = tt.annotate(model, force=True, backend=self.rec)
        clone = copy.deepcopy(model)
        with torch.no_grad():
            clone[2].weight.mul_(2.0)
        x = torch.randn(3, 4)
        self.assertTrue(torch.equal(clone(x), nn.functional.linear(
            torch.relu(nn.functional.linear(x, clone[0].weight, clone[0].bias)),
            clone[2].weight, clone[2].bias)))
        self.assertFalse(torch.equal(clone(x), model(x)))
        self.rec.events.clear()
        clone(x).sum().backward()
        replay(self.rec.events)
        self.assertEqual(sorted(set(self.pushes())), ["b_0", "b_1", "b_2", "f_0", "f_1", "f_2"])
        handle.remove()

    def test_pickled_model_loads_without_ranges(self):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        handle = tt.annotate(model, force=True, backend=self.rec)
        if not handle.native:
            self.skipTest("the Python hooks are closures: a hooked model does not pickle")
        loaded = pickle.loads(pickle.dumps(model))
        x = torch.randn(2, 4)
        expected = model(x)
        self.rec.events.clear()
        self.assertTrue(torch.equal(loaded(x), expected))
        self.assertEqual(self.rec.events, [])
        for m in loaded.modules():
            self.assertNotIsInstance(m.__dict__.get("forward"), type(model[0].forward))
        handle.remove()

    def test_remove_puts_back_the_forward_there_was(self):
        class Doubled(nn.Module):
            def forward(self, x):
                return 2 * x

        model = nn.Sequential(nn.Linear(2, 2), Doubled())
        own = model[1].forward
        model[1].forward = lambda x: own(x) + 1  # an instance-level forward (accelerate)
        previous = model[1].__dict__["forward"]
        signature = inspect.signature(model[0].forward)
        handle = tt.annotate(model, force=True, backend=self.rec)
        self.assertEqual(inspect.signature(model[0].forward), signature)
        x = torch.ones(1, 2)
        self.assertTrue(torch.equal(model(x), 2 * model[0](x) + 1))
        self.assertIn("f_1", self.pushes())
        handle.remove()
        self.assertNotIn("forward", model[0].__dict__)
        self.assertIs(model[1].__dict__["forward"], previous)
        self.rec.events.clear()
        self.assertTrue(torch.equal(model(x), 2 * model[0](x) + 1))
        self.assertEqual(self.rec.events, [])

    def test_forward_wrapped_after_annotate_survives_remove(self):
        model = nn.Sequential(nn.Linear(2, 2))
        handle = tt.annotate(model, force=True, backend=self.rec)
        inner = model[0].forward
        calls = []

        def outer(*args, **kwargs):  # what accelerate's add_hook_to_module does
            calls.append(1)
            return inner(*args, **kwargs)

        model[0].forward = outer
        x = torch.ones(1, 2, requires_grad=True)
        model(x).sum().backward()
        replay(self.rec.events)
        self.assertEqual(self.pushes(), ["f_0", "b_0"])
        handle.remove()
        self.rec.events.clear()
        model(x).sum().backward()
        self.assertIs(model[0].__dict__["forward"], outer)
        self.assertEqual((len(calls), self.rec.events), (2, []))
        # What annotate left (a wrapper turned off) keeps nothing alive.
        alive = weakref.ref(model[0])
        del model, inner, outer
        gc.collect()
        self.assertIsNone(alive())


    def test_data_parallel_replicas_run_their_own_forward(self):
        # What torch.nn.parallel.replicate does to a module tree, less the
        # copies onto other GPUs (there is none here): each module's replica
        # from Module._replicate_for_data_parallel (a copy of its instance
        # attributes), given its own parameters and its children's replicas.
        def replicate(module):
            replica = module._replicate_for_data_parallel()
            for key, param in module._parameters.items():
                if param is not None:
                    replica._parameters[key] = (param.detach() * 2).requires_grad_()
            for key, child in module._modules.items():
                replica._modules[key] = replicate(child)
            return replica

        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        handle = tt.annotate(model, force=True, backend=self.rec)
        replica = replicate(model)
        x = torch.randn(3, 4)
        want = nn.functional.linear(
            torch.relu(nn.functional.linear(x, 2 * model[0].weight, 2 * model[0].bias)),
            2 * model[2].weight, 2 * model[2].bias)
        self.rec.events.clear()
        out = replica(x)
        self.assertTrue(torch.equal(out, want))
        out.sum().backward()
        replay(self.rec.events)
        self.assertEqual(sorted(set(self.pushes())), ["b_0", "b_1", "b_2", "f_0", "f_1", "f_2"])
        self.assertIsNone(model[0].weight.grad)  # the replica's own parameters got them
        self.assertIsNotNone(replica[0].weight.grad)
        handle.remove()


class CompileTest(unittest.TestCase):
    def test_balanced_under_torch_compile(self):
        # Dynamo tracing the hooks would drop the backward pops; the "eager"
        # backend runs Dynamo without compiling code, so this stays fast.
        rec = Recorder()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 1))
        handle = tt.annotate(model, force=True, backend=rec)
        compiled = torch.compile(model, backend="eager")
        for _ in range(2):
            compiled(torch.randn(4, 8, requires_grad=True)).sum().backward()
        handle.remove()
        torch._dynamo.reset()
        replay(rec.events)
        pushes = [e[2] for e in rec.events if e[1] == "push"]
        self.assertEqual(sorted(set(pushes)), ["b_0", "b_1", "b_2", "f_0", "f_1", "f_2"])
        self.assertEqual(len(pushes), 12)


class DisabledTest(unittest.TestCase):
    def tearDown(self):
        tt.set_enabled(None)
        tt.set_backend(None)

    def test_no_tracer_no_hooks(self):
        tt.set_enabled(False)
        _, model = tiny_model(layers=1)
        handle = tt.annotate(model)
        self.assertFalse(handle.active)
        for m in model.modules():
            self.assertFalse(m._forward_pre_hooks or m._forward_hooks or m._backward_hooks
                             or m._backward_pre_hooks)
        self.assertIs(tt.step(1), tt.forward())  # one shared no-op

    def test_detection_from_environment(self):
        self.assertFalse(_nvtx.tracer_attached({}))
        self.assertTrue(_nvtx.tracer_attached({"NVTX_INJECTION64_PATH": "/x/libtracer.so"}))
        self.assertTrue(_nvtx.tracer_attached({"LD_PRELOAD": "/opt/lib/libtracer.so"}))
        self.assertFalse(_nvtx.tracer_attached({"LD_PRELOAD": "/usr/lib/libjemalloc.so"}))

    def test_tool_started_by_active_annotate_only(self):
        # annotate() loads the NVTX tool before DataLoader workers can fork
        # (tests/python/test_fork.py shows why).
        rec = Recorder()
        tt.set_enabled(False)
        tt.annotate(nn.Linear(2, 2), backend=rec)
        self.assertEqual(getattr(rec, "tool_starts", 0), 0)
        tt.annotate(nn.Linear(2, 2), backend=rec, force=True).remove()
        self.assertEqual(rec.tool_starts, 1)

    def test_force_registers_hooks(self):
        tt.set_enabled(False)
        rec = Recorder()
        model = nn.Sequential(nn.Linear(2, 2))
        handle = tt.annotate(model, force=True, backend=rec)
        model(torch.ones(1, 2))
        handle.remove()
        self.assertEqual([e[1:3] for e in rec.events], [("push", "f_0"), ("pop", None)])


class Scale(nn.Module):
    def __init__(self, trainable):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(2.0), requires_grad=trainable)

    def forward(self, x):
        return x * self.w


class Add(nn.Module):
    def forward(self, a, b):
        return a + b


class OneNodeModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(4, 4)
        self.s1, self.s2 = Scale(True), Scale(False)
        self.add = Add()
        self.act = nn.SiLU()

    def forward(self, x):
        h = self.inp(x)
        return self.act(self.add(self.s1(h), self.s2(h))).sum()


class NativeTest(unittest.TestCase):
    """tracer._torch_ranges (the C++ hooks) against the Python hooks."""

    def setUp(self):
        if tt._native_module() is None:
            self.skipTest("tracer._torch_ranges not built for this torch: Python hooks only")

    def recorded_steps(self, native, steps=2):
        cfg, model = tiny_model()
        rec = Recorder()
        handle = tt.annotate(model, force=True, backend=rec, native=native, **SAMPLE_NAMES)
        self.assertEqual(handle.native, native)
        tokens, targets = batch(cfg)
        trees, losses = [], []
        for _ in range(steps):
            rec.events.clear()
            loss = model(tokens, targets)
            loss.backward()
            losses.append(loss.item())
            model.zero_grad(set_to_none=True)
            root = replay(rec.events)[threading.get_ident()]
            trees.append([(n.depth, n.name) for n in root.descendants()])
        handle.remove()
        return trees, losses

    def test_same_ranges_and_losses_as_the_python_hooks(self):
        native_trees, native_losses = self.recorded_steps(True)
        python_trees, python_losses = self.recorded_steps(False)
        self.assertEqual(native_trees, python_trees)
        self.assertEqual(native_losses, python_losses)
        self.assertTrue(any(name.startswith("b_lora_a") for _, name in native_trees[1]))

    def marked_trees(self, build, run, native, steps=2):
        """(depth, name, marks) of each range of `steps` backward passes
        `run(model, loss)` makes, a mark where each trainable weight's
        gradient is accumulated: which range is open then."""
        model, inputs = build()
        rec = Recorder()
        handle = tt.annotate(model, force=True, backend=rec, native=native, **SAMPLE_NAMES)
        self.assertEqual(handle.native, native)
        for name, p in model.named_parameters():
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(lambda _, name=name: rec.mark(name))
        trees = []
        for _ in range(steps):
            rec.events.clear()
            torch.manual_seed(2)  # the same dropout masks for both hooks
            run(model, model(*inputs))
            model.zero_grad(set_to_none=True)
            root = replay(rec.events)[threading.get_ident()]
            trees.append([(n.depth, n.name, tuple(n.marks)) for n in root.descendants()])
        handle.remove()
        return trees

    def test_same_ranges_and_gradient_placement_as_the_python_hooks(self):
        # The C++ end markers hand each other their placeholder gradient in
        # a chain, have no anchor edge, and a call whose backward is one node
        # has none (a post-hook on that node); the Python ones are each fed
        # by the output edge and hang from an anchor. Same ranges, same
        # nesting and every weight gradient accumulated in the same range,
        # under backward(), backward(inputs=) and autograd.grad (which runs
        # only what leads to the asked tensors).
        import peft_like

        def sample():
            cfg, model = tiny_model()
            return model, batch(cfg)

        def peft():
            return peft_like.build(layers=2), peft_like.batch()

        def one_node_modules():
            # Modules whose backward is one node: ended by a post-hook on
            # it, unless a weight of theirs is accumulated after it (s1).
            torch.manual_seed(0)
            return nn.Sequential(OneNodeModules()), (torch.randn(3, 4),)

        def some_params(model):
            # One layer's (peft_like's "chat" adapter is never called).
            return [p for n, p in model.named_parameters()
                    if p.requires_grad and (".1." in n or ".s1." in n) and ".chat." not in n]

        def grad_of_some(model, loss):
            params = some_params(model)
            self.assertTrue(params)
            torch.autograd.grad(loss, params)

        def backward_of_one(model, loss):
            loss.backward(inputs=some_params(model)[-1:])

        runs = {"backward": lambda model, loss: loss.backward(),
                "autograd.grad": grad_of_some, "backward(inputs=)": backward_of_one}
        for model_name, build in (("sample", sample), ("peft", peft),
                                  ("one-node modules", one_node_modules)):
            for run_name, run in runs.items():
                with self.subTest(model=model_name, run=run_name):
                    native = self.marked_trees(build, run, True)
                    python = self.marked_trees(build, run, False)
                    self.assertEqual(native, python)
                    self.assertTrue(any(name.startswith("b_") for _, name, _ in native[1]))
                    if run_name == "backward":
                        self.assertTrue(any(marks for _, name, marks in native[1]
                                            if name.startswith("b_")))

    def test_another_torch_version_gets_the_python_hooks(self):
        # The module's C++ ABI is that of the torch it was built against.
        code = (
            "import torch; torch.__version__ = '0.0.0'\n"
            "import tracer.torch as tt\n"
            "h = tt.annotate(torch.nn.Linear(2, 2), force=True, backend='torch')\n"
            "print(h.native, tt._Native.error)\n"
        )
        out = tracer_testing.run([sys.executable, "-c", code],
                                 env=tracer_testing.clean_env(PYTHONPATH=os.path.join(
                                     tracer_testing.SOURCE_DIR, "python")))
        self.assertEqual(out.returncode, 0, out.stdout)
        self.assertIn("False tracer._torch_ranges was built for torch", out.stdout)

    def test_no_op_backend_pushes_nothing_and_runs(self):
        cfg, model = tiny_model(layers=1)
        handle = tt.annotate(model, force=True, backend=_nvtx.NullBackend(), native=True)
        tokens, targets = batch(cfg)
        for _ in range(2):
            model(tokens, targets).backward()
        handle.remove()
        for m in model.modules():
            self.assertFalse(m._forward_pre_hooks or m._forward_hooks)


class BuildTest(unittest.TestCase):
    def test_hooks_the_build_made(self):
        # Under ctest: the C++ hooks wherever CMake built them, the Python
        # hooks in the *_python variants and where torch was not found.
        expected = tracer_testing.expected_native()
        if expected is None:
            self.skipTest("TRACER_EXPECT_NATIVE not set (not run by ctest)")
        self.assertEqual(tt.annotate(nn.Linear(2, 2), force=True, backend=Recorder()).native,
                         expected, tt._Native.error)


class BackendTest(unittest.TestCase):
    def test_real_clients_without_a_tool(self):
        # Both real NVTX clients must be callable when no tool is attached
        # (they are then no-ops inside NVTX).
        for choice in ("torch", "nvtx"):
            backend = _nvtx.select_backend(choice)
            if backend.name != choice:
                continue  # that client is not installed here
            push = backend.make_push("x")
            push()
            backend.pop()

    def test_record_function_backend_under_profiler(self):
        model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1))
        handle = tt.annotate(model, force=True, backend=tt.RecordFunctionBackend())
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            model(torch.ones(2, 4, requires_grad=True)).sum().backward()
        handle.remove()
        keys = {e.key for e in prof.key_averages()}
        self.assertTrue({"f_0", "f_1", "b_0", "b_1"} <= keys, keys)


if __name__ == "__main__":
    tracer_testing.main()
