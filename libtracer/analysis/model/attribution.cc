#include "libtracer/analysis/model/attribution.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <unordered_map>

namespace tracer::analysis {
namespace {

// Snapshots of one key, sorted by time: a graph launched from several places
// has one launch snapshot per launch.
using SnapshotMap = std::map<std::pair<uint64_t, uint64_t>, std::vector<uint32_t>>;

// The snapshot taken last at or before `when`, else the first one.
uint32_t PickSnapshot(const std::vector<GraphNodeSnapshotRecord>& snaps,
                      const std::vector<uint32_t>& list, uint64_t when) {
  uint32_t best = list.front();
  for (uint32_t i : list) {
    if (snaps[i].time_ns <= when)
      best = i;
    else
      break;
  }
  return best;
}

uint32_t FindMainThread(const ProcessTrace& p, const RangeIndex& index,
                        const AttributionOptions& o) {
  if (o.main_thread == MainThreadMode::kOff) return 0;
  if (o.main_thread == MainThreadMode::kThread) {
    for (uint32_t t = 1; t < p.threads.size(); ++t) {
      if (p.threads[t].defined && p.threads[t].os_tid == o.main_thread_tid) return t;
    }
    return 0;
  }
  const std::vector<uint32_t> with_ranges = index.ThreadsWithRanges();
  for (uint32_t t : with_ranges) {
    if (p.header.pid != 0 && t < p.threads.size() && p.threads[t].os_tid == p.header.pid) return t;
  }
  uint32_t best = 0;
  uint64_t best_start = UINT64_MAX;
  for (uint32_t t : with_ranges) {
    auto list = index.ThreadRanges(t);
    if (!list.empty() && p.ranges[list.front()].start_ns < best_start) {
      best_start = p.ranges[list.front()].start_ns;
      best = t;
    }
  }
  return best;
}

// correlation id -> first record index. Correlation ids are dense and
// increasing in practice, so a direct table usually fits; otherwise a sorted
// vector with binary search. (A node-based hash map of 1 M entries cost more
// than the rest of attribution.)
class CorrelationIndex {
 public:
  template <typename Records>
  explicit CorrelationIndex(const Records& records) {
    uint64_t max = 0;
    for (const auto& r : records) max = std::max(max, r.correlation_id);
    if (max <= 4 * records.size() + 1024) {
      dense_.assign(max + 1, kNone);
      for (uint32_t i = 0; i < records.size(); ++i) {
        uint32_t& slot = dense_[records[i].correlation_id];
        if (slot == kNone) slot = i;  // first one wins
      }
    } else {
      sorted_.reserve(records.size());
      for (uint32_t i = 0; i < records.size(); ++i)
        sorted_.emplace_back(records[i].correlation_id, i);
      std::stable_sort(sorted_.begin(), sorted_.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
  // Record index, or kNone.
  uint32_t Find(uint64_t corr) const {
    if (corr == 0) return kNone;
    if (!sorted_.empty()) {
      auto it = std::lower_bound(sorted_.begin(), sorted_.end(), corr,
                                 [](const auto& e, uint64_t c) { return e.first < c; });
      return it != sorted_.end() && it->first == corr ? it->second : kNone;
    }
    return corr < dense_.size() ? dense_[corr] : kNone;
  }
  static constexpr uint32_t kNone = UINT32_MAX;

 private:
  std::vector<uint32_t> dense_;
  std::vector<std::pair<uint64_t, uint32_t>> sorted_;
};

// The graph-node snapshots of the process by (graph, node), each list
// sorted by time.
SnapshotMap SnapshotsByNode(const ProcessTrace& p) {
  SnapshotMap snapshots;
  for (uint32_t i = 0; i < p.graph_nodes.size(); ++i) {
    const GraphNodeSnapshotRecord& g = p.graph_nodes[i];
    snapshots[GraphSnapshotKey(g.graph_id, g.graph_node_id)].push_back(i);
  }
  for (auto& [key, list] : snapshots) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return p.graph_nodes[a].time_ns < p.graph_nodes[b].time_ns;
    });
  }
  return snapshots;
}

// The snapshot naming the range of an op of a CUDA graph: its node's, else
// the graph launch's (node 0); the one taken last at or before `when`.
struct GraphSnapshot {
  uint32_t index;
  AttributionSource source;
};
std::optional<GraphSnapshot> FindGraphSnapshot(const ProcessTrace& p, const SnapshotMap& snapshots,
                                               uint64_t graph_id, uint64_t node_id, uint64_t when) {
  const std::vector<uint32_t>* list = nullptr;
  AttributionSource src = AttributionSource::kGraphNode;
  if (node_id != 0) {
    if (auto it = snapshots.find(GraphSnapshotKey(graph_id, node_id)); it != snapshots.end())
      list = &it->second;
  }
  if (list == nullptr) {
    if (auto it = snapshots.find(GraphSnapshotKey(graph_id, 0)); it != snapshots.end()) {
      list = &it->second;
      src = AttributionSource::kGraphLaunch;
    }
  }
  if (list == nullptr) return std::nullopt;
  return GraphSnapshot{PickSnapshot(p.graph_nodes, *list, when), src};
}

void AppendUnique(std::vector<uint32_t>* out, uint32_t v) {
  if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(v);
}

}  // namespace

namespace {

uint64_t HashStack(AttributionSource source, uint8_t origin_inherited, uint16_t own_depth,
                   const std::vector<uint32_t>& entries) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(source) << 24) ^
               (static_cast<uint64_t>(origin_inherited) << 16) ^ own_depth;
  for (uint32_t e : entries) {
    h ^= e;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

}  // namespace

uint32_t Attribution::Intern(const StackInfo& meta, const std::vector<uint32_t>& entries) {
  if (slots_.size() < 2 * (stacks_.size() + 1)) {
    // Grow (load factor <= 1/2) and reinsert every stack.
    slots_.assign(std::max<size_t>(64, slots_.size() * 2), 0);
    const size_t mask = slots_.size() - 1;
    std::vector<uint32_t> tmp;
    for (uint32_t id = 0; id < stacks_.size(); ++id) {
      const auto span = StackAt(id);
      tmp.assign(span.begin(), span.end());
      const StackInfo& m = stacks_[id];
      size_t at = HashStack(m.source, m.origin_inherited, m.own_depth, tmp) & mask;
      while (slots_[at] != 0) at = (at + 1) & mask;
      slots_[at] = id + 1;
    }
  }
  const size_t mask = slots_.size() - 1;
  size_t at = HashStack(meta.source, meta.origin_inherited, meta.own_depth, entries) & mask;
  for (; slots_[at] != 0; at = (at + 1) & mask) {
    const uint32_t id = slots_[at] - 1;
    const StackInfo& m = stacks_[id];
    if (m.source != meta.source || m.origin_inherited != meta.origin_inherited ||
        m.own_depth != meta.own_depth)
      continue;
    const auto span = StackAt(id);
    if (std::equal(span.begin(), span.end(), entries.begin(), entries.end())) return id;
  }
  const uint32_t id = static_cast<uint32_t>(stacks_.size());
  StackInfo added = meta;
  added.offset = static_cast<uint32_t>(entries_.size());
  stacks_.push_back(added);
  entries_.insert(entries_.end(), entries.begin(), entries.end());
  slots_[at] = id + 1;
  return id;
}

Attribution::Attribution(const ProcessTrace& p, const RangeIndex& index,
                         const AttributionOptions& options)
    : process_(&p) {
  base_[0] = 0;
  base_[1] = p.kernels.size();
  base_[2] = base_[1] + p.memcpys.size();
  const size_t total = base_[2] + p.memsets.size();
  op_stack_.resize(total);
  op_record_.resize(total);
  counts_.ops = total;
  main_thread_ = FindMainThread(p, index, options);

  const CorrelationIndex launch_by_corr(p.launches);
  const CorrelationIndex api_by_corr(p.api_calls);
  const SnapshotMap snapshots = SnapshotsByNode(p);

  // Stacks: own chain, inherited chain from the main thread, covering
  // start/end ranges.
  std::vector<uint32_t> stack;
  auto attribute = [&](size_t op, uint64_t corr, uint64_t graph_id, uint64_t node_id,
                       uint64_t gpu_start) {
    OpAttribution a;
    Origin origin = Origin::kNone;
    uint32_t record = 0;
    if (const uint32_t li = launch_by_corr.Find(corr); li != CorrelationIndex::kNone) {
      const LaunchRecord& l = p.launches[li];
      a.thread = l.thread;
      a.launch_ns = l.time_ns;
      a.range = l.range_id != 0 ? index.Find(l.range_id) : kNoRange;
      // The named instance may be missing (outside a capture window); the
      // range open at that moment is the best substitute.
      if (l.range_id != 0 && a.range == kNoRange)
        a.range = index.InnermostOpenAt(l.thread, l.time_ns);
      a.source = AttributionSource::kLaunchRecord;
      origin = Origin::kLaunch;
      record = li;
    } else if (const uint32_t ai = api_by_corr.Find(corr); ai != CorrelationIndex::kNone) {
      const ApiRecord& api = p.api_calls[ai];
      a.thread = api.thread;
      a.launch_ns = api.start_ns;
      a.range = index.InnermostOpenAt(api.thread, api.start_ns);
      a.source = AttributionSource::kApiRecord;
      origin = Origin::kApi;
      record = ai;
    }
    const uint64_t when = a.source != AttributionSource::kNone ? a.launch_ns : gpu_start;
    if (const auto snap = graph_id != 0 ? FindGraphSnapshot(p, snapshots, graph_id, node_id, when)
                                        : std::nullopt) {
      const GraphNodeSnapshotRecord& s = p.graph_nodes[snap->index];
      a.range = s.range_id != 0 ? index.Find(s.range_id) : kNoRange;
      if (a.source == AttributionSource::kNone) {
        a.thread = s.thread;
        a.launch_ns = s.time_ns;
        origin = Origin::kSnapshot;
        record = snap->index;
      }
      a.source = snap->source;
    }

    ++counts_.by_source[static_cast<int>(a.source)];
    stack.clear();
    StackInfo meta;
    meta.source = a.source;
    if (a.source != AttributionSource::kNone) {
      if (a.range != kNoRange) index.AppendChain(a.range, &stack);
      meta.own_depth = static_cast<uint16_t>(std::min<size_t>(stack.size(), UINT16_MAX));
      if (main_thread_ != 0 && a.thread != main_thread_) {
        const uint32_t m = index.InnermostOpenAt(main_thread_, a.launch_ns);
        const size_t before = stack.size();
        for (uint32_t cur = m; cur != kNoRange; cur = index.Parent(cur)) AppendUnique(&stack, cur);
        if (stack.size() > before) {
          a.inherited = true;
          ++counts_.inherited;
        }
      }
      // Start/end ranges are never in a push/pop chain: no duplicate check.
      index.AppendCoveringStartEnd(a.launch_ns, &stack);
      if (stack.empty()) ++counts_.outside_ranges;
    } else {
      ++counts_.unattributed;
    }
    meta.origin_inherited =
        static_cast<uint8_t>(static_cast<uint8_t>(origin) << 1 | (a.inherited ? 1 : 0));
    op_stack_[op] = Intern(meta, stack);
    op_record_[op] = record;
  };

  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const KernelRecord& k = p.kernels[i];
    attribute(i, k.correlation_id, k.graph_id, k.graph_node_id, k.start_ns);
  }
  for (size_t i = 0; i < p.memcpys.size(); ++i) {
    const MemcpyRecord& m = p.memcpys[i];
    attribute(base_[1] + i, m.correlation_id, m.graph_id, m.graph_node_id, m.start_ns);
  }
  for (size_t i = 0; i < p.memsets.size(); ++i) {
    const MemsetRecord& m = p.memsets[i];
    attribute(base_[2] + i, m.correlation_id, m.graph_id, m.graph_node_id, m.start_ns);
  }
  // The lookup set is only needed while building.
  std::vector<uint32_t>().swap(slots_);
  stacks_.shrink_to_fit();
  entries_.shrink_to_fit();
}

