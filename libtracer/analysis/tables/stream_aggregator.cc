#include "libtracer/analysis/tables/stream_aggregator.h"

#include <algorithm>

#include "libtracer/analysis/aggregate/intervals.h"
#include "libtracer/analysis/tables/table_util.h"

namespace tracer::analysis {
namespace {

bool PopOrder(const RangeRecord& a, const RangeRecord& b) {
  return a.end_ns != b.end_ns ? a.end_ns < b.end_ns : a.depth > b.depth;
}

}  // namespace

StreamAggregator::StreamAggregator(size_t process, TableRows* rows,
                                   const AttributionOptions& attribution, const ReportOptions& o)
    : rows_(rows), builder_(rows, o), attribution_(attribution), exactness_(attribution) {
  builder_.BeginProcess(process);
}

void StreamAggregator::SetLimits(size_t max_pending_launches, size_t max_orphan_ops) {
  max_pending_ = std::max<size_t>(max_pending_launches, 1);
  max_orphans_ = std::max<size_t>(max_orphan_ops, 1);
}

DurationAccumulator& StreamAggregator::Node::KernelDurations(uint32_t name) {
  if (last_kernel < kernel_names && kernel_durations[last_kernel].first == name) {
    return kernel_durations[last_kernel].second;
  }
  for (size_t i = 0; i < kernel_names; ++i) {
    if (kernel_durations[i].first == name) {
      last_kernel = i;
      return kernel_durations[i].second;
    }
  }
  last_kernel = kernel_names++;
  if (last_kernel == kernel_durations.size()) {
    return kernel_durations.emplace_back(name, DurationAccumulator()).second;
  }
  kernel_durations[last_kernel].first = name;
  return kernel_durations[last_kernel].second;  // cleared by Reset
}

void StreamAggregator::Node::AddInterval(uint64_t start, uint64_t end) {
  // Ops mostly come in start order: while the list is merged (sorted,
  // disjoint, not touching), an op that starts inside or after the last
  // interval keeps it merged.
  if (merged_size == intervals.size()) {
    if (!intervals.empty() && start >= intervals.back().first && start <= intervals.back().second) {
      intervals.back().second = std::max(intervals.back().second, end);
      return;
    }
    if (intervals.empty() || start > intervals.back().second) {
      intervals.emplace_back(start, end);
      merged_size = intervals.size();
      return;
    }
  }
  intervals.emplace_back(start, end);
  if (intervals.size() >= 2 * std::max<size_t>(merged_size, 64)) {
    MergeIntervals(&intervals);
    merged_size = intervals.size();
  }
}

void StreamAggregator::Node::AddIntervals(const std::vector<std::pair<uint64_t, uint64_t>>& from) {
  if (from.empty()) return;
  // A merged child after the last interval of a merged list: still merged.
  const bool after = merged_size == intervals.size() &&
                     (intervals.empty() || from.front().first > intervals.back().second);
  intervals.insert(intervals.end(), from.begin(), from.end());
  if (after) {
    merged_size = intervals.size();
  } else if (intervals.size() >= 2 * std::max<size_t>(merged_size, 64)) {
    MergeIntervals(&intervals);
    merged_size = intervals.size();
  }
}

uint64_t StreamAggregator::Node::BusyNs() {
  if (merged_size != intervals.size()) {
    const uint64_t busy = MergeIntervals(&intervals);
    merged_size = intervals.size();
    return busy;
  }
  uint64_t total = 0;
  for (const auto& [s, e] : intervals) total += e - s;
  return total;
}

void StreamAggregator::Node::Reset() {
  // What a node of a typical instance holds stays allocated for the next
  // one; a large one (a long range's) is given back, so that the pool's
  // memory stays about (peak nodes) x (a typical node).
  constexpr size_t kKeepIntervals = 1024, kKeepNames = 16, kKeepValues = 256;
  const size_t names = kernel_names;
  std::vector<uint32_t> keep_streams = std::move(streams);
  std::vector<std::pair<uint64_t, uint64_t>> keep_intervals = std::move(intervals);
  std::vector<std::pair<uint32_t, DurationAccumulator>> keep_durations =
      std::move(kernel_durations);
  *this = Node();
  keep_streams.clear();
  streams = std::move(keep_streams);
  if (keep_intervals.capacity() <= kKeepIntervals) {
    keep_intervals.clear();
    intervals = std::move(keep_intervals);
  }
  if (keep_durations.size() > kKeepNames) keep_durations.resize(kKeepNames);
  for (size_t i = 0; i < std::min(names, keep_durations.size()); ++i) {
    keep_durations[i].second.Clear(kKeepValues);
  }
  kernel_durations = std::move(keep_durations);
}

StreamAggregator::Node& StreamAggregator::NodeFor(uint64_t id) {
  if (Node* n = FindNode(id)) return *n;
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(pool_.size());
    pool_.push_back(std::make_unique<Node>());
  }
  node_index_.Insert(id, slot);
  cached_id_ = id;
  cached_node_ = pool_[slot].get();
  return *cached_node_;
}

