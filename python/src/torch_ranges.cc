// tracer._torch_ranges: tracer.torch's per-module ranges with the backward
// machinery in C++ (python/tracer/torch.py holds the Python version and the
// full explanation; the two build the same graph).
//
// Why C++: the Python version costs about 90 us per module call in a
// training step, most of it the autograd Function per call (_End), its
// Python backward and the Python pre-hook that pushes, each run with the
// GIL and with caches the model's tensors left cold. Here the forward hooks
// are builtin functions (no Python frame), the end marker and the output
// edge are C++ autograd nodes and the start of a backward range is a C++
// pre-hook, so the backward pass runs no Python at all when the ranges go
// to NVTX.
//
// Built only against the torch it was compiled with (TRACER_TORCH_VERSION,
// checked at import: its C++ ABI changes between releases); tracer.torch
// falls back to the Python version when this module is missing or refuses
// to load.

#include <Python.h>
#include <structmember.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#ifdef TRACER_TORCH_RANGES_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace {

using torch::autograd::Edge;
using torch::autograd::Node;
using torch::autograd::variable_list;

// Where the pushes and pops go: nowhere (the hooks' own cost, for
// bench/torch), NVTX by name, or Python callables (any other tracer.torch
// backend, e.g. the tests' recorder), called with the GIL.
enum class Mode { kNull = 0, kNvtx = 1, kPython = 2 };

void CallPython(PyObject* fn) {
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* r = PyObject_CallNoArgs(fn);
  if (r == nullptr) {
    PyErr_WriteUnraisable(fn);  // a range callback never raises into torch
  } else {
    Py_DECREF(r);
  }
  PyGILState_Release(gil);
}

// One annotated module: its range names or callables, shared by its calls.
struct Hooks {
  Mode mode = Mode::kNull;
  bool forward = true;     // push a forward range
  bool backward = true;    // make backward ranges
  bool trainable = false;  // something inside needs a gradient
  bool wraps = false;      // the last call got an output edge
  std::string fname, bname;
  PyObject* push_f = nullptr;  // kPython: owned references
  PyObject* push_b = nullptr;
  PyObject* pop = nullptr;
  PyObject* device_of = nullptr;  // () -> a tensor whose device to use, or None

  ~Hooks() {
    if (!Py_IsInitialized()) return;  // at exit: leak rather than crash
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF(push_f);
    Py_XDECREF(push_b);
    Py_XDECREF(pop);
    Py_XDECREF(device_of);
    PyGILState_Release(gil);
  }

  void PushForward() const {
    if (!forward) return;
    if (mode == Mode::kNvtx) {
#ifdef TRACER_TORCH_RANGES_NVTX
      nvtxRangePushA(fname.c_str());
#endif
    } else if (mode == Mode::kPython) {
      CallPython(push_f);
    }
  }
  void PopForward() const {
    if (forward) Pop();
  }
  void PushBackward() const {
    if (mode == Mode::kNvtx) {
#ifdef TRACER_TORCH_RANGES_NVTX
      nvtxRangePushA(bname.c_str());
#endif
    } else if (mode == Mode::kPython) {
      CallPython(push_b);
    }
  }
  void Pop() const {
    if (mode == Mode::kNvtx) {
#ifdef TRACER_TORCH_RANGES_NVTX
      nvtxRangePop();
#endif
    } else if (mode == Mode::kPython) {
      CallPython(pop);
    }
  }
};

// The end of one module call's backward (torch.py: _End). Made in the
// forward pre-hook, before the call's own nodes (a lower sequence number),
// so once it holds its placeholder gradient the engine runs it after all of
// them and the accumulation of the gradients they make. Its edges lead to
// the call's inputs that need a gradient (so that what made them waits for
// it, and under autograd.grad(inputs=) it runs only where they lead to what
// is asked for); it hands them none. Unlike the Python version's autograd
// Function, a C++ node needs no input of its own (torch.py's anchor), so
// a call with no such input has no edge but the chain's: each edge is work
// the engine does per call.
//
// The end markers of an outermost call and of the calls inside it form a
// chain (StartNode -> the latest call's marker -> ... -> the outermost
// call's), each handing the next its placeholder gradient, rather than all
// getting theirs from the StartNode at once: the engine runs them in that
// order anyway (highest sequence number first, each ready from the start),
// but markers that are ready early wait in the engine's ready queue, a heap
// every node of the backward pass is pushed into and popped from; dozens of
// waiting markers made each of those pushes and pops several times dearer.
struct EndNode : Node {
  std::shared_ptr<Hooks> hooks;
  c10::Device device;
  bool open = false;
  // Calls inside this one that handed their markers up to it.
  std::vector<c10::intrusive_ptr<EndNode>> pending;
  // The placeholder gradient for the next marker of the chain (the last
  // edge), undefined at the end of the chain.
  at::Tensor chain_grad;
  // Not null: the first node the call made, whose post-hook (EndHook) ends
  // the range instead of this marker, which is then not in the graph.
  Node* sole = nullptr;
  // A call inside this one made its marker before this call made a node.
  bool first_is_marker = false;

