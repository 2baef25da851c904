"""NVTX ranges for a PyTorch model, named for `tracer report`.

    import tracer.torch as tt

    handle = tt.annotate(model)           # f_<name> / b_<name> per module
    for i, batch in enumerate(loader):
        with tt.step(i):
            with tt.forward():
                loss = model(batch)
            with tt.backward():
                loss.backward()
            with tt.optimizer():
                opt.step(); opt.zero_grad()
    handle.remove()

Names follow the mLoRA profiling convention (tracer/_naming.py): module
``layers.3.q.lora_a.alpaca`` pushes ``f_lora_a_alpaca_3`` around its forward
and ``b_lora_a_alpaca_3`` around its backward.

Zero cost without a tracer: `annotate` registers no hook, and the context
managers are a shared no-op, unless an NVTX tool is configured when they are
first used (NVTX_INJECTION64_PATH set, as `tracer run` does, or libtracer in
LD_PRELOAD). `annotate(..., force=True)` or `set_enabled(True)` overrides
that, e.g. to trace with another NVTX tool that attaches differently. An
active annotate() leaves one NVTX mark, ``tracer.torch``: it makes the
process load the tracer before DataLoader workers fork.

Cost (a shared 2-core CPU, CPU time): bench/torch/bench_step.py --procs 2
--rounds 12 --steps 2, on the LoRA sample's model with 4 layers of hidden
size 512 (284 annotated modules, about 0.59 s of CPU per step), with the
previous C++ hooks (forward hooks instead of the forward wrapper, below) in
the same rounds (--baseline-python), load 1.5-6: the C++ hooks cost
+0.80 % per step (95 % interval +0.03 to +1.57 %) against +1.64 % (+0.53
to +2.77 %) for the previous ones (-0.83 %, -1.64 to -0.02 %, block for
block); libtracer.so recording their ranges adds +0.12 % (-1.20 to
+1.46 %), not told apart from nothing; traced, +0.07 % (-1.74 to +1.92 %)
against +1.30 % (+0.31 to +2.29 %). The intervals are as wide as the
differences; on a model small enough that the hooks' own instructions
dominate (the same command with --rounds 10 --steps 40 -- --hidden 32
--heads 2 --seq 8 --threads 1: 8.8 ms of CPU per step) they are tight:
+15.95 % (+15.03 to +16.86 %, about 4.9 us per module call, forward and
backward) against +26.56 % (8.2 us) for the previous hooks, traced
+18.45 % against +32.64 % (-10.70 %, -11.45 to -9.94 %, block for
block). Those CPU figures predate the end-marker chain and post-hooks
(below); in instructions, which a loaded machine does not blur (the same
small model under bench_step.py --callgrind --procs 1 --rounds 4 --steps
3 --baseline-python, main's hooks in the same rounds): the hooks run
17.8 k instructions per module call (+8.79 %, 95 % interval +8.75 to
+8.84 %) against 35.8 k (+17.63 %) before them. The autograd engine runs
each extra node for about 20-25 k instructions (its per-node thread-local
state switch and record_function scope, the ready queue, allocations),
so what is left is mostly the end markers that remain (128 of 284 module
calls a step here) and the forward wrapper making them; libtracer.so
recording the ranges adds 1.0 k per call (+0.51 %, +0.38 to +0.65 %).
The Python hooks cost more: an autograd Function per call and Python run
in the backward pass (bench_hooks.py, Python hooks on 100 Linear layers: 3.6 us per call
for the forward ranges and 26 us for forward and backward on small
tensors, 22 us and 86 us with 2 MB of activations per layer: --width 16
--batch 32768 --steps 4). `backward=False`, `include`, `exclude` and
`max_depth` trim it.

Backward ranges: a module call's range is popped when the call's own
backward nodes, and the accumulation of the parameter gradients they make,
are done: an end node made in the forward pre-hook, before the module's own
ops, which the autograd engine (highest sequence number first) runs only
after every node made after it, once it holds its placeholder gradient.
An outermost call passes its outputs through an identity autograd Function
whose backward pushes its range and hands that gradient to its own end node
and to those of the calls inside it; these push theirs from a pre-hook on
the autograd node of their outputs (after the first step: the first call of
each module, before it is known whether the enclosing module returns
tensors, gets an identity of its own). So a layer's range covers its
backward work whenever anything inside it gets gradients, also when its
input needs no gradient and its only trainable weights are LoRA adapters
deep inside it (the first decoder layer of a LoRA model), and the ranges of
the modules inside it nest in it at their depth. Nothing is put on a
module's inputs: an identity there (what torch's full backward hooks
insert) sums the gradients of the module's uses of an input before adding
them to the others' and changes their rounding; with these hooks losses and
gradients are bit for bit those without them (tests/python/test_lora.py).

C++ hooks: where the build made tracer._torch_ranges for the torch in use
(python/src/torch_ranges.cc; the project's CMake builds it when torch is
importable, for that torch version only, as its C++ ABI changes between
releases), annotate() uses them instead of the Python ones below. They do
not register forward hooks: each module gets a forward wrapper set on the
instance (``module.forward``, a tracer._torch_ranges.Forward), one C call
that does what the two hooks would around the forward it wraps, so that
Module.__call__ keeps its no-hook fast path (with hooks it runs about
2.5 us of Python per call, a third of what the hooks cost per call on a
small model). It makes the same ranges with fewer nodes for the autograd
engine to run (each costs it about 20-25 k instructions): the end marker and
output edge are C++ autograd nodes and the start a C++ pre-hook on the
output's node, as here, but the end markers of an outermost call and the
calls inside it hand each other their placeholder gradient in a chain
(latest call first, the order the engine runs them in anyway) instead of
all waiting in the engine's ready queue from the output edge on, they
hang from no anchor, and a call whose first node leads only where its
end marker would (a frozen linear layer, a norm, an activation) gets no
marker: a post-hook on that node, which the engine runs last of the
call's, ends the range. With the torch or nvtx client they push to NVTX
by name from C++ and the backward pass runs no Python at all; other backends
(record_function, the tests' recorder) get their callables called, with
the GIL. The wrapper runs inside Module.__call__, after any forward
pre-hooks and before any forward hooks, so the forward range times
forward itself. copy.deepcopy(model) gives the copy wrappers of its own
forwards (with the same ranges), pickling gives the module's plain
forward, and Annotation.remove() puts back whatever forward the instance
had (or, if something wrapped it since, turns the wrapper into a plain
call). A TorchScript module gets the C++ hooks as forward hooks.
`annotate(..., native=False)` or TRACER_TORCH_NATIVE=0 picks the Python
hooks; tests/python runs its hook tests with both and checks they give the
same ranges and losses. The C++ nodes and pre-hook do not implement
compiled autograd's interface (torch._dynamo.compiled_autograd): use the
Python hooks (native=False) there. nn.DataParallel's replicas, which copy
their module's attributes (the wrapper among them), get the wrapper rebound
to the replica (annotate patches Module._replicate_for_data_parallel once),
so each replica runs its own forward with the module's ranges.

Names: modules whose default names would be the same (peft's
``lora_A.default`` in both ``q_proj`` and ``v_proj``) get the enclosing
path parts that tell them apart (``b_q_proj_lora_A_default_0``);
``distinct_names=False`` keeps shared names.

Threads: forward hooks run on the thread that calls the model. Backward
ranges are pushed and popped where the autograd engine runs the module's
backward: the calling thread on CPU, the device's engine thread on GPU
(output edge, the module's nodes and its end node all run on the outputs'
device queue). `tracer report` attributes work on engine threads to the
ranges open on the main thread (`step`, `backward`) too: a GPU op launched on
a worker thread also counts toward the ranges the main thread has open at
that moment (`tracer report --main-thread`; `off` gives nsys's attribution).

Limits: the output edge hands the next op a view of a hooked module's
output, and torch rejects an in-place change of such a view, so a module
with ``inplace=True`` and its siblings (the conv and batch norm before an
in-place ReLU) get forward ranges only; an in-place op on a hooked module's
output elsewhere raises in torch: exclude that module or pass
backward=False. Outputs that are a tensor or a tuple/list of tensors take
part; a call returning a dict (a ModelOutput) gets no backward range, nor
does a module whose output is its input unchanged (nn.Identity). Which
modules can have backward work is decided when annotate() runs: freeze
(get_peft_model) before annotating. A module with no input needing a
gradient and nothing trainable inside gets no backward range (no work to
time), nor do frozen embeddings. Under torch.autograd.grad(...) or
backward(inputs=...), the engine runs only what leads to the asked tensors:
a module then gets a backward range only if its inputs lead to them as well
(not the first LoRA layer, whose input needs no gradient); ranges stay
balanced. A parameter shared with a module outside (tied weights) is
accumulated once, after its last use, in whichever range is open then.
Under torch.compile the hooks run eagerly, cutting the compiled graph at
each annotated module (checked on CPU: balanced ranges, forward and
backward); annotate fewer modules to keep larger graphs.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import threading
import warnings
import weakref
from typing import Callable, Iterable, Optional, Sequence, Union

import torch
from torch import nn

from . import _nvtx
from ._naming import parse_module_path

__all__ = [
    "annotate",
    "Annotation",
    "RecordFunctionBackend",
    "module_names",
    "step",
    "forward",
    "backward",
    "optimizer",
    "range",
    "set_enabled",
    "set_backend",
    "enabled",
    "backend_name",
]

Pattern = Union[str, type]
NameFn = Callable[[str, nn.Module], Optional[str]]

# Containers that are never called: hooks on them would never fire.
_NEVER_CALLED = (nn.ModuleList, nn.ModuleDict, nn.ParameterList, nn.ParameterDict)
# Their inputs are indices, never differentiable: frozen, they have no
# backward work at all, so no (empty) backward range either.
_NO_BACKWARD = (nn.Embedding, nn.EmbeddingBag)


class _State:
    enabled: Optional[bool] = None  # None: decided by tracer_attached()
    backend: Optional[_nvtx.Backend] = None


_state = _State()


def set_enabled(value: Optional[bool]) -> None:
    """True/False overrides the tracer detection; None restores it."""
    _state.enabled = value
    _ranges.clear()


def enabled() -> bool:
    if _state.enabled is None:
        _state.enabled = _nvtx.tracer_attached()
    return _state.enabled


def set_backend(backend: Union[None, str, _nvtx.Backend]) -> None:
    """"torch", "nvtx", a Backend object (tests use a recording one), or None
    to choose again on next use. Affects hooks registered afterwards."""
    if isinstance(backend, str):
        backend = _nvtx.select_backend(backend)
    _state.backend = backend
    _ranges.clear()


def _backend() -> _nvtx.Backend:
    if _state.backend is None:
        _state.backend = _nvtx.select_backend()
    return _state.backend


def backend_name() -> str:
    return _backend().name


class RecordFunctionBackend(_nvtx.Backend):
    """The same ranges as torch.profiler user annotations (what
    ``torch.profiler.record_function`` records), to compare tracer with
    torch.profiler on equal terms (bench/torch). record_function is not a
    stack API, so each thread keeps the stack of its open handles."""

    name = "record_function"

    def __init__(self) -> None:
        import threading

        self._local = threading.local()
        self._enter = torch.ops.profiler._record_function_enter_new
        self._exit = torch.ops.profiler._record_function_exit

    def _stack(self) -> list:
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def make_push(self, name: str) -> _nvtx.Push:
        enter, stack = self._enter, self._stack

        def push() -> None:
            stack().append(enter(name, None))

        return push

    def pop(self) -> None:
        stack = self._stack()
        if stack:
            self._exit(stack.pop())


# --- step / forward / backward / optimizer ranges --------------------------


class _Range:
    __slots__ = ("_push", "_pop")

    def __init__(self, push: _nvtx.Push, pop: _nvtx.Pop) -> None:
        self._push = push
        self._pop = pop

    def __enter__(self) -> "_Range":
        self._push()
        return self

    def __exit__(self, *exc) -> bool:
        self._pop()
        return False


_NULL = contextlib.nullcontext()
_ranges: dict = {}


def range(name: str):  # noqa: A001 - mirrors torch.cuda.nvtx.range
    """Context manager pushing `name` (a shared no-op when disabled)."""
    r = _ranges.get(name)
    if r is None:
        if not enabled():
            return _NULL
        backend = _backend()
        r = _ranges[name] = _Range(backend.make_push(name), backend.pop)
    return r


def step(index: Optional[int] = None):
    """The `step` range. Every step has the same name so the report
    aggregates them (and a capture window can count them); `index` is
    accepted for readability of the caller's loop."""
    return range("step")