StreamAggregator::Node& StreamAggregator::Referenced(uint64_t id) {
  if (FindNode(id) == nullptr && id <= finished_max_ && Finished(id)) {
    ++stats_.late_references;
  }
  return NodeFor(id);
}

StreamAggregator::Node* StreamAggregator::FindNode(uint64_t id) {
  if (cached_node_ != nullptr && cached_id_ == id) return cached_node_;
  const uint32_t* slot = node_index_.Find(id);
  if (slot == nullptr) return nullptr;
  cached_id_ = id;
  cached_node_ = pool_[*slot].get();
  return cached_node_;
}

void StreamAggregator::EraseNode(uint64_t id) {
  if (cached_id_ == id) cached_node_ = nullptr;
  if (const uint32_t* slot = node_index_.Find(id)) {
    pool_[*slot]->Reset();
    free_.push_back(*slot);
    node_index_.Erase(id);
  }
  // The set of the last kRecentFinished ids (an id finished twice is in
  // the ring twice and leaves the set with its older entry).
  finished_max_ = std::max(finished_max_, id);
  MarkFinished(id, true);
  if (finished_order_.size() < kRecentFinished) {
    finished_order_.push_back(id);
  } else {
    MarkFinished(finished_order_[finished_next_], false);
    finished_order_[finished_next_] = id;
    finished_next_ = (finished_next_ + 1) % kRecentFinished;
  }
}

bool StreamAggregator::Finished(uint64_t id) {
  const uint32_t* word = finished_.Find((id >> 5) + 1);
  return word != nullptr && (*word >> (id & 31) & 1) != 0;
}

void StreamAggregator::MarkFinished(uint64_t id, bool finished) {
  const uint64_t key = (id >> 5) + 1;
  const uint32_t bit = uint32_t{1} << (id & 31);
  uint32_t* word = finished_.Find(key);
  if (finished) {
    if (word != nullptr) {
      *word |= bit;
    } else {
      finished_.Insert(key, bit);
    }
  } else if (word != nullptr) {
    *word &= ~bit;
    if (*word == 0) finished_.Erase(key);
  }
}

void StreamAggregator::Track() {
  stats_.peak_nodes = std::max<uint64_t>(stats_.peak_nodes, node_index_.size());
  stats_.peak_pending_launches = std::max<uint64_t>(stats_.peak_pending_launches, pending_.size());
  stats_.peak_orphan_ops = std::max<uint64_t>(stats_.peak_orphan_ops, orphan_count_);
}