  EndNode(std::shared_ptr<Hooks> h, c10::Device d) : hooks(std::move(h)), device(d) {}

  variable_list apply(variable_list&& /*grads*/) override {
    End();
    variable_list out(num_outputs());
    if (chain_grad.defined()) out.back() = chain_grad;
    return out;
  }
  std::string name() const override { return "tracer::RangeEndBackward"; }

  // Hands `next` (same device, a lower sequence number) its placeholder
  // gradient after this marker ran.
  void ChainTo(c10::intrusive_ptr<EndNode> next, const at::Tensor& grad) {
    add_next_edge(Edge(std::move(next), 0));
    chain_grad = grad;
  }

  void Start() {
    open = true;
    hooks->PushBackward();
  }
  void End() {
    if (open) {
      open = false;
      hooks->Pop();
    }
  }
};

// Whether the engine runs the call's end marker in the backward pass now
// in progress, as it would without the chain (torch._C._will_engine_execute_node):
// not a marker that torch.autograd.grad(..., inputs=) leaves out. The chain
// edge makes the engine run every marker above one it runs; whether the
// call's range is pushed depends on the marker's own edges only: those
// leading to something the pass computes.
bool WillRun(EndNode* node) {
  const auto* exec_info = torch::autograd::get_current_graph_task_exec_info();
  const auto* in_graph = torch::autograd::get_current_graph_task_nodes_in_graph();
  if (exec_info == nullptr || in_graph == nullptr) return false;
  if (in_graph->find(node->sole ? node->sole : node) == in_graph->end()) return false;
  if (exec_info->empty()) return true;
  const size_t own = node->num_outputs() - (node->chain_grad.defined() ? 1 : 0);
  for (size_t i = 0; i < own; ++i) {
    auto it = exec_info->find(node->next_edge(i).function.get());
    if (it != exec_info->end() && it->second.should_execute()) return true;
  }
  return false;
}

// Identity over the outputs of an outermost call (torch.py: _Start): pushes
// the call's backward range and hands the chain of end markers of the call
// and of the calls inside it (one chain per device) its placeholder
// gradient.
struct StartNode : Node {
  c10::intrusive_ptr<EndNode> call;
  size_t outputs = 0;  // the first `outputs` edges are the outputs' own
  at::Tensor token_grad;

  StartNode(c10::intrusive_ptr<EndNode> c, at::Tensor grad)
      : call(std::move(c)), token_grad(std::move(grad)) {}

  variable_list apply(variable_list&& grads) override {
    bool any = false;
    for (const auto& g : grads) any = any || g.defined();
    // With no gradient at all the engine runs this node on the CPU queue,
    // not on the device thread where the end markers run.
    if (any && call && WillRun(call.get())) call->Start();
    variable_list out(num_outputs());
    for (size_t i = 0; i < outputs && i < grads.size(); ++i) out[i] = std::move(grads[i]);
    for (size_t i = outputs; i < out.size(); ++i) out[i] = token_grad;
    return out;
  }
  std::string name() const override { return "tracer::RangeStartBackward"; }
  void release_variables() override { call.reset(); }
};

// A pre-hook on the node torch made for an inner call's output (torch.py:
// _Starter): pushes the backward ranges of the calls returning that output,
// outermost first.
struct StartHook : torch::autograd::FunctionPreHook {
  std::vector<c10::intrusive_ptr<EndNode>> calls;

  variable_list operator()(const variable_list& grads) override {
    bool any = false;
    for (const auto& g : grads) any = any || g.defined();
    if (!any) return grads;  // no gradient: no work, no range
    for (auto& c : calls) {
      if (!c->open && WillRun(c.get())) c->Start();
    }
    return grads;
  }
};

// A post-hook on the first node a call made (FirstNode): ends the call's
// range right after that node ran, where its end marker would have run.
struct EndHook : torch::autograd::FunctionPostHook {
  c10::intrusive_ptr<EndNode> call;

  explicit EndHook(c10::intrusive_ptr<EndNode> c) : call(std::move(c)) {}
  variable_list operator()(const variable_list& outputs, const variable_list& /*grads*/) override {
    call->End();
    return outputs;
  }
};

bool LeadsTo(const Node& node, const Node* to) {
  for (const Edge& e : node.next_edges()) {
    if (e.function.get() == to) return true;
  }
  return false;
}