def forward():
    return range("forward")


def backward():
    return range("backward")


def optimizer():
    return range("optimizer")


# --- per-module hooks ------------------------------------------------------


class _Native:
    module = None  # tracer._torch_ranges, False when missing or refused
    error = ""


def _native_module():
    """tracer._torch_ranges (python/src/torch_ranges.cc), the same hooks
    with the backward machinery in C++, or None: not built, built for
    another torch version, or TRACER_TORCH_NATIVE=0."""
    if _Native.module is None:
        _Native.module = False
        if os.environ.get("TRACER_TORCH_NATIVE", "1") != "0":
            try:
                from . import _torch_ranges  # type: ignore[attr-defined]

                _Native.module = _torch_ranges
            except ImportError as e:
                _Native.error = str(e)
    return _Native.module or None


def _native_mode(native, backend: _nvtx.Backend) -> int:
    """0: no calls (the no-op backend), 1: NVTX by name (the torch and nvtx
    clients both push into NVTX's default domain), 2: the backend's
    callables (any other backend, e.g. a recorder)."""
    if isinstance(backend, _nvtx.NullBackend):
        return 0
    if native.has_nvtx and isinstance(backend, (_nvtx.TorchBackend, _nvtx.NvtxPackageBackend)):
        return 1
    return 2