void StreamAggregator::AddBatch(const ProcessTrace& b) {
  ++batches_;
  ReleaseHeld(kHoldBatches);
  if (main_thread_ == 0) {
    // The candidate main thread: the pid's thread, or the --main-thread one.
    const bool by_tid = attribution_.main_thread == MainThreadMode::kThread;
    const uint64_t want = by_tid ? attribution_.main_thread_tid : b.header.pid;
    for (uint32_t t = 1; t < b.threads.size(); ++t) {
      if (b.threads[t].defined && b.threads[t].os_tid == want && (by_tid || want != 0)) {
        main_thread_ = t;
        exactness_.SetCandidate(t);
        break;
      }
    }
  }
  counts_.ranges += static_cast<int64_t>(b.ranges.size());
  counts_.marks += static_cast<int64_t>(b.marks.size());
  counts_.kernels += static_cast<int64_t>(b.kernels.size());
  counts_.memcpys += static_cast<int64_t>(b.memcpys.size());
  counts_.memsets += static_cast<int64_t>(b.memsets.size());
  counts_.api_calls += static_cast<int64_t>(b.api_calls.size());
  for (const GraphNodeSnapshotRecord& g : b.graph_nodes) {
    auto& list = snapshots_[GraphSnapshotKey(g.graph_id, g.graph_node_id)];
    const Snapshot s{g.time_ns, g.range_id, g.thread};
    // Kept sorted by time (stable for equal times, as the in-memory path).
    auto at = std::upper_bound(
        list.begin(), list.end(), s,
        [](const Snapshot& a, const Snapshot& x) { return a.time_ns < x.time_ns; });
    list.insert(at, s);
    if (g.range_id != 0) Referenced(g.range_id).pinned = true;
  }
  // Launches first: within one frame a launch and its op may both appear.
  for (const LaunchRecord& l : b.launches) AddLaunch(l);
  for (const KernelRecord& k : b.kernels) {
    AddOp({OpKind::kKernel, k.start_ns, k.end_ns, k.correlation_id, k.graph_id, k.graph_node_id,
           k.name, k.stream});
  }
  for (const MemcpyRecord& m : b.memcpys) {
    AddOp({OpKind::kMemcpy, m.start_ns, m.end_ns, m.correlation_id, m.graph_id, m.graph_node_id, 0,
           m.stream});
  }
  for (const MemsetRecord& m : b.memsets) {
    AddOp({OpKind::kMemset, m.start_ns, m.end_ns, m.correlation_id, m.graph_id, m.graph_node_id, 0,
           m.stream});
  }
  // Children before parents (the tracer writes them so: pop order); a file
  // written otherwise still folds correctly within a frame.
  // CPU facts in record order (the in-memory path's order of threads).
  for (const RangeRecord& r : b.ranges) AddRangeRow(r);
  if (!std::is_sorted(b.ranges.begin(), b.ranges.end(), PopOrder)) {
    std::vector<RangeRecord> sorted(b.ranges);
    std::stable_sort(sorted.begin(), sorted.end(), PopOrder);
    for (const RangeRecord& r : sorted) ResolveRange(r);
  } else {
    for (const RangeRecord& r : b.ranges) ResolveRange(r);
  }
  for (const ApiRecord& a : b.api_calls) {
    builder_.AddApi(a);
    if (a.correlation_id != 0) api_ids_.Insert(a.correlation_id, 1);
  }
  api_ids_.EvictTo(kRecentApiIds, [&](uint64_t id, char) {
    api_ids_evicted_below_ = std::max(api_ids_evicted_below_, id);
  });
  for (const MemcpyRecord& m : b.memcpys) builder_.AddMemcpy(m);
  for (const MemsetRecord& m : b.memsets) builder_.AddMemset(m);
  for (const KernelRecord& k : b.kernels) {
    builder_.AddKernel(k.name, static_cast<int64_t>(k.end_ns - k.start_ns));
  }
  Track();
}

void StreamAggregator::AddRangeRow(const RangeRecord& r) {
  // CPU-side facts go to the row now, in record order, as in memory.
  builder_.AddCpu(builder_.Range(r.domain, r.name), r.thread, r.end_ns - r.start_ns, r.depth,
                  r.kind);
  exactness_.AddRange(r);
}

void StreamAggregator::ResolveRange(const RangeRecord& r) {
  if (r.id == 0) return;
  Node& n = NodeFor(r.id);
  if (n.resolved) return;  // a duplicate id (broken writer): first record wins
  n.resolved = true;
  n.thread = r.thread;
  if (n.graph_inherits && r.thread == main_thread_) GraphChainsOverlap();
  n.name = r.name;
  n.domain = r.domain;
  n.parent = r.kind == RangeKind::kPushPop && r.parent_id != r.id ? r.parent_id : 0;
  if (n.parent != 0) ++Referenced(n.parent).waiting;
  if (r.kind == RangeKind::kPushPop && r.thread == main_thread_ && main_thread_ != 0 &&
      attribution_.main_thread != MainThreadMode::kOff) {
    ClaimTickets(r);
  }
  TryFinalize(r.id);
}

