// Bounded-memory aggregation of one process's stream (docs/design.md section 5:
// "reading is streaming and bounded in memory by the number of distinct names
// and open ranges, not by the number of records").
//
// Fed one frame's records at a time (StreamTraceFile), it keeps
//   - one node per range instance that is still open, or closed but still
//     waiting for GPU ops launched inside it (a launch record whose op has
//     not arrived yet) or for its children to finish; a node holds its
//     subtree's GPU totals and per-kernel-name durations and is folded into
//     its parent and into the table rows as soon as nothing can change it
//     (a tree reduction: parents pop after their children);
//   - launch records whose op has not arrived, and ops that arrived before
//     their launch record, each capped (oldest evicted first, counted);
//   - graph node snapshots (definitions: one per captured graph node);
//   - the table rows, whose duration statistics are DurationAccumulators.
//
// Attribution is the in-memory path's (attribution.h) for streams written by
// the tracer: launch record -> range instance -> parent chain; graph kernels
// through their node snapshot. GPU busy time is exact: a node holds the
// union of its subtree's op intervals (merged, so consecutive overlapping
// ops take one entry) until it folds into its parent.
//
// Main-thread inheritance (attribution.h "Worker threads"): a launch on
// another thread than the main one gets a ticket (keyed by its correlation
// id, holding its op once it comes). The main thread's ranges close
// innermost first, so the first one to close around the launch time claims
// the ticket: the op is added to that range's node, and the tree reduction
// carries it up the main thread's chain. A launch that comes after that
// range closed finds it among the recently closed ones, which are held for
// kHoldBatches frames because rings drain one thread after another. When a
// top-level main-thread range closes, tickets before its end that no range
// claimed never will be (nothing was open on the main thread then).
//
// A CUDA graph launch on a worker thread gets a ticket the same way (at its
// launch record), but every kernel of the launch carries its correlation id,
// so its ticket takes ops until the launch leaves the window of recent graph
// launches: the claiming range waits until then, and ops before any claim
// wait in the ticket. Each graph kernel still goes to its node snapshot's
// range as its own range; the main thread's chain is added as for any
// worker op. Only when that snapshot range is itself a main-thread range can
// the two chains share ranges (counted once in memory, AppendUnique), which
// a tree reduction cannot subtract: that case is declined.
//
// What the tree reduction cannot do (the GPU work of start/end ranges, a
// launch or parent naming an instance that never appears, a worker launch
// arriving after its main-thread range was folded, records evicted from the
// waiting lists) is detected, not approximated: inexact_reason() names it,
// and the caller then computes the tables from the whole trace
// (bounded_exactness.h). The numbers of this
// path are never different from the whole-trace ones; they are either the
// same or not offered.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "libtracer/analysis/aggregate/correlation_window.h"
#include "libtracer/analysis/aggregate/id_map.h"
#include "libtracer/analysis/model/attribution.h"
#include "libtracer/analysis/read/trace_model.h"
#include "libtracer/analysis/tables/bounded_exactness.h"
#include "libtracer/analysis/tables/row_builder.h"
#include "libtracer/analysis/tables/table_rows.h"

namespace tracer::analysis {

struct StreamAggregatorStats {
  uint64_t peak_nodes = 0;             // range instances held at once
  uint64_t peak_pending_launches = 0;  // launch records waiting for their op
  uint64_t peak_orphan_ops = 0;        // ops waiting for their launch record
  uint64_t evicted_launches = 0;
  uint64_t evicted_orphans = 0;
  // Launches, child ranges or snapshots naming an instance already folded
  // (only possible when records are out of the tracer's order); checked
  // against the most recent kRecentFinished instances.
  uint64_t late_references = 0;
};

class StreamAggregator {
 public:
  // process: the process's index in the report; its facts go to rows
  // through a RowBuilder (row_builder.h), with o's --filter, --domain and
  // --by-process.
  StreamAggregator(size_t process, TableRows* rows,
                   const AttributionOptions& attribution = AttributionOptions(),
                   const ReportOptions& o = ReportOptions());

  // Caps on the two waiting lists (tests lower them).
  void SetLimits(size_t max_pending_launches, size_t max_orphan_ops);

  // One frame's records; string ids are global.
  void AddBatch(const ProcessTrace& batch);
  // After the last frame: folds every remaining node and ends the process's
  // rows (p holds the definitions, names mapped): its summary row and notes
  // go to rows->summary and rows->summary_notes.
  void Finish(const ProcessTrace& p, const Trace& trace);

  // After Finish: "" when every number equals the whole-trace path's, else
  // the first reason it may not (the caller must not print these tables).
  const std::string& inexact_reason() const { return inexact_reason_; }