def _adapter_positions(
    model: nn.Module, adapters: Optional[Iterable[str]]
) -> dict:
    """path -> set of part indices that are adapter keys. A key of an
    nn.ModuleDict is an adapter unless `adapters` lists the adapter names."""
    wanted = None if adapters is None else set(adapters)
    positions: dict = {"": frozenset()}
    for path, module in model.named_modules():
        here = positions.setdefault(path, frozenset())
        depth = 0 if not path else path.count(".") + 1
        for child_name, child in module.named_children():
            child_path = f"{path}.{child_name}" if path else child_name
            is_adapter = isinstance(module, nn.ModuleDict) and (
                wanted is None or child_name in wanted
            )
            positions[child_path] = here | {depth} if is_adapter else here
    return positions


def module_names(
    model: nn.Module, adapters: Optional[Iterable[str]] = None
) -> dict:
    """path -> ModuleName for every named submodule (root excluded)."""
    positions = _adapter_positions(model, adapters)
    out = {}
    for path, _ in model.named_modules():
        name = parse_module_path(path, positions.get(path, ()))
        if name is not None:
            out[path] = name
    return out


def _matches(path: str, name: str, module: nn.Module, patterns: Sequence[Pattern]) -> bool:
    for p in patterns:
        if isinstance(p, type):
            if isinstance(module, p):
                return True
        elif fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(name, p):
            return True
    return False