bool StreamAggregator::MakeTicket(uint64_t corr, uint32_t thread, uint64_t time) {
  if (attribution_.main_thread == MainThreadMode::kOff || main_thread_ == 0 || thread == 0 ||
      thread == main_thread_ || tickets_.Find(corr) != nullptr) {
    return false;
  }
  // Held ranges close innermost first: the earliest closed one covering the
  // launch is its innermost main-thread range. Ends grow in close order, so
  // the scan stops at the first range that ended before the launch.
  uint64_t claim = 0;
  for (auto it = held_.rbegin(); it != held_.rend() && it->end_ns > time; ++it) {
    if (it->start_ns <= time) claim = it->id;
  }
  if (exactness_.CoveredByReleased(time)) {
    exactness_.Fail(
        "a worker-thread launch reached the file after the main-thread range it inherits was "
        "folded");
    return false;
  }
  if (tickets_.size() >= kMaxTickets) {
    exactness_.Fail("too many worker-thread launches waiting for the main thread's ranges");
    return false;
  }
  Ticket t;
  if (claim != 0) {
    t.claim = claim;
    ++NodeFor(claim).waiting;
  } else if (unclaimed_.empty() || unclaimed_.back().first <= time) {
    unclaimed_.emplace_back(time, corr);
  } else {
    unclaimed_.insert(
        std::upper_bound(unclaimed_.begin(), unclaimed_.end(), std::make_pair(time, corr)),
        {time, corr});
  }
  tickets_.Insert(corr, t);
  return true;
}

void StreamAggregator::TicketOp(uint64_t corr, const Op& op, bool own_outside) {
  Ticket* t = tickets_.Find(corr);
  if (t == nullptr || t->discarded) {
    if (own_outside) ++outside_ranges_;
    if (t != nullptr && !t->graph) tickets_.Erase(corr);
    return;
  }
  if (t->graph) {
    // Stays for the launch's other ops; the claiming range waits for done.
    if (t->claim != 0) {
      AddOpToNode(op, &NodeFor(t->claim));
      ++inherited_ops_;
    } else {
      graph_ops_[corr].push_back(
          {op.kind, op.name, op.stream, op.start_ns, op.end_ns, own_outside});
    }
    return;
  }
  if (t->claim != 0) {
    const uint64_t claim = t->claim;
    tickets_.Erase(corr);
    AddOpToNode(op, &NodeFor(claim));
    ++inherited_ops_;
    ReleaseNode(claim);
    return;
  }
  t->has_op = true;
  t->own_outside = own_outside;
  t->op_kind = op.kind;
  t->op_name = op.name;
  t->op_stream = op.stream;
  t->op_start_ns = op.start_ns;
  t->op_end_ns = op.end_ns;
}

void StreamAggregator::DropTicket(uint64_t corr, bool final) {
  Ticket* t = tickets_.Find(corr);
  if (t == nullptr) return;
  if (t->graph && t->claim == 0 && !t->discarded && !final) {
    // Its ops so far still wait for the main-thread range open at the launch.
    t->done = true;
    return;
  }
  uint64_t claim = t->has_op ? 0 : t->claim;
  if (t->has_op && t->own_outside) ++outside_ranges_;
  if (t->graph) {
    claim = t->claim;
    if (auto ops = graph_ops_.find(corr); ops != graph_ops_.end()) {
      for (const TicketedOp& o : ops->second) outside_ranges_ += o.own_outside ? 1 : 0;
      graph_ops_.erase(ops);
    }
  }
  tickets_.Erase(corr);
  if (claim != 0) ReleaseNode(claim);
}

void StreamAggregator::GraphTicket(uint64_t corr) {
  if (Ticket* t = tickets_.Find(corr)) t->graph = true;
}

void StreamAggregator::GraphChainsOverlap() {
  exactness_.Fail(
      "CUDA graph kernels captured in main-thread ranges and launched on worker threads "
      "(their own and inherited range chains overlap)");
}

void StreamAggregator::EndGraphLaunches(size_t keep) {
  std::vector<uint64_t> ended;
  graph_launches_.EvictTo(keep, [&](uint64_t corr, const Launch& l) {
    graph_evicted_max_ = std::max(graph_evicted_max_, corr);
    if (l.ticket) {
      graph_ticket_evicted_max_ = std::max(graph_ticket_evicted_max_, corr);
      ended.push_back(corr);
    }
  });
  for (uint64_t corr : ended) DropTicket(corr);
}