// The node an inner call made first (the next sequence number after its
// end marker's), found among the nodes its outputs lead to, when it leads
// where the marker does. The engine runs the call's nodes highest
// sequence number first, so that node last (any other it made runs before
// it, or never), then the gradient accumulations that node alone makes
// ready (maximal sequence number), then the marker. With the same edges as
// the marker, that node makes no accumulation ready (a weight of the call's
// used first: accumulated inside the range, before the marker), and what
// made the inputs waits for it as for the marker (none of them is made
// ready before the range ends); so a post-hook on it ends the range where
// the marker would, with no extra node for the engine to run (about
// 20-25 k instructions each on the LoRA sample). The order argued is that
// of one ready queue: on a GPU, a node of the device's queue that the CPU
// queue's thread makes ready while the first node runs ran inside the
// range or after it before, as the threads' timing fell, and runs after
// it now. Null
// when the call's first node is another call's marker (a call inside it
// came first), lies more than kFirstNodeWalk nodes away, or leads
// elsewhere.
constexpr size_t kFirstNodeWalk = 16;

Node* FirstNode(const EndNode& call, PyObject** items, const std::vector<Py_ssize_t>& timed) {
  if (call.first_is_marker) return nullptr;
  const uint64_t first = call.sequence_nr() + 1;
  Node* seen[kFirstNodeWalk];
  size_t n_seen = 0, next = 0;
  auto visit = [&](Node* node) {
    // The call's own nodes only (made after its marker), no accumulation.
    if (node == nullptr || node->sequence_nr() < first || node->sequence_nr() == UINT64_MAX) {
      return true;
    }
    for (size_t i = 0; i < n_seen; ++i) {
      if (seen[i] == node) return true;
    }
    if (n_seen == kFirstNodeWalk) return false;
    seen[n_seen++] = node;
    return true;
  };
  for (Py_ssize_t i : timed) {
    if (!visit(THPVariable_Unpack(items[i]).grad_fn().get())) return nullptr;
  }
  Node* found = nullptr;
  while (found == nullptr && next < n_seen) {
    Node* node = seen[next++];
    if (node->sequence_nr() == first) {
      found = node;
      break;
    }
    for (const Edge& e : node->next_edges()) {
      if (!visit(e.function.get())) return nullptr;
    }
  }
  if (found == nullptr || dynamic_cast<StartNode*>(found) != nullptr) return nullptr;
  for (const Edge& e : found->next_edges()) {
    if (e.function && !LeadsTo(call, e.function.get())) return nullptr;
  }
  for (const Edge& e : call.next_edges()) {
    if (!LeadsTo(*found, e.function.get())) return nullptr;
  }
  return found;
}

// Per thread, like the Python version's _Stacks.
struct Stacks {
  std::vector<c10::intrusive_ptr<EndNode>> frames;  // null: a call without backward
  std::vector<EndNode*> calls;                      // the non-null frames
  // Output node -> its hook, while the outermost call is in progress; the
  // reference keeps the node (and so the hook) alive until then, so that a
  // node made later at the same address is never taken for it.
  std::unordered_map<Node*, std::pair<c10::intrusive_ptr<Node>, StartHook*>> starters;
};
thread_local Stacks stacks;

// Per device: the placeholder gradient the end markers are handed (a 0-dim
// tensor, never read). Touched with the GIL held.
std::unordered_map<c10::Device, at::Tensor>& Tokens() {
  static auto* tokens = new std::unordered_map<c10::Device, at::Tensor>();
  return *tokens;
}

const at::Tensor& TokenOf(c10::Device device) {
  auto& tokens = Tokens();
  auto it = tokens.find(device);
  if (it == tokens.end()) {
    it = tokens.emplace(device, at::empty({}, at::TensorOptions().device(device))).first;
  }
  return it->second;
}

const char kCapsule[] = "tracer._torch_ranges.Hooks";

Hooks* HooksOf(PyObject* capsule) {
  return static_cast<std::shared_ptr<Hooks>*>(PyCapsule_GetPointer(capsule, kCapsule))->get();
}

const std::shared_ptr<Hooks>& SharedHooksOf(PyObject* capsule) {
  return *static_cast<std::shared_ptr<Hooks>*>(PyCapsule_GetPointer(capsule, kCapsule));
}

// Adds a tensor argument to the call's inputs.
void Collect(PyObject* obj, std::vector<at::Tensor>& inputs, std::optional<c10::Device>& device) {
  if (!THPVariable_Check(obj)) return;
  const at::Tensor& t = THPVariable_Unpack(obj);
  if (!device) device = t.device();
  if (t.requires_grad()) inputs.push_back(t);
}