  size_t nodes() const { return node_index_.size(); }
  size_t pending_launches() const { return pending_.size(); }
  const StreamAggregatorStats& stats() const { return stats_; }

 private:
  // A range instance's node. Nodes are pooled (pool_, free_): a folded
  // node's vectors keep their capacity for the next instance, so that the
  // per-instance work allocates nothing in the steady state.
  struct Node {
    bool resolved = false;
    // A graph op with a ticket named it as its own range: declined if it
    // turns out to be a main-thread range (the chains would overlap).
    bool graph_inherits = false;
    uint32_t thread = 0;  // once resolved
    bool pinned = false;  // a graph snapshot names it: final at Finish only
    bool held = false;    // a closed main-thread range that may still take tickets
    uint32_t name = 0, domain = 0;
    uint64_t parent = 0;
    uint32_t waiting = 0;     // pending launches + unfinished children
    uint64_t direct_ops = 0;  // ops attributed to this instance itself
    uint64_t first_start = UINT64_MAX, last_end = 0;
    int64_t ops = 0, kernels = 0, kernel_ns = 0;
    std::vector<uint32_t> streams;
    // Subtree op intervals [start, end), merged once it doubles in size;
    // the first merged_size are merged (all of them: the list is).
    std::vector<std::pair<uint64_t, uint64_t>> intervals;
    size_t merged_size = 0;
    void AddInterval(uint64_t start, uint64_t end);
    // A child's intervals, merged (BusyNs called on it).
    void AddIntervals(const std::vector<std::pair<uint64_t, uint64_t>>& from);
    // The length of the intervals' union; leaves them merged.
    uint64_t BusyNs();
    // Subtree durations per kernel name, the first kernel_names entries
    // (the rest: cleared accumulators kept for reuse); few names per range,
    // so a vector searched from the last hit beats a hash map.
    std::vector<std::pair<uint32_t, DurationAccumulator>> kernel_durations;
    size_t kernel_names = 0;
    size_t last_kernel = 0;
    DurationAccumulator& KernelDurations(uint32_t name);
    // Back to a new node's state, keeping small vectors' capacity.
    void Reset();
    // Nothing can change it any more: fold it into its parent and the rows.
    bool Ready() const { return resolved && !pinned && !held && waiting == 0; }
  };
  struct Op {
    OpKind kind;
    uint64_t start_ns, end_ns, correlation_id, graph_id, graph_node_id;
    uint32_t name, stream;
  };
  struct Launch {
    uint64_t range_id, time_ns;
    uint32_t thread;
    bool used = false;    // an op came (graph launches have several)
    bool ticket = false;  // has an inheritance ticket (tickets_, same id)
  };
  // A graph launch's op held by its ticket until a main-thread range claims it.
  struct TicketedOp {
    OpKind kind;
    uint32_t name, stream;
    uint64_t start_ns, end_ns;
    bool own_outside;
  };
  // A worker-thread launch's share of the main thread's ranges. Kept small
  // (one is made per worker launch and looked up again per op): a graph
  // launch's held ops are in graph_ops_.
  struct Ticket {
    uint64_t claim = 0;  // the main-thread range that took it (waits for the op)
    uint64_t op_start_ns = 0, op_end_ns = 0;
    uint32_t op_name = 0, op_stream = 0;  // the op's facts a node needs (not its ids)
    OpKind op_kind = OpKind::kKernel;
    bool discarded = false;    // no main-thread range covers the launch
    bool has_op = false;       // the op came before any claim: held here
    bool own_outside = false;  // that op had no range of its own
    // A graph launch's ticket: any number of ops (graph_ops_ before a
    // claim) until done (the launch left the window: no more ops will be
    // matched).
    bool graph = false;
    bool done = false;
  };
  struct Snapshot {
    uint64_t time_ns, range_id;
    uint32_t thread;
  };
  void AddRangeRow(const RangeRecord& r);   // CPU-side facts, in record order
  void ResolveRange(const RangeRecord& r);  // the instance's node, children first
  void AddLaunch(const LaunchRecord& l);
  void AddOp(const Op& op);
  // A graph op through its node snapshot (launch: its launch record, may be
  // null; pending: found in pending_). False when no snapshot names it.
  bool AttributeGraphOp(const Op& op, Launch* launch, bool pending);
  // The graph launch's ticket stays for its other ops (may be none).
  void GraphTicket(uint64_t corr);
  // A graph launch left the recent window: its ticket takes no more ops.
  void EndGraphLaunches(size_t keep);
  void GraphChainsOverlap();
  // ticket: the correlation id of the launch's ticket, 0 = none.
  void Attribute(const Op& op, uint64_t range_id, uint32_t thread, uint64_t launch_ns,
                 uint64_t ticket);
  void AddOpToNode(const Op& op, Node* n);
  // Makes the ticket of a launch on `thread` at `time` when inheritance
  // applies (false: none); claimed at once when a held main-thread range
  // covers it.
  bool MakeTicket(uint64_t corr, uint32_t thread, uint64_t time);
  // The op of a launch with a ticket.
  void TicketOp(uint64_t corr, const Op& op, bool own_outside);
  // The launch will never get its op (graph: no more ops; final: at
  // Finish, unclaimed ops are outside every main-thread range).
  void DropTicket(uint64_t corr, bool final = false);
  // A main-thread push/pop range closed: claims the tickets it covers.
  void ClaimTickets(const RangeRecord& r);
  void ReleaseHeld(size_t keep_batches);
  void ReleaseNode(uint64_t range_id);
  // count: the removal is an eviction (the window was full), for the notes.
  void EvictOrphans(size_t keep, bool count);
  void TryFinalize(uint64_t id);
  void Finalize(uint64_t id, bool fold_into_parent);
  void EvictLaunches(size_t keep, bool count);
  void Track();
  Node& NodeFor(uint64_t id);  // created when missing
  // NodeFor for a reference from another record (counts late references).
  Node& Referenced(uint64_t id);
  Node* FindNode(uint64_t id);
  void EraseNode(uint64_t id);