void StreamAggregator::ClaimTickets(const RangeRecord& r) {
  auto by_time = [](const std::pair<uint64_t, uint64_t>& e, uint64_t t) { return e.first < t; };
  auto first = std::lower_bound(unclaimed_.begin(), unclaimed_.end(), r.start_ns, by_time);
  // [start, end), as InnermostOpenAt.
  auto last = std::lower_bound(first, unclaimed_.end(), r.end_ns, by_time);
  Node& range = NodeFor(r.id);
  for (auto it = first; it != last; ++it) {
    Ticket* t = tickets_.Find(it->second);
    if (t == nullptr) continue;
    if (t->graph) {
      if (auto ops = graph_ops_.find(it->second); ops != graph_ops_.end()) {
        for (const TicketedOp& o : ops->second) {
          AddOpToNode(Op{o.kind, o.start_ns, o.end_ns, 0, 0, 0, o.name, o.stream}, &range);
          ++inherited_ops_;
        }
        graph_ops_.erase(ops);
      }
      if (t->done) {
        tickets_.Erase(it->second);
      } else {
        t->claim = r.id;
        ++range.waiting;
      }
    } else if (t->has_op) {
      AddOpToNode(Op{t->op_kind, t->op_start_ns, t->op_end_ns, 0, 0, 0, t->op_name, t->op_stream},
                  &range);
      ++inherited_ops_;
      tickets_.Erase(it->second);
    } else {
      t->claim = r.id;
      ++range.waiting;
    }
  }
  unclaimed_.erase(first, last);
  // A top-level range: nothing was open on the main thread at its end, so
  // earlier tickets that no range took never will be.
  if (r.parent_id == 0 && r.depth == 0) {
    auto end = std::lower_bound(unclaimed_.begin(), unclaimed_.end(), r.end_ns, by_time);
    for (auto it = unclaimed_.begin(); it != end; ++it) {
      Ticket* t = tickets_.Find(it->second);
      if (t == nullptr) continue;
      if (t->graph) {
        if (auto ops = graph_ops_.find(it->second); ops != graph_ops_.end()) {
          for (const TicketedOp& o : ops->second) outside_ranges_ += o.own_outside ? 1 : 0;
          graph_ops_.erase(ops);
        }
        if (t->done) {
          tickets_.Erase(it->second);
        } else {
          t->discarded = true;
        }
      } else if (t->has_op) {
        if (t->own_outside) ++outside_ranges_;
        tickets_.Erase(it->second);
      } else {
        t->discarded = true;
      }
    }
    unclaimed_.erase(unclaimed_.begin(), end);
  }
  range.held = true;
  held_.push_back({r.id, r.start_ns, r.end_ns, batches_});
}

void StreamAggregator::ReleaseHeld(size_t keep_batches) {
  while (!held_.empty() && held_.front().batch + keep_batches <= batches_) {
    const Held h = held_.front();
    held_.pop_front();
    exactness_.AddReleasedSpan(h.start_ns, h.end_ns);
    if (Node* n = FindNode(h.id)) {
      n->held = false;
      TryFinalize(h.id);
    }
  }
}

void StreamAggregator::AddLaunch(const LaunchRecord& l) {
  if (std::vector<Op>* waiting = orphans_.Find(l.correlation_id)) {
    std::vector<Op> ops = std::move(*waiting);
    orphans_.Erase(l.correlation_id);
    orphan_count_ -= ops.size();
    // The op came first; the launch needs no waiting entry unless it is a
    // graph launch whose other ops are still to come.
    const bool graph = std::any_of(ops.begin(), ops.end(), [](const Op& o) { return o.graph_id; });
    const bool ticket = MakeTicket(l.correlation_id, l.thread, l.time_ns);
    if (graph) {
      // Its ops take the graph path (AddOp), the ticket with them.
      Launch launch{l.range_id, l.time_ns, l.thread, true, ticket};
      if (pending_.Insert(l.correlation_id, launch) && l.range_id != 0) {
        ++Referenced(l.range_id).waiting;
      }
    }
    for (const Op& op : ops) {
      if (op.graph_id != 0) {
        AddOp(op);  // through the snapshots, as any graph kernel
      } else {
        Attribute(op, l.range_id, l.thread, l.time_ns, ticket ? l.correlation_id : 0);
      }
    }
    if (graph) EvictLaunches(max_pending_, /*count=*/true);
    return;
  }
  // A duplicate correlation id: the first launch wins.
  if (pending_.Find(l.correlation_id) != nullptr) return;
  Launch launch{l.range_id, l.time_ns, l.thread};
  launch.ticket = MakeTicket(l.correlation_id, l.thread, l.time_ns);
  pending_.Insert(l.correlation_id, launch);
  if (l.range_id != 0) ++Referenced(l.range_id).waiting;
  EvictLaunches(max_pending_, /*count=*/true);
}