def _as_patterns(value) -> Sequence[Pattern]:
    if value is None:
        return ()
    if isinstance(value, (str, type)):
        return (value,)
    return tuple(value)


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _eager(hook):
    """torch.compile must not trace the hooks: a traced _Start / _End loses
    its callbacks (pushes without pops). Run eagerly, they cut the compiled
    graph at each annotated module, as torch's own full backward hooks do.
    The C++ hooks are builtins, which dynamo does not trace either: they need
    no wrapper (whose Python frame costs more than they do)."""
    disable = getattr(getattr(torch, "_dynamo", None), "disable", None)
    return disable(hook) if disable is not None else hook


def _nothing() -> None:
    return None


# Per device: the leaf every end marker hangs from (markers need an input
# that requires grad to be part of the graph at all; it never gets a
# gradient) and the placeholder gradient an output edge hands its marker (a
# 0-dim tensor, never read: it only puts the marker on the device's queue).
_anchors: dict = {}
_tokens_grads: dict = {}
_will_execute = getattr(torch._C, "_will_engine_execute_node", None)


def _anchor(device) -> torch.Tensor:
    a = _anchors.get(device)
    if a is None:
        a = _anchors[device] = torch.empty((), device=device, requires_grad=True)
    return a


def _token_grad(device) -> torch.Tensor:
    g = _tokens_grads.get(device)
    if g is None:
        g = _tokens_grads[device] = torch.empty((), device=device)
    return g


def _runs(node) -> bool:
    """Whether the engine will run `node` in the current backward (False
    for a marker that torch.autograd.grad(..., inputs=) leaves out)."""
    if _will_execute is None or node is None:
        return True
    try:
        return bool(_will_execute(node))
    except RuntimeError:
        return False


class _End(torch.autograd.Function):
    """The end of one module call's backward. Made in the forward pre-hook,
    before any of the call's own autograd nodes, so it has a lower sequence
    number than all of them. The engine runs ready nodes highest sequence
    number first (AccumulateGrad first of all), and while any node made
    after this one is still to run, one of those is ready (gradients flow
    from later nodes to earlier ones only, so the latest of them waits for
    nothing). So once this node holds its placeholder gradient it runs only
    when every node made after it is done: the call's own nodes and the
    accumulation of every parameter gradient they produce, also when no
    input needs a gradient (a frozen LoRA base layer) and whichever
    parameter is the last to get one. The gradient comes from the output
    edge (_Start) of the call itself or of a call enclosing it, which runs
    before this call's backward can start. It sits off the data path: it
    hands its inputs no gradient (None adds nothing). Those inputs are the
    anchor, so that it is in the graph at all, and the call's inputs that
    need a gradient, so that it is run wherever they lead to a tensor
    torch.autograd.grad asks for."""

    @staticmethod
    def forward(ctx, call, anchor, *inputs):
        ctx.call = call
        # An alias, no new memory: under use_deterministic_algorithms torch
        # fills new memory, a kernel per call on a GPU.
        return anchor.detach()

    @staticmethod
    def backward(ctx, grad):
        ctx.call.end()
        return (None,) * len(ctx.needs_input_grad)