// What runs before a module call's forward (the forward pre-hook, or the
// forward wrapper before it calls forward): pushes the forward range and
// makes the call's end marker. `collect(inputs, device)` adds the call's
// tensor arguments.
template <class CollectArgs>
void PreCore(const std::shared_ptr<Hooks>& shared, CollectArgs collect) {
  Hooks* h = shared.get();
  h->PushForward();
  if (!h->backward) return;
  auto& st = stacks;
  // A frame first, so that the forward hook pops this call's own frame
  // whatever happens below (null: no backward range).
  st.frames.emplace_back();
  if (!at::GradMode::is_enabled()) return;
  std::vector<at::Tensor> inputs;
  std::optional<c10::Device> device;
  collect(inputs, device);
  // Nothing in or under the module needs a gradient: no backward.
  if (inputs.empty() && !h->trainable) return;
  if (!device) {
    device = c10::Device(c10::kCPU);
    if (h->device_of != nullptr) {
      PyObject* t = PyObject_CallNoArgs(h->device_of);
      if (t == nullptr) {
        PyErr_Clear();  // a parameterless module: the CPU
      } else {
        if (THPVariable_Check(t)) device = THPVariable_Unpack(t).device();
        Py_DECREF(t);
      }
    }
  }
  auto end = c10::make_intrusive<EndNode>(shared, *device);
  for (const auto& t : inputs) end->add_next_edge(torch::autograd::impl::gradient_edge(t));
  end->add_input_metadata(TokenOf(*device));
  if (!st.calls.empty() && st.calls.back()->sequence_nr() + 1 == end->sequence_nr()) {
    st.calls.back()->first_is_marker = true;
  }
  st.calls.push_back(end.get());
  st.frames.back() = std::move(end);
}

// Forward pre-hook: (module, args, kwargs) -> None.
PyObject* PreImpl(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  PreCore(SharedHooksOf(self),
          [&](std::vector<at::Tensor>& inputs, std::optional<c10::Device>& device) {
            if (argc < 2) return;
            PyObject* args = argv[1];
            if (PyTuple_Check(args)) {
              for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) {
                Collect(PyTuple_GET_ITEM(args, i), inputs, device);
              }
            }
            if (argc > 2 && argv[2] != Py_None && PyDict_Check(argv[2])) {
              PyObject *key, *value;
              Py_ssize_t pos = 0;
              while (PyDict_Next(argv[2], &pos, &key, &value)) Collect(value, inputs, device);
            }
          });
  Py_RETURN_NONE;
}

// Whether `obj` is a tensor this call made on its marker's device (not an
// input passed through): an output that times the call's backward.
bool Timed(PyObject* obj, const EndNode& call) {
  if (!THPVariable_Check(obj)) return false;
  const at::Tensor& t = THPVariable_Unpack(obj);
  const auto& fn = t.grad_fn();
  return fn && t.device() == call.device && fn->sequence_nr() > call.sequence_nr();
}