void StreamAggregator::EvictLaunches(size_t keep, bool count) {
  if (pending_.size() <= keep) return;
  std::vector<uint64_t> released, tickets;
  pending_.EvictTo(keep, [&](uint64_t corr, const Launch& l) {
    if (count && !l.used) {
      ++stats_.evicted_launches;
      exactness_.Fail("launch records waited longer than the streaming window allows");
    }
    if (l.used) graph_evicted_max_ = std::max(graph_evicted_max_, corr);
    if (l.ticket && l.used) graph_ticket_evicted_max_ = std::max(graph_ticket_evicted_max_, corr);
    if (l.range_id != 0) released.push_back(l.range_id);
    if (l.ticket) tickets.push_back(corr);
  });
  for (uint64_t range : released) ReleaseNode(range);
  for (uint64_t corr : tickets) DropTicket(corr);
}

void StreamAggregator::ReleaseNode(uint64_t range_id) {
  Node* n = FindNode(range_id);
  if (n == nullptr || n->waiting == 0) return;
  --n->waiting;
  if (n->Ready()) Finalize(range_id, /*fold_into_parent=*/true);
}

void StreamAggregator::EvictOrphans(size_t keep, bool count) {
  std::vector<Op> graph_ops;
  orphans_.EvictTo(keep, [&](uint64_t id, const std::vector<Op>& ops) {
    orphan_count_ -= ops.size();
    if (count) {
      stats_.evicted_orphans += ops.size();
      exactness_.Fail("GPU ops waited longer for their launch record than the window allows");
    } else if (api_ids_.Find(id) != nullptr || id <= api_ids_evicted_below_) {
      exactness_.Fail("GPU ops without a launch record (attributed through API records)");
    } else {
      // No launch record ever came: in memory a graph op then takes its
      // snapshot's range, thread and time.
      for (const Op& op : ops) {
        if (op.graph_id != 0) {
          graph_ops.push_back(op);
        } else {
          ++unattributed_;
        }
      }
      return;
    }
    unattributed_ += ops.size();
  });
  for (const Op& op : graph_ops) {
    if (!AttributeGraphOp(op, nullptr, false)) ++unattributed_;
  }
}

void StreamAggregator::AddOp(const Op& op) {
  Launch* launch = pending_.Find(op.correlation_id);
  const bool pending = launch != nullptr;
  if (!pending && op.graph_id != 0) launch = graph_launches_.Find(op.correlation_id);
  // Without its launch record a graph op waits for it like any op, unless
  // that record may have been let go already (then: its snapshot alone).
  if (op.graph_id != 0 && (launch != nullptr || op.correlation_id <= graph_evicted_max_) &&
      AttributeGraphOp(op, launch, pending)) {
    return;
  }
  if (launch == nullptr) {
    // The op came before its launch record (or the launch was lost): wait,
    // within a cap.
    std::vector<Op>* list = orphans_.Find(op.correlation_id);
    if (list == nullptr) {
      orphans_.Insert(op.correlation_id, {});
      list = orphans_.Find(op.correlation_id);
    }
    list->push_back(op);
    ++orphan_count_;
    // Counted in entries (correlation ids), close enough to ops for a cap.
    EvictOrphans(max_orphans_, /*count=*/true);
    return;
  }
  const Launch l = *launch;
  // One launch, one op; a graph launch's kernels are matched above.
  if (op.graph_id == 0) {
    Attribute(op, l.range_id, l.thread, l.time_ns, l.ticket ? op.correlation_id : 0);
    // The launch is let go (its entry found above: pending, no graph op, so
    // nothing since has erased it).
    pending_.Erase(op.correlation_id);
    if (l.range_id != 0) ReleaseNode(l.range_id);
  } else {
    launch->used = true;
    if (l.ticket) GraphTicket(op.correlation_id);
    Attribute(op, l.range_id, l.thread, l.time_ns, l.ticket ? op.correlation_id : 0);
  }
}