class _Start(torch.autograd.Function):
    """Identity over the outputs of an outermost module call (or of one whose
    enclosing module did not return tensors last time): its backward pushes
    the call's backward range once the gradients of all of them are ready,
    and hands the _End markers of the call and of the calls inside it their
    placeholder gradients. The outputs' gradients are summed here exactly
    as the call's last nodes would sum them, so the model's gradients are
    bit for bit those without it."""

    @staticmethod
    def forward(ctx, call, marker, token_grads, *tokens_and_tensors):
        ctx.call, ctx.marker, ctx.token_grads = call, marker, token_grads
        ctx.set_materialize_grads(False)  # no zero tensors for unused outputs
        return tokens_and_tensors[len(token_grads):]

    @staticmethod
    def backward(ctx, *grads):
        # With no gradient at all the engine runs this node on the CPU queue,
        # not the outputs' device thread where the end node will run.
        if _runs(ctx.marker) and any(g is not None for g in grads):
            ctx.call.start()
        return (None, None, None) + ctx.token_grads + grads


class _Starter:
    """A pre-hook on an autograd node that torch made for a module call's
    output: pushes the backward ranges of the calls returning that output,
    outermost first, when the engine is about to run the node. Far cheaper
    than an identity node of ours over the outputs, which only calls that
    feed end markers keep (_Start)."""

    __slots__ = ("calls", "markers")

    def __init__(self, call: "_Call", marker) -> None:
        self.calls, self.markers = [call], [marker]

    def add_outer(self, call: "_Call", marker) -> None:
        if call not in self.calls:
            self.calls.insert(0, call)  # an enclosing call returns later
            self.markers.insert(0, marker)

    def __call__(self, grads):
        for g in grads:
            if g is not None:
                break
        else:
            return None  # no gradient: no work, no range
        for call, marker in zip(self.calls, self.markers):
            if not call.open and _runs(marker):
                call.start()
        return None


class _Call:
    """The backward range of one forward call of a module. `token`: the
    output of its _End marker until an output edge takes it (the marker
    node holds the call: no reference back once the token is dropped, so no
    cycle for the garbage collector); `grad`: the marker's placeholder
    gradient; `pending`: the calls (this one, and calls inside it that
    handed theirs up) whose markers wait for an output edge."""

    __slots__ = ("hooks", "token", "grad", "open", "pending")

    def __init__(self, hooks: "_ModuleHooks", grad) -> None:
        self.hooks, self.grad, self.open = hooks, grad, False
        self.token = None
        self.pending = [self]

    def start(self) -> None:
        self.open = True
        self.hooks.push_b()

    def end(self) -> None:
        if self.open:
            self.open = False
            self.hooks.pop()


def _first_device(args, kwargs):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
    for a in kwargs.values():
        if isinstance(a, torch.Tensor):
            return a.device
    return None


def _needing_grad(args, kwargs) -> list:
    out = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    if kwargs:
        out += [a for a in kwargs.values() if isinstance(a, torch.Tensor) and a.requires_grad]
    return out


class _Stacks(threading.local):
    """Per thread: `frames`, one entry per annotated module call in progress
    (its _Call or None), so that a forward hook finds what its pre-hook made;
    `calls`, the _Calls among them; `starters`, output node -> its _Starter
    while the outermost call is in progress."""

    def __init__(self) -> None:
        self.frames: list = []
        self.calls: list = []
        self.starters: dict = {}


_stacks = _Stacks()


def _forward_only(push, pop):
    """The hooks of a module without a backward range: a push and a pop,
    nothing kept per call."""

    def pre(module, args, kwargs):
        push()

    def post(module, args, output):
        pop()

    return pre, post