// What runs after a module call's forward (the forward hook, or the
// forward wrapper after forward returned or raised, output None): pops the
// forward range and gives the call its output edge. Returns None (a new
// reference) when the output stays as it is, the output through the
// call's output edge, or null with a Python error.
PyObject* PostCore(Hooks* h, PyObject* output) {
  h->PopForward();
  if (!h->backward) Py_RETURN_NONE;
  auto& st = stacks;
  if (st.frames.empty()) Py_RETURN_NONE;
  c10::intrusive_ptr<EndNode> call = std::move(st.frames.back());
  st.frames.pop_back();
  if (!call) Py_RETURN_NONE;
  if (!st.calls.empty() && st.calls.back() == call.get()) st.calls.pop_back();
  std::vector<Py_ssize_t> timed;
  const bool single = THPVariable_Check(output);
  if (single) {
    if (Timed(output, *call)) timed.push_back(0);
  } else if (PyTuple_Check(output) || PyList_Check(output)) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(output);
    PyObject** items = PySequence_Fast_ITEMS(output);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (Timed(items[i], *call)) timed.push_back(i);
    }
  }  // dicts, dataclasses: no backward range for this call
  h->wraps = !timed.empty();
  EndNode* parent = st.calls.empty() ? nullptr : st.calls.back();
  if (parent != nullptr && parent->hooks->wraps) {
    // The enclosing call feeds this marker; the range starts from a
    // pre-hook on the outputs' nodes.
    PyObject** items = single ? &output : PySequence_Fast_ITEMS(output);
    Node* sole = FirstNode(*call, items, timed);
    for (auto& p : call->pending) parent->pending.push_back(std::move(p));
    call->pending.clear();
    for (Py_ssize_t i : timed) {
      const auto& node = THPVariable_Unpack(items[i]).grad_fn();
      auto it = st.starters.find(node.get());
      if (it == st.starters.end()) {
        auto hook = std::make_unique<StartHook>();
        it = st.starters.emplace(node.get(), std::make_pair(node, hook.get())).first;
        node->add_pre_hook(std::move(hook));
      }
      auto& calls = it->second.second->calls;
      bool known = false;
      for (const auto& c : calls) known = known || c.get() == call.get();
      if (!known) calls.insert(calls.begin(), call);  // an enclosing call returns later
    }
    if (sole != nullptr) {
      call->sole = sole;
      sole->add_post_hook(std::make_unique<EndHook>(std::move(call)));
    } else {
      parent->pending.push_back(std::move(call));
    }
    Py_RETURN_NONE;
  }
  if (st.calls.empty()) st.starters.clear();
  std::vector<c10::intrusive_ptr<EndNode>> ends = std::move(call->pending);
  call->pending.clear();
  // Nothing to time here: the markers get no gradient, their calls no range.
  if (timed.empty()) Py_RETURN_NONE;
  const at::Tensor& token_grad = TokenOf(call->device);
  auto start = c10::make_intrusive<StartNode>(call, token_grad);
  start->outputs = timed.size();
  PyObject** items = single ? &output : PySequence_Fast_ITEMS(output);
  std::vector<at::Tensor> wrapped;
  wrapped.reserve(timed.size());
  for (Py_ssize_t i : timed) {
    const at::Tensor& t = THPVariable_Unpack(items[i]);
    start->add_input_metadata(t);
    start->add_next_edge(torch::autograd::impl::gradient_edge(t));
  }
  // The chain of end markers, one per device, built from its end (an edge
  // must be added before the node it leads from becomes anyone's next edge:
  // its topological number is fixed then), its head fed by this node.
  ends.push_back(call);
  std::sort(ends.begin(), ends.end(),
            [](const auto& a, const auto& b) { return a->sequence_nr() < b->sequence_nr(); });
  std::vector<EndNode*> heads;  // per device, the latest marker so far
  for (auto& e : ends) {
    EndNode* head = nullptr;
    for (auto*& h : heads) {
      if (h->device == e->device) {
        head = std::exchange(h, e.get());
        break;
      }
    }
    if (head == nullptr) {
      heads.push_back(e.get());
      continue;
    }
    e->ChainTo(c10::intrusive_ptr<EndNode>::reclaim_copy(head), TokenOf(e->device));
  }
  for (EndNode* h : heads) {
    start->add_next_edge(Edge(c10::intrusive_ptr<EndNode>::reclaim_copy(h), 0));
  }
  uint32_t nr = 0;
  for (Py_ssize_t i : timed) {
    // A non-differentiable alias sharing the version counter: an in-place
    // change of the output is still seen by the nodes that saved it.
    at::Tensor alias = THPVariable_Unpack(items[i]).detach();
    torch::autograd::impl::set_gradient_edge(alias, Edge(start, nr++));
    wrapped.push_back(std::move(alias));
  }
  if (single) return THPVariable_Wrap(std::move(wrapped[0]));
  Py_ssize_t n = PySequence_Fast_GET_SIZE(output);
  PyObject* out = PyList_Check(output) ? PyList_New(n) : PyTuple_New(n);
  if (out == nullptr) return nullptr;
  size_t k = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item;
    if (k < timed.size() && timed[k] == i) {
      item = THPVariable_Wrap(std::move(wrapped[k++]));
      if (item == nullptr) {
        Py_DECREF(out);
        return nullptr;
      }
    } else {
      item = items[i];
      Py_INCREF(item);
    }
    if (PyList_Check(out)) {
      PyList_SET_ITEM(out, i, item);
    } else {
      PyTuple_SET_ITEM(out, i, item);
    }
  }
  return out;
}

// A C++ exception (from torch) must neither unwind through Python's C
// frames nor fail the model's call: that call gets no backward range (its
// end marker is never fed, so nothing is pushed for it) and one warning per
// process says why.
void WarnOnce(const char* what) {
  static bool warned = false;
  if (!warned) {
    warned = true;
    if (PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                         "tracer.torch: a module call got no backward range: %.200s", what) < 0) {
      PyErr_Clear();
    }
  }
}

template <PyObject* (*Impl)(PyObject*, PyObject* const*, Py_ssize_t)>
PyObject* Guarded(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  const char* what = "unknown exception";
  try {
    return Impl(self, argv, argc);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  WarnOnce(what);
  Py_RETURN_NONE;
}

// Forward hook: (module, args, output) -> None or the output through the
// call's output edge.
PyObject* PostImpl(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  return PostCore(HooksOf(self), argc > 2 ? argv[2] : Py_None);
}

PyObject* Pre(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  return Guarded<PreImpl>(self, argv, argc);
}

PyObject* Post(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  return Guarded<PostImpl>(self, argv, argc);
}

PyMethodDef kPreDef = {"tracer_pre_hook",
                       reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(Pre)), METH_FASTCALL,
                       "forward pre-hook: (module, args, kwargs)"};