bool StreamAggregator::AttributeGraphOp(const Op& op, Launch* launch, bool pending) {
  const std::vector<Snapshot>* list = nullptr;
  if (op.graph_node_id != 0) {
    auto it = snapshots_.find(GraphSnapshotKey(op.graph_id, op.graph_node_id));
    if (it != snapshots_.end()) list = &it->second;
  }
  if (list == nullptr) {
    auto it = snapshots_.find(GraphSnapshotKey(op.graph_id, 0));
    if (it != snapshots_.end()) list = &it->second;
  }
  if (list == nullptr) return false;
  const uint64_t when = launch != nullptr ? launch->time_ns : op.start_ns;
  const Snapshot* best = &list->front();
  for (const Snapshot& s : *list) {
    if (s.time_ns > when) break;
    best = &s;
  }
  // As in memory: the launch's thread and time, else the snapshot's.
  uint32_t thread = best->thread;
  uint64_t launch_ns = best->time_ns;
  bool ticket = false;
  if (launch != nullptr) {
    thread = launch->thread;
    launch_ns = launch->time_ns;
    ticket = launch->ticket;
  }
  const bool inherit =
      attribution_.main_thread != MainThreadMode::kOff && main_thread_ != 0 && thread != 0;
  if (inherit && launch == nullptr &&
      (thread != main_thread_ || op.correlation_id <= graph_ticket_evicted_max_)) {
    // Its launch (the thread that inherits) is no longer known here.
    exactness_.Fail(
        "CUDA graph kernels came after their worker-thread launch left the streaming window");
  }
  if (pending) {
    // The launch's own range gets none of the graph's kernels: let it go,
    // and keep only its time, thread and ticket for the graph's other
    // kernels, in a small window of recent graph launches.
    Launch moved = *launch;
    moved.used = true;
    pending_.Erase(op.correlation_id);
    graph_launches_.Insert(op.correlation_id, moved);
    if (moved.range_id != 0) ReleaseNode(moved.range_id);
    EndGraphLaunches(kRecentGraphLaunches);
  }
  if (ticket) {
    GraphTicket(op.correlation_id);
    if (best->range_id != 0) {
      Node& own = NodeFor(best->range_id);
      if (own.resolved && own.thread == main_thread_) GraphChainsOverlap();
      own.graph_inherits = true;
    }
  }
  Attribute(op, best->range_id, thread, launch_ns, ticket ? op.correlation_id : 0);
  return true;
}

void StreamAggregator::Attribute(const Op& op, uint64_t range_id, uint32_t thread,
                                 uint64_t launch_ns, uint64_t ticket) {
  exactness_.AddLaunchedOp(thread, launch_ns);
  if (ticket != 0) {
    // Outside every range only if no main-thread range takes it either.
    TicketOp(ticket, op, range_id == 0);
  } else if (range_id == 0) {
    ++outside_ranges_;
  }
  if (range_id != 0) AddOpToNode(op, &NodeFor(range_id));
}

void StreamAggregator::AddOpToNode(const Op& op, Node* node) {
  Node& n = *node;
  ++n.direct_ops;
  n.first_start = std::min(n.first_start, op.start_ns);
  n.last_end = std::max(n.last_end, op.end_ns);
  ++n.ops;
  if (std::find(n.streams.begin(), n.streams.end(), op.stream) == n.streams.end())
    n.streams.push_back(op.stream);
  n.AddInterval(op.start_ns, op.end_ns);
  if (op.kind == OpKind::kKernel) {
    const int64_t d = static_cast<int64_t>(op.end_ns - op.start_ns);
    ++n.kernels;
    n.kernel_ns = SaturatingAdd(n.kernel_ns, d);
    n.KernelDurations(op.name).Add(d);
  }
}

void StreamAggregator::TryFinalize(uint64_t id) {
  const Node* n = FindNode(id);
  if (n != nullptr && n->Ready()) Finalize(id, /*fold_into_parent=*/true);
}