OpAttribution Attribution::Of(OpKind kind, size_t i) const {
  const size_t op = Base(kind) + i;
  const uint32_t s = op_stack_[op];
  const StackInfo& meta = stacks_[s];
  OpAttribution a;
  a.source = meta.source;
  a.inherited = (meta.origin_inherited & 1) != 0;
  a.range = meta.own_depth > 0 ? entries_[meta.offset] : kNoRange;
  const uint32_t r = op_record_[op];
  switch (static_cast<Origin>(meta.origin_inherited >> 1)) {
    case Origin::kLaunch:
      a.thread = process_->launches[r].thread;
      a.launch_ns = process_->launches[r].time_ns;
      break;
    case Origin::kApi:
      a.thread = process_->api_calls[r].thread;
      a.launch_ns = process_->api_calls[r].start_ns;
      break;
    case Origin::kSnapshot:
      a.thread = process_->graph_nodes[r].thread;
      a.launch_ns = process_->graph_nodes[r].time_ns;
      break;
    case Origin::kNone:
      break;
  }
  return a;
}

bool ParseMainThreadOption(std::string_view text, AttributionOptions* o) {
  if (text == "auto") {
    o->main_thread = MainThreadMode::kAuto;
    return true;
  }
  if (text == "off") {
    o->main_thread = MainThreadMode::kOff;
    return true;
  }
  uint64_t tid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), tid);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return false;
  o->main_thread = MainThreadMode::kThread;
  o->main_thread_tid = tid;
  return true;
}

}  // namespace tracer::analysis