PyMethodDef kPostDef = {"tracer_post_hook",
                        reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(Post)), METH_FASTCALL,
                        "forward hook: (module, args, output)"};

void DestroyCapsule(PyObject* capsule) {
  delete static_cast<std::shared_ptr<Hooks>*>(PyCapsule_GetPointer(capsule, kCapsule));
}

PyObject* NewRef(PyObject* o) {
  if (o == Py_None) return nullptr;
  Py_INCREF(o);
  return o;
}

// The Hooks of one module from the arguments of hooks() / wrap() after
// their first `skip` ones, in a capsule; null with a Python error.
PyObject* HooksCapsule(PyObject* args, Py_ssize_t skip) {
  int mode, forward, backward, trainable;
  const char *fname, *bname;
  PyObject *push_f, *push_b, *pop, *device_of;
  PyObject* rest = PyTuple_GetSlice(args, skip, PY_SSIZE_T_MAX);
  if (rest == nullptr) return nullptr;
  int ok = PyArg_ParseTuple(rest, "issOOOpppO", &mode, &fname, &bname, &push_f, &push_b, &pop,
                            &forward, &backward, &trainable, &device_of);
  Py_DECREF(rest);
  if (!ok) return nullptr;
  if (mode < 0 || mode > 2) {
    PyErr_SetString(PyExc_ValueError, "mode must be 0 (null), 1 (nvtx) or 2 (python)");
    return nullptr;
  }
#ifndef TRACER_TORCH_RANGES_NVTX
  if (mode == 1) {
    PyErr_SetString(PyExc_ValueError, "built without NVTX");
    return nullptr;
  }
#endif
  auto h = std::make_shared<Hooks>();
  h->mode = static_cast<Mode>(mode);
  h->fname = fname;
  h->bname = bname;
  h->forward = forward;
  h->backward = backward;
  h->trainable = trainable;
  if (h->mode == Mode::kPython) {
    if (!PyCallable_Check(push_f) || !PyCallable_Check(push_b) || !PyCallable_Check(pop)) {
      PyErr_SetString(PyExc_TypeError, "python mode needs push_f, push_b and pop callables");
      return nullptr;
    }
    h->push_f = NewRef(push_f);
    h->push_b = NewRef(push_b);
    h->pop = NewRef(pop);
  }
  h->device_of = NewRef(device_of);
  return PyCapsule_New(new std::shared_ptr<Hooks>(std::move(h)), kCapsule, DestroyCapsule);
}

// hooks(mode, fname, bname, push_f, push_b, pop, forward, backward,
//       trainable, device_of) -> (pre, post)
PyObject* MakeHooks(PyObject* /*module*/, PyObject* args) {
  PyObject* capsule = HooksCapsule(args, 0);
  if (capsule == nullptr) return nullptr;
  PyObject* pre = PyCFunction_New(&kPreDef, capsule);
  PyObject* post = pre ? PyCFunction_New(&kPostDef, capsule) : nullptr;
  Py_DECREF(capsule);
  if (post == nullptr) {
    Py_XDECREF(pre);
    return nullptr;
  }
  return Py_BuildValue("(NN)", pre, post);
}

// --- the forward wrapper -------------------------------------------------
//
// A module's `forward`, set on the instance: torch's Module.__call__ takes
// its fast path (no hooks registered: it calls self.forward at once), and
// the wrapper does what the pre-hook and the forward hook do around the
// forward it wraps, in one C call. With hooks, Module.__call__ runs its
// slow path instead (a closure, the hook dicts walked, the always-call
// bookkeeping): about 2.5 us of Python per call, a third of what the hooks
// cost per module call on a small model.
struct Forward {
  PyObject_HEAD vectorcallfunc vectorcall;
  PyObject* fn;       // the forward it wraps (a bound method, or whatever was set on the instance)
  PyObject* capsule;  // the module's Hooks
  char active;        // false: calls fn only (closed: annotate's handle removed)
};

PyTypeObject* ForwardType();

// After a forward that raised: pops what PreCore pushed, with the error
// saved around it (range callbacks, kPython, must not run with an exception
// set); returns null, the error raised on.
PyObject* PostPreservingError(Hooks* h) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* r = nullptr;
  try {
    r = PostCore(h, Py_None);
  } catch (...) {
  }
  if (r == nullptr) PyErr_Clear();
  Py_XDECREF(r);
  PyErr_Restore(type, value, tb);
  return nullptr;
}