class _ModuleHooks:
    """Forward and backward ranges of one module.

    Forward: push in the forward pre-hook, pop in the forward hook (called
    even when forward raises). Backward: the pre-hook makes the call's _End
    marker (before the module's own ops). The forward hook then either
    hands the marker up to the enclosing call and puts a _Starter pre-hook
    on the autograd nodes of the outputs, which pushes the range (when the
    enclosing module's last call returned tensors, so that it has an output
    edge to feed the marker), or passes the outputs through a _Start whose
    backward pushes and feeds the markers (the outermost call, and the first
    call of each module, before the enclosing one is known). Both run on the
    thread that the engine runs the outputs' device on. Neither touches the
    inputs: an identity node there would sum the gradients of the module's
    uses of an input before adding them to the others, another rounding than
    without it (a loss changed in the 7th digit)."""

    __slots__ = ("push_f", "pop_f", "push_b", "pop", "trainable", "params", "wraps")

    def __init__(self, push_f, push_b, pop, forward: bool, trainable: bool,
                 params: Callable[[], Iterable[torch.Tensor]]):
        self.push_f = push_f if forward else _nothing
        self.pop_f = pop if forward else _nothing
        self.push_b, self.pop = push_b, pop
        self.trainable, self.params = trainable, params
        # Whether the last call got an output edge: only then do the calls
        # inside hand their markers up to it.
        self.wraps = False

    def pre(self, module, args, kwargs):
        self.push_f()
        frames = _stacks.frames
        if not torch.is_grad_enabled():
            frames.append(None)
            return None
        if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor):
            # The common case, kept short: this runs per call.
            a = args[0]
            inputs, device = ((a,) if a.requires_grad else ()), a.device
        else:
            inputs, device = _needing_grad(args, kwargs), _first_device(args, kwargs)
        if not (inputs or self.trainable):
            # Nothing in or under the module needs a gradient: no backward.
            frames.append(None)
            return None
        if device is None:
            p = next(iter(self.params()), None)
            device = p.device if p is not None else torch.device("cpu")
        call = _Call(self, _token_grad(device))
        call.token = _End.apply(call, _anchor(device), *inputs)
        frames.append(call)
        _stacks.calls.append(call)
        return None

    def post(self, module, args, output):
        self.pop_f()
        stacks = _stacks
        call = stacks.frames.pop() if stacks.frames else None
        if call is None:
            return None
        calls = stacks.calls
        if calls and calls[-1] is call:
            calls.pop()
        token = call.token
        marker = token.grad_fn
        device, seq = token.device, marker._sequence_nr()
        # The outputs this call made (not an input passed through) on the
        # device of its marker (the engine thread that pops).
        if isinstance(output, torch.Tensor):
            single = True
            node = output.grad_fn
            timed = (
                (0,) if node is not None and output.device == device and node._sequence_nr() > seq
                else ()
            )
            outs = (output,)
        elif isinstance(output, (tuple, list)):
            single, outs = False, output
            timed = [
                i for i, o in enumerate(output)
                if isinstance(o, torch.Tensor) and o.grad_fn is not None and o.device == device
                and o.grad_fn._sequence_nr() > seq
            ]
        else:
            timed = ()  # dicts, dataclasses: no backward range for this call
        self.wraps = bool(timed)
        parent = calls[-1] if calls else None
        if parent is not None and parent.hooks.wraps:
            parent.pending += call.pending
            call.pending = None
            starters = stacks.starters
            for i in timed:
                node = outs[i].grad_fn
                starter = starters.get(node)
                if starter is None:
                    starter = starters[node] = _Starter(call, marker)
                    node.register_prehook(starter)
                else:
                    starter.add_outer(call, marker)
            return None
        if not calls:
            stacks.starters.clear()
        pending, call.pending = call.pending, None
        if not timed:
            # Nothing to time here: the markers get no gradient, their calls
            # no range (the engine will not run their markers).
            for c in pending:
                c.token = None
            return None
        tokens = [c.token for c in pending]
        grads = tuple(c.grad for c in pending)
        for c in pending:
            c.token = None
        if single:
            return _Start.apply(call, marker, grads, *tokens, output)[0]
        new = list(output)
        wrapped = _Start.apply(call, marker, grads, *tokens, *[output[i] for i in timed])
        for i, t in zip(timed, wrapped):
            new[i] = t
        return type(output)(new) if isinstance(output, list) else tuple(new)


def _wrappable(module: nn.Module) -> bool:
    """Whether the C++ hooks can go in a forward wrapper set on the module
    (tracer._torch_ranges.Forward) rather than in forward hooks: not a
    TorchScript module, and nothing but a callable (the class's forward, or
    one set on the instance, as accelerate's hooks do) as its forward."""
    if isinstance(module, torch.jit.ScriptModule):
        return False
    return callable(module.__dict__.get("forward", module.forward))


class _ForwardHandle:
    """Sets a module's forward wrapper; remove() puts back what was there.
    If something else has replaced or wrapped the forward since, the
    wrapper stays where it is, turned off (it then calls what it wraps)."""

    __slots__ = ("_module", "_wrapper", "_previous")

    def __init__(self, module: nn.Module, wrapper) -> None:
        self._module = weakref.ref(module)
        self._wrapper = wrapper
        self._previous = module.__dict__.get("forward", _MISSING)
        module.__dict__["forward"] = wrapper

    def remove(self) -> None:
        wrapper, self._wrapper = self._wrapper, None
        if wrapper is None:
            return
        wrapper.close()
        module = self._module()
        if module is not None and module.__dict__.get("forward") is wrapper:
            if self._previous is _MISSING:
                del module.__dict__["forward"]
            else:
                module.__dict__["forward"] = self._previous
        self._previous = None


_MISSING = object()
_forward_type = None  # tracer._torch_ranges.Forward, once a wrapper is made
_replicate_lock = threading.Lock()


