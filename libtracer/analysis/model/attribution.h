// Which thread launched each GPU op (kernel, memcpy, memset), when, and which
// NVTX range instances it counts toward (docs/design.md section 3 "Kernel to
// range", "Worker threads").
//
// Source of truth, in order:
//   1. ops with a graph id (kernel, memcpy and memset nodes): the
//      GraphNodeSnapshot of their node, else the one taken when their
//      executable graph was launched, else 2. (GraphSnapshotKey);
//   2. the LaunchRecord with the op's correlation id (captured by the tracer
//      at the launch API's enter callback);
//   3. the ApiRecord with that correlation id: its thread and start time, then
//      the innermost push/pop range open on that thread at that time (how
//      nsys and Kineto imports are attributed; nsys semantics);
//   4. none: the op is unattributed (counted).
//
// An op's stack (the ranges it counts toward, nsys nvtx_kern_sum semantics):
//   its innermost push/pop range and that range's ancestors; then, when it
//   was launched on a thread other than the main thread, the push/pop ranges
//   open on the main thread at launch time (inherited ancestors; off with
//   MainThreadMode::kOff for nsys-identical results); then every start/end
//   range whose [start, end] contains the launch time, on any thread.
//   No range appears twice.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "libtracer/analysis/model/range_index.h"
#include "libtracer/analysis/read/trace_model.h"

namespace tracer::analysis {

enum class MainThreadMode : uint8_t {
  kAuto,    // the thread whose os_tid == pid if it opened a range, else the
            // thread that opened the earliest push/pop range
  kThread,  // the thread with os_tid == AttributionOptions::main_thread_tid
  kOff,     // no inheritance
};

// The key a GraphNodeSnapshot is stored and looked up under. CUPTI gives a
// GPU record's graphId as the id of the executable graph it ran from (the
// header only says "the graph that launched this kernel"; Triton's Proton,
// which matches it to cuptiGetGraphExecId of the launched CUgraphExec, notes
// it is the exec id "confirmed by NVIDIA"), and its graphNodeId as the node of
// that executable graph, a clone with its own id (cuptiGetGraphNodeId: "the
// unique ID of the CUDA graph node"; NVIDIA's cuda_graphs_trace sample moves
// its per-node data to the clone's id on GRAPHNODE_CLONED). Node ids being
// unique in a process, a node snapshot is keyed by the node alone, whatever
// graph the tracer saw it in; launch snapshots (node 0) by the exec id.
inline std::pair<uint64_t, uint64_t> GraphSnapshotKey(uint64_t graph_id, uint64_t node_id) {
  return node_id != 0 ? std::pair<uint64_t, uint64_t>{0, node_id}
                      : std::pair<uint64_t, uint64_t>{graph_id, 0};
}

struct AttributionOptions {
  MainThreadMode main_thread = MainThreadMode::kAuto;
  uint64_t main_thread_tid = 0;  // OS thread id, for kThread
};

// The main-thread option as users write it (`tracer report --main-thread`,
// tracer.load(main_thread=)): "auto", "off" or an OS thread id. False, *o
// unchanged, for anything else.
bool ParseMainThreadOption(std::string_view text, AttributionOptions* o);

enum class OpKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };

enum class AttributionSource : uint8_t {
  kNone = 0,      // unattributed: no launch, API or graph record found
  kGraphNode,     // GraphNodeSnapshot (graph, node)
  kGraphLaunch,   // GraphNodeSnapshot (graph, 0)
  kLaunchRecord,  // LaunchRecord of the correlation id
  kApiRecord,     // ApiRecord of the correlation id + range lookup by time
};

struct OpAttribution {
  uint32_t thread = 0;        // ThreadDef id of the launching thread; 0 = unknown
  uint64_t launch_ns = 0;     // launch (API enter) time; 0 = unknown
  uint32_t range = kNoRange;  // innermost push/pop range on the launching thread
  AttributionSource source = AttributionSource::kNone;
  bool inherited = false;  // got inherited ancestors from the main thread
};

struct AttributionCounts {
  uint64_t ops = 0;                         // kernels + memcpys + memsets
  uint64_t unattributed = 0;                // source kNone
  uint64_t outside_ranges = 0;              // attributed but the stack is empty
  uint64_t inherited = 0;                   // ops with inherited ancestors
  uint64_t by_source[5] = {0, 0, 0, 0, 0};  // indexed by AttributionSource
};

// Memory: a whole trace holds one attribution per GPU op, so it is kept
// compact (8 bytes per op). Ops launched under the same ranges share one
// stack: each distinct (source, stack) is stored once and every op holds its
// index, plus the index of the record its launching thread and time come
// from (LaunchRecord, ApiRecord or GraphNodeSnapshot), so that Of() rebuilds
// the OpAttribution on demand instead of storing it per op.
class Attribution {
 public:
  // process must outlive this object.
  Attribution(const ProcessTrace& process, const RangeIndex& index,
              const AttributionOptions& options);

  OpAttribution Of(OpKind kind, size_t i) const;
  // The range indexes the op counts toward (see header comment), innermost
  // first, own chain, then inherited, then start/end.
  std::span<const uint32_t> Stack(OpKind kind, size_t i) const {
    return StackAt(op_stack_[Base(kind) + i]);
  }
  // Number of leading entries of Stack() that are the op's own push/pop chain.
  uint32_t OwnDepth(OpKind kind, size_t i) const {
    return stacks_[op_stack_[Base(kind) + i]].own_depth;
  }

  // ThreadDef id of the main thread, 0 when none (kOff, or no ranges).
  uint32_t main_thread() const { return main_thread_; }
  const AttributionCounts& counts() const { return counts_; }
  // Ops with equal stacks share one: StackId names it, StackAt(StackId(...))
  // == Stack(...). Lets a table walk distinct stacks instead of every op.
  size_t distinct_stacks() const { return stacks_.size(); }
  uint32_t StackId(OpKind kind, size_t i) const { return op_stack_[Base(kind) + i]; }
  std::span<const uint32_t> StackAt(uint32_t s) const {
    const uint32_t end =
        s + 1 < stacks_.size() ? stacks_[s + 1].offset : static_cast<uint32_t>(entries_.size());
    return std::span<const uint32_t>(entries_).subspan(stacks_[s].offset, end - stacks_[s].offset);
  }

 private:
  // Where an op's launching thread and time come from.
  enum class Origin : uint8_t { kNone = 0, kLaunch, kApi, kSnapshot };
  struct StackInfo {
    uint32_t offset = 0;  // into entries_; ends at the next stack's offset
    uint16_t own_depth = 0;
    AttributionSource source = AttributionSource::kNone;
    uint8_t origin_inherited = 0;  // Origin << 1 | inherited
  };

  size_t Base(OpKind kind) const { return base_[static_cast<int>(kind)]; }
  // Id of the stack (meta, entries), added when new.
  uint32_t Intern(const StackInfo& meta, const std::vector<uint32_t>& entries);

  const ProcessTrace* process_;
  size_t base_[3] = {0, 0, 0};
  std::vector<uint32_t> op_stack_;   // per op: index into stacks_
  std::vector<uint32_t> op_record_;  // per op: index of its Origin record
  std::vector<StackInfo> stacks_;
  std::vector<uint32_t> entries_;
  std::vector<uint32_t> slots_;  // open-addressing set of stack ids + 1, by content
  uint32_t main_thread_ = 0;
  AttributionCounts counts_;
};

}  // namespace tracer::analysis