PyObject* ForwardCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* w = reinterpret_cast<Forward*>(self);
  if (!w->active || w->capsule == nullptr) {
    return PyObject_Vectorcall(w->fn, args, nargsf, kwnames);
  }
  const std::shared_ptr<Hooks>& shared = SharedHooksOf(w->capsule);
  Hooks* h = shared.get();
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  try {
    PreCore(shared, [&](std::vector<at::Tensor>& inputs, std::optional<c10::Device>& device) {
      const Py_ssize_t n = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
      for (Py_ssize_t i = 0; i < n; ++i) Collect(args[i], inputs, device);
    });
  } catch (const std::exception& e) {
    WarnOnce(e.what());
  } catch (...) {
    WarnOnce("unknown exception");
  }
  PyObject* out = PyObject_Vectorcall(w->fn, args, nargsf, kwnames);
  if (out == nullptr) return PostPreservingError(h);  // forward raised: pop, raise on
  PyObject* wrapped = nullptr;
  try {
    wrapped = PostCore(h, out);
  } catch (const std::exception& e) {
    WarnOnce(e.what());
  } catch (...) {
    WarnOnce("unknown exception");
  }
  if (wrapped == nullptr) {
    if (PyErr_Occurred()) {
      Py_DECREF(out);
      return nullptr;
    }
    return out;
  }
  if (wrapped == Py_None) {
    Py_DECREF(wrapped);
    return out;
  }
  Py_DECREF(out);
  return wrapped;
}

PyObject* NewForward(PyObject* fn, PyObject* capsule, bool active) {
  auto* w = PyObject_GC_New(Forward, ForwardType());
  if (w == nullptr) return nullptr;
  w->vectorcall = ForwardCall;
  Py_INCREF(fn);
  w->fn = fn;
  Py_XINCREF(capsule);
  w->capsule = capsule;
  w->active = active;
  PyObject_GC_Track(w);
  return reinterpret_cast<PyObject*>(w);
}

void ForwardDealloc(PyObject* self) {
  auto* w = reinterpret_cast<Forward*>(self);
  PyObject_GC_UnTrack(self);
  Py_CLEAR(w->fn);
  Py_CLEAR(w->capsule);
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_Del(self);
  Py_DECREF(type);  // instances of a heap type hold a reference to it
}

int ForwardTraverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(reinterpret_cast<Forward*>(self)->fn);
  return 0;
}

int ForwardClear(PyObject* self) {
  Py_CLEAR(reinterpret_cast<Forward*>(self)->fn);
  return 0;
}

// Anything else (__name__, __self__, __func__, __doc__ ...) is the wrapped
// forward's; inspect.signature follows __wrapped__.
PyObject* ForwardGetattr(PyObject* self, PyObject* name) {
  PyObject* r = PyObject_GenericGetAttr(self, name);
  if (r != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  PyErr_Clear();
  PyObject* fn = reinterpret_cast<Forward*>(self)->fn;
  if (fn == nullptr) {
    PyErr_SetObject(PyExc_AttributeError, name);
    return nullptr;
  }
  return PyObject_GetAttr(fn, name);
}

// copy.deepcopy(model): the copy's forward is the copy of the wrapped one
// (bound to the copied module) with the same ranges, as the hooks of a
// copied module are the same hooks.
PyObject* ForwardDeepcopy(PyObject* self, PyObject* memo) {
  auto* w = reinterpret_cast<Forward*>(self);
  PyObject* copy = PyImport_ImportModule("copy");
  if (copy == nullptr) return nullptr;
  PyObject* fn = PyObject_CallMethod(copy, "deepcopy", "OO", w->fn, memo);
  Py_DECREF(copy);
  if (fn == nullptr) return nullptr;
  PyObject* r = NewForward(fn, w->capsule, w->active);
  Py_DECREF(fn);
  return r;
}

// rebind(replica): the wrapper for a replica that nn.DataParallel made of
// the module (Module._replicate_for_data_parallel copies the instance's
// attributes, this wrapper among them): the wrapped forward bound to the
// replica, with the same ranges, as the replica shares the module's hooks.
// Without it the replica would run the original module's forward, on the
// original's parameters. A wrapped callable other than a bound method (set
// on the instance by another library) is kept as the replica would have it.
PyObject* ForwardRebind(PyObject* self, PyObject* replica) {
  auto* w = reinterpret_cast<Forward*>(self);
  if (w->fn == nullptr) {
    PyErr_SetString(PyExc_ValueError, "rebind: the wrapper was cleared");
    return nullptr;
  }
  if (!PyMethod_Check(w->fn)) return NewForward(w->fn, w->capsule, w->active);
  PyObject* fn = PyMethod_New(PyMethod_GET_FUNCTION(w->fn), replica);
  if (fn == nullptr) return nullptr;
  PyObject* r = NewForward(fn, w->capsule, w->active);
  Py_DECREF(fn);
  return r;
}

// pickle (torch.save(model)): the wrapped forward's own way; the loaded
// module has no ranges.
PyObject* ForwardReduce(PyObject* self, PyObject* /*unused*/) {
  return PyObject_CallMethod(reinterpret_cast<Forward*>(self)->fn, "__reduce_ex__", "i", 2);
}

// close(): calls the wrapped forward only from now on, and lets go of the
// module's Hooks (they reference the module: a wrapper something else kept,
// having wrapped it in turn, must not keep the module alive through them).
PyObject* ForwardClose(PyObject* self, PyObject* /*unused*/) {
  auto* w = reinterpret_cast<Forward*>(self);
  w->active = 0;
  Py_CLEAR(w->capsule);
  Py_RETURN_NONE;
}

PyMethodDef kForwardMethods[] = {
    {"close", ForwardClose, METH_NOARGS, "calls the wrapped forward only from now on"},
    {"__deepcopy__", ForwardDeepcopy, METH_O, nullptr},
    {"rebind", ForwardRebind, METH_O,
     "rebind(replica) -> this wrapper for a replica of its module (nn.DataParallel)"},
    {"__reduce__", ForwardReduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef kForwardMembers[] = {
    {"__wrapped__", T_OBJECT, offsetof(Forward, fn), READONLY, "the forward it wraps"},
    {"active", T_BOOL, offsetof(Forward, active), READONLY,
     "False: calls the wrapped forward only (after close())"},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Forward, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyTypeObject* ForwardType() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(ForwardDealloc)},
        {Py_tp_traverse, reinterpret_cast<void*>(ForwardTraverse)},
        {Py_tp_clear, reinterpret_cast<void*>(ForwardClear)},
        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
        {Py_tp_getattro, reinterpret_cast<void*>(ForwardGetattr)},
        {Py_tp_methods, kForwardMethods},
        {Py_tp_members, kForwardMembers},
        {Py_tp_doc, const_cast<char*>("a module's forward with tracer.torch's ranges around it")},
        {0, nullptr}};
    PyType_Spec spec = {"tracer._torch_ranges.Forward", sizeof(Forward), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
                        slots};
    return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  }();
  return type;
}