void StreamAggregator::Finalize(uint64_t id, bool fold_into_parent) {
  // Iterative: finishing a node may finish its parent, and so on up.
  while (true) {
    Node* found = FindNode(id);
    if (found == nullptr) return;
    // Folded in place; the node goes back to the pool (EraseNode) once its
    // parent has taken what it holds.
    Node& n = *found;
    if (n.ops > 0) {
      const RowBuilder::RangeRef ref = builder_.Range(n.domain, n.name);
      builder_.AddGpu(ref, {n.last_end - n.first_start, n.BusyNs(), n.ops, n.kernels, n.kernel_ns,
                            n.streams.size()});
      for (size_t i = 0; i < n.kernel_names; ++i) {
        builder_.MergeInstanceKernels(ref, n.kernel_durations[i].first,
                                      n.kernel_durations[i].second);
      }
    }
    const uint64_t parent_id = n.parent;
    Node* p = fold_into_parent && parent_id != 0 && parent_id != id ? FindNode(parent_id) : nullptr;
    if (p == nullptr) {
      EraseNode(id);
      return;
    }
    Node& parent = *p;
    if (n.ops > 0) {
      parent.first_start = std::min(parent.first_start, n.first_start);
      parent.last_end = std::max(parent.last_end, n.last_end);
      parent.ops += n.ops;
      parent.kernels += n.kernels;
      parent.kernel_ns = SaturatingAdd(parent.kernel_ns, n.kernel_ns);
      for (uint32_t s : n.streams) {
        if (std::find(parent.streams.begin(), parent.streams.end(), s) == parent.streams.end())
          parent.streams.push_back(s);
      }
      for (size_t i = 0; i < n.kernel_names; ++i) {
        parent.KernelDurations(n.kernel_durations[i].first).Merge(n.kernel_durations[i].second);
      }
      parent.AddIntervals(n.intervals);
    }
    EraseNode(id);
    // FindNode again: the cache may now name another node.
    Node* q = FindNode(parent_id);
    if (q == nullptr) return;
    if (q->waiting > 0) --q->waiting;
    if (!q->Ready()) return;
    id = parent_id;
  }
}

void StreamAggregator::Finish(const ProcessTrace& p, const Trace& trace) {
  // Ops still waiting for a launch record never got one, and launches still
  // waiting for their op never will: not evictions, they simply never matched.
  EvictOrphans(0, /*count=*/false);
  EvictLaunches(0, /*count=*/false);
  EndGraphLaunches(0);
  // Graph snapshot targets are final now; then fold whatever can be folded,
  // children first (the cascade in Finalize takes their parents along).
  ReleaseHeld(0);
  // Tickets no main-thread range took: their ops count outside ranges if
  // they had none of their own.
  for (const auto& [time, corr] : unclaimed_) DropTicket(corr, /*final=*/true);
  unclaimed_.clear();
  std::vector<uint64_t> ids;
  node_index_.ForEach([&](uint64_t id, uint32_t slot) {
    pool_[slot]->pinned = false;
    ids.push_back(id);
  });
  for (uint64_t id : ids) TryFinalize(id);
  // What remains: instances whose record never came (their direct ops were
  // launched in no range we know of) and broken parent chains (cycles).
  ids.clear();
  node_index_.ForEach([&](uint64_t id, uint32_t slot) {
    const Node& n = *pool_[slot];
    if (!n.resolved) {
      outside_ranges_ += n.direct_ops;
      // In memory, a launch naming a missing instance falls back to the range
      // open at that moment, and a missing parent to the enclosing range.
      exactness_.Fail("launches or ranges name range instances missing from the file");
    }
    ids.push_back(id);
  });
  for (uint64_t id : ids) {
    const Node* n = FindNode(id);
    if (n != nullptr && n->resolved) Finalize(id, /*fold_into_parent=*/false);
  }
  node_index_.Clear();
  pool_.clear();
  free_.clear();
  cached_node_ = nullptr;

  if (stats_.late_references > 0)
    exactness_.Fail("records name range instances already finished (out of the tracer's order)");
  uint32_t main = 0;
  inexact_reason_ = exactness_.Finish(&main);
  ProcessCounts counts = counts_;
  counts.unattributed = static_cast<int64_t>(unattributed_);
  counts.outside_ranges = static_cast<int64_t>(outside_ranges_);
  counts.inherited = static_cast<int64_t>(inherited_ops_);
  counts.main_thread = main;
  builder_.EndProcess(p, trace, counts);
  std::vector<std::string>* notes = &rows_->summary_notes;
  const std::string who = ProcessLabelOf(p) + ": ";
  if (stats_.evicted_launches > 0) {
    notes->push_back(who + std::to_string(stats_.evicted_launches) +
                     " launch record(s) waited too long for their GPU op and were dropped "
                     "from the streaming window (ops arriving later are unattributed)");
  }
}

}  // namespace tracer::analysis