  TableRows* rows_;
  RowBuilder builder_;
  size_t max_pending_ = 1u << 20, max_orphans_ = 1u << 20;
  // Live nodes: range id -> index in pool_ (nodes never move; free_ holds
  // the indexes of folded ones, reused first).
  IdMap node_index_;
  std::vector<std::unique_ptr<Node>> pool_;
  std::vector<uint32_t> free_;
  // Consecutive ops mostly hit the same instance: one cached lookup saves
  // most.
  static constexpr size_t kRecentFinished = 1u << 16;
  // The last kRecentFinished folded ids (a ring, finished_next_ the oldest
  // once full) and the set of them: one bit per id in words of 32
  // consecutive ids (id / 32 + 1 -> bits), so that the set of recent ids,
  // which lie close together, stays a small table in cache.
  IdMap finished_;
  bool Finished(uint64_t id);
  void MarkFinished(uint64_t id, bool finished);
  std::vector<uint64_t> finished_order_;
  size_t finished_next_ = 0;
  // The largest id ever folded: an id above it was never (most new
  // instances: ids grow as ranges open), so the set is not probed.
  uint64_t finished_max_ = 0;
  uint64_t cached_id_ = 0;
  Node* cached_node_ = nullptr;
  CorrelationWindow<Launch> pending_;
  CorrelationWindow<std::vector<Op>> orphans_;
  // Graph launches whose kernels go to node snapshots: their time and
  // thread pick the snapshot for the graph's later kernels.
  static constexpr size_t kRecentGraphLaunches = 4096;
  CorrelationWindow<Launch> graph_launches_;
  // Highest correlation id of a graph launch let go of (any / one with a
  // ticket): a later op of it cannot find its launch record.
  uint64_t graph_evicted_max_ = 0, graph_ticket_evicted_max_ = 0;
  size_t orphan_count_ = 0;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<Snapshot>> snapshots_;
  uint32_t main_thread_ = 0;  // the thread whose OS id is the pid
  ProcessCounts counts_;      // record counts while reading; the rest at Finish
  uint64_t unattributed_ = 0, outside_ranges_ = 0;
  // Correlation ids of recent API records: an op whose launch record never
  // came is attributed in memory through its API record, which this path
  // does not do; one that has none is unattributed on both paths.
  static constexpr size_t kRecentApiIds = 1u << 20;
  CorrelationWindow<char> api_ids_;
  uint64_t api_ids_evicted_below_ = 0;  // ids up to here may have been forgotten
  AttributionOptions attribution_;
  static constexpr size_t kHoldBatches = 2;
  static constexpr size_t kMaxTickets = 1u << 18;
  uint64_t batches_ = 0;
  CorrelationWindow<Ticket> tickets_;
  // A graph launch's ops held by its ticket until a main-thread range claims it.
  std::unordered_map<uint64_t, std::vector<TicketedOp>> graph_ops_;
  // (launch time, correlation id) of unclaimed tickets, sorted by time.
  std::vector<std::pair<uint64_t, uint64_t>> unclaimed_;
  struct Held {
    uint64_t id, start_ns, end_ns, batch;
  };
  std::deque<Held> held_;  // closed main-thread ranges, in close order
  uint64_t inherited_ops_ = 0;
  BoundedExactness exactness_;
  std::string inexact_reason_;
  StreamAggregatorStats stats_;
};

}  // namespace tracer::analysis