// wrap(fn, mode, fname, ... as hooks()) -> Forward
PyObject* Wrap(PyObject* /*module*/, PyObject* args) {
  if (PyTuple_GET_SIZE(args) < 1 || !PyCallable_Check(PyTuple_GET_ITEM(args, 0))) {
    PyErr_SetString(PyExc_TypeError, "wrap(forward, ...): forward must be callable");
    return nullptr;
  }
  PyObject* capsule = HooksCapsule(args, 1);
  if (capsule == nullptr) return nullptr;
  PyObject* r = NewForward(PyTuple_GET_ITEM(args, 0), capsule, true);
  Py_DECREF(capsule);
  return r;
}

// Loads the NVTX tool into this module's NVTX client now (its own copy of
// the NVTX header's state), at annotate(), not at the first range, which may
// come after DataLoader workers have forked.
PyObject* InitNvtx(PyObject* /*module*/, PyObject* /*unused*/) {
#ifdef TRACER_TORCH_RANGES_NVTX
  nvtxInitialize(nullptr);
#endif
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"init_nvtx", InitNvtx, METH_NOARGS, "loads the NVTX tool (NVTX_INJECTION64_PATH) now"},
    {"hooks", MakeHooks, METH_VARARGS,
     "hooks(mode, fname, bname, push_f, push_b, pop, forward, backward, trainable, device_of)"
     " -> (pre, post): forward pre-hook and forward hook of one module"},
    {"wrap", Wrap, METH_VARARGS,
     "wrap(forward, mode, fname, ... as hooks()) -> a forward doing what the hooks do around it"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_torch_ranges",
                       "tracer.torch's per-module ranges, backward machinery in C++",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__torch_ranges() {
  // The torch C++ ABI is only stable within one release.
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return nullptr;
  PyObject* version = PyObject_GetAttrString(torch, "__version__");
  Py_DECREF(torch);
  if (version == nullptr) return nullptr;
  const char* v = PyUnicode_AsUTF8(version);
  bool same = v != nullptr && std::string(v) == TRACER_TORCH_VERSION;
  Py_DECREF(version);
  if (!same) {
    PyErr_Format(PyExc_ImportError, "tracer._torch_ranges was built for torch %s",
                 TRACER_TORCH_VERSION);
    return nullptr;
  }
  if (ForwardType() == nullptr) return nullptr;
  PyObject* m = PyModule_Create(&kModule);
  if (m == nullptr) return nullptr;
  PyModule_AddIntConstant(m, "has_nvtx",
#ifdef TRACER_TORCH_RANGES_NVTX
                          1
#else
                          0
#endif
  );
  PyModule_AddStringConstant(m, "torch_version", TRACER_TORCH_VERSION);
  return m;
}