def _rebind_replica_forwards(forward_type) -> None:
    """Makes nn.DataParallel's replicas run their own forward. Its replicate()
    copies each module's instance attributes into the replica
    (Module._replicate_for_data_parallel), a forward wrapper among them, and
    that wrapper calls the original module's forward, on the original's
    parameters: the replica's copy is rebound to the replica here, with the
    same ranges (as forward hooks are shared by the replicas too). Installed
    once per process, at the first wrapper; a torch without the method has
    no such copy to mend."""
    global _forward_type
    with _replicate_lock:
        if _forward_type is not None:
            return
        _forward_type = forward_type
        original = getattr(nn.Module, "_replicate_for_data_parallel", None)
        if original is None:
            return

        def _replicate_for_data_parallel(self):
            replica = original(self)
            forward = replica.__dict__.get("forward")
            if type(forward) is forward_type:
                replica.__dict__["forward"] = forward.rebind(replica)
            return replica

        _replicate_for_data_parallel.__wrapped__ = original
        nn.Module._replicate_for_data_parallel = _replicate_for_data_parallel


class Annotation:
    """What `annotate` registered. `ranges`: path -> (forward, backward) range
    names, backward None for a forward-only module (empty when inactive);
    `remove()` takes every hook off."""

    def __init__(self, active: bool, backend: str) -> None:
        self.active = active
        self.backend = backend
        self.ranges: dict = {}
        self.native = False  # the hooks of tracer._torch_ranges
        self._handles: list = []

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def __enter__(self) -> "Annotation":
        return self

    def __exit__(self, *exc) -> bool:
        self.remove()
        return False

    def __repr__(self) -> str:
        return (
            f"Annotation(active={self.active}, backend={self.backend!r}, native={self.native}, "
            f"modules={len(self.ranges)}, hooks={len(self._handles)})"
        )


def _qualify_shared(bases: dict, qualifiable: set, positions: dict) -> None:
    """Gives the modules in `qualifiable` that share a base name with another
    chosen module one more enclosing path part at a time
    (``layers.0.q_proj.lora_A.default`` and ``layers.0.v_proj.lora_A.default``:
    ``q_proj_lora_A_default_0``, ``v_proj_lora_A_default_0``) until the names
    differ or the paths run out of parts."""
    level = dict.fromkeys(qualifiable, 0)
    while True:
        by_base: dict = {}
        for path, base in bases.items():
            by_base.setdefault(base, []).append(path)
        progress = False
        for paths in by_base.values():
            if len(paths) < 2:
                continue
            for path in paths:
                if path not in level:
                    continue
                name = parse_module_path(path, positions.get(path, ()), level[path] + 1)
                base = name.range_name("")
                if base != bases[path]:
                    level[path] += 1
                    bases[path] = base
                    progress = True
        if not progress:
            return


def annotate(
    model: nn.Module,
    prefix_forward: str = "f_",
    prefix_backward: str = "b_",
    name_fn: Optional[NameFn] = None,
    include: Union[None, Pattern, Iterable[Pattern]] = None,
    exclude: Union[None, Pattern, Iterable[Pattern]] = None,
    max_depth: Optional[int] = None,
    adapters: Optional[Iterable[str]] = None,
    forward: bool = True,
    backward: bool = True,
    include_root: bool = False,
    force: bool = False,
    backend: Union[None, str, _nvtx.Backend] = None,
    warn_shared_names: bool = True,
    distinct_names: bool = True,
    native: Optional[bool] = None,
) -> Annotation:
    """Pushes an NVTX range around each submodule's forward and backward.

    name_fn(path, module) -> base name (prefixes are added) or None to skip
    the module; default: the mLoRA profiling convention (tracer/_naming.py).
    include / exclude: glob patterns matched against the module path or its
    base name (``"layers.*.q"``, ``"lora_*"``), or module classes. A module is
    annotated if it matches `include` (or `include` is empty) and no
    `exclude`. max_depth: deepest path to annotate (``layers.3.q`` is 3).
    adapters: the adapter names among nn.ModuleDict keys (default: every key).
    include_root: also annotate the model itself (named after its class).
    force: register hooks even when no tracer is detected.
    backend: "torch", "nvtx" or a Backend for these hooks only (default: the
    module's, see set_backend).
    distinct_names: modules whose default names would be the same (an
    adapter's ``lora_A.default`` in both ``q_proj`` and ``v_proj``) get the
    enclosing path parts that tell them apart in front
    (``f_q_proj_lora_A_default_0``). False keeps the shared names: the mLoRA
    convention shares some on purpose (``f_lora_a_{adapter}`` of q, k, v and
    o, told apart by the enclosing ``f_q_3`` range).
    warn_shared_names: warn when several modules still get the same range
    name (name_fn, distinct_names=False, or paths that do not differ).
    native: the hooks of tracer._torch_ranges (C++ autograd nodes, no Python
    in the backward pass when the ranges go to NVTX) when it is built for
    this torch; False: the Python hooks; True: raise ImportError without it.
    Both make the same ranges.
    """
    if not (force or enabled()):
        return Annotation(active=False, backend="none")
    if isinstance(backend, str):
        backend = _nvtx.select_backend(backend)
    backend = backend or _backend()
    # A PyTorch process loads the NVTX tool at its first NVTX call. Made
    # here, before the training loop starts DataLoader workers, the tracer
    # is running when they fork, so each worker writes its own file (or
    # none, TRACER_FORK=none) instead of starting afresh as if it were the
    # main process.
    backend.start_tool()
    result = Annotation(active=True, backend=backend.name)
    includes, excludes = _as_patterns(include), _as_patterns(exclude)
    names = module_names(model, adapters)
    seen_modules: set = set()
    # The output edge hands the next op a view of the module's output, and
    # an in-place op on it raises ("Output 0 of _StartBackward is a view and
    # is being modified inplace"). The usual culprit is an inplace=True
    # sibling (conv -> bn -> ReLU(inplace=True)), so a module next to one gets
    # a forward range only.
    inplace_parents = {
        _parent(p) for p, m in model.named_modules() if getattr(m, "inplace", False) is True
    }
    positions = _adapter_positions(model, adapters)
    chosen = []  # (path, module, base, default-named)
    for path, module in model.named_modules():
        if isinstance(module, _NEVER_CALLED) or id(module) in seen_modules:
            continue
        depth = 0 if not path else path.count(".") + 1
        if max_depth is not None and depth > max_depth:
            continue
        if name_fn is not None:
            base = name_fn(path, module)
        elif not path:
            base = type(module).__name__ if include_root else None
        else:
            base = names[path].range_name("")
        if not base:
            continue
        if includes and not _matches(path, base, module, includes):
            continue
        if excludes and _matches(path, base, module, excludes):
            continue
        seen_modules.add(id(module))
        chosen.append((path, module, base, name_fn is None and bool(path)))
    bases = {path: base for path, _, base, _ in chosen}
    if distinct_names:
        _qualify_shared(bases, {p for p, _, _, default in chosen if default}, positions)
    by_range: dict = {}
    handles = result._handles
    ext = _native_module() if native is not False else None
    if native and ext is None:
        raise ImportError(f"tracer._torch_ranges is not available ({_Native.error or 'not built'})")
    mode = _native_mode(ext, backend) if ext is not None else 0
    if mode == 1:
        ext.init_nvtx()
    result.native = ext is not None
    for path, module, _, _ in chosen:
        base = bases[path]
        fname, bname = prefix_forward + base, prefix_backward + base
        by_range.setdefault(fname, []).append(path)
        trainable = any(p.requires_grad for p in module.parameters())
        want_backward = (
            backward
            and not (isinstance(module, _NO_BACKWARD) and not trainable)
            and not getattr(module, "inplace", False)
            and _parent(path) not in inplace_parents
        )
        if not (forward or want_backward):
            continue
        if ext is not None:
            push_f = push_b = pop = None
            if mode == 2:
                push_f, push_b, pop = backend.make_push(fname), backend.make_push(bname), backend.pop
            params = module.parameters
            spec = (mode, fname, bname, push_f, push_b, pop, forward, want_backward, trainable,
                    lambda params=params: next(iter(params()), None))
            if _wrappable(module):
                wrapper = ext.wrap(module.forward, *spec)
                if _forward_type is None:
                    _rebind_replica_forwards(type(wrapper))
                handles.append(_ForwardHandle(module, wrapper))
                result.ranges[path] = (fname, bname if want_backward else None)
                continue
            pre, post = ext.hooks(*spec)
        elif want_backward:
            hooks = _ModuleHooks(
                backend.make_push(fname), backend.make_push(bname), backend.pop,
                forward, trainable, module.parameters,
            )
            pre, post = hooks.pre, hooks.post
        else:
            pre, post = _forward_only(backend.make_push(fname), backend.pop)
        if ext is None:
            pre, post = _eager(pre), _eager(post)
        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post, always_call=True))
        result.ranges[path] = (fname, bname if want_backward else None)
    clashes = {n: p for n, p in by_range.items() if len(p) > 1}
    if clashes and warn_shared_names:
        sample = "; ".join(f"{n}: {', '.join(p[:3])}" for n, p in list(clashes.items())[:3])
        warnings.warn(
            f"tracer.torch: {len(clashes)} range names are shared by several modules and "
            f"will be reported together ({sample}); pass name_fn to tell them apart",
            stacklevel=2,
        )
    return result
