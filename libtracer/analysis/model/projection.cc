#include "libtracer/analysis/model/projection.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace tracer::analysis {
namespace {

// Running projection of one key, updated in place. Ops arrive in start
// order, so the union of their intervals grows at the right end only: busy
// adds the part of each op that lies beyond the furthest end seen so far,
// which is span.end_ns itself (no separate high-water mark to hold).
constexpr uint64_t kMaxNs = static_cast<uint64_t>(INT64_MAX);

void Add(GpuSpan* span, uint64_t start, uint64_t end, bool kernel) {
  if (span->op_count == 0) {
    span->start_ns = start;
    span->end_ns = start;
  }
  if (end > span->end_ns) {
    span->busy_ns += end - std::max(start, span->end_ns);
    span->end_ns = end;
  }
  ++span->op_count;
  if (kernel) {
    ++span->kernel_count;
    // Saturated at INT64_MAX (the tables' totals are int64): only crafted
    // traces get there.
    const uint64_t d = end - start;
    span->kernel_ns = d > kMaxNs - span->kernel_ns ? kMaxNs : span->kernel_ns + d;
  }
}

// Record indexes of one op kind in start order (ties by index): none held
// when the records already are (the common case), else a permutation.
// start(i): record i's start.
template <typename Start>
std::vector<uint32_t> StartOrder(size_t size, const Start& start) {
  const auto by_start = [&](uint32_t x, uint32_t y) {
    return start(x) != start(y) ? start(x) < start(y) : x < y;
  };
  std::vector<uint32_t> order;
  for (size_t i = 1; i < size; ++i) {
    if (start(i) < start(i - 1)) {
      order.resize(size);
      std::iota(order.begin(), order.end(), 0u);
      std::sort(order.begin(), order.end(), by_start);
      break;
    }
  }
  return order;
}

}  // namespace

Projection::Projection(const ProcessTrace& p, const Attribution& attribution) {
  // Ops are visited in start order, ties broken by kind then index (so
  // results never depend on a sort's stability): a merge of the three kinds,
  // each in its own start order. Only a kind whose records are out of order
  // costs an index (4 bytes per op) rather than a copy of every op.
  // Kernels are read by column (a whole KernelRecord costs more than the
  // three fields used here).
  const auto start_of = [&](int kind, size_t i) -> uint64_t {
    return kind == 0   ? p.kernels.start_ns(i)
           : kind == 1 ? p.memcpys[i].start_ns
                       : p.memsets[i].start_ns;
  };
  const std::vector<uint32_t> order[3] = {
      StartOrder(p.kernels.size(), [&](size_t i) { return start_of(0, i); }),
      StartOrder(p.memcpys.size(), [&](size_t i) { return start_of(1, i); }),
      StartOrder(p.memsets.size(), [&](size_t i) { return start_of(2, i); })};
  const size_t sizes[3] = {p.kernels.size(), p.memcpys.size(), p.memsets.size()};
  size_t next[3] = {0, 0, 0};
  const auto index_of = [&](int kind, size_t pos) -> uint32_t {
    return order[kind].empty() ? static_cast<uint32_t>(pos) : order[kind][pos];
  };

  // Each range's projection is accumulated where it is kept: no running
  // copy per range beside it (that doubled the projection's peak memory).
  // While an instance's ops all ran on one stream (the common case), that
  // stream's span is its total: only instances on several streams hold
  // per-stream spans while the ops are read, a chain through one array
  // (newest first). Every instance's streams are laid out once all ops are in.
  struct StreamNode {
    StreamSpan span;
    uint32_t next;
  };
  constexpr uint32_t kNoNode = UINT32_MAX;
  struct Building {
    uint32_t first_stream;  // the stream of the instance's first op
    uint32_t first_node;    // kNoNode while every op ran on first_stream
  };
  std::vector<StreamNode> nodes;
  std::vector<Building> building;  // per pool_ slot
  slot_.assign(p.ranges.size(), kNoSlot);
  // At most one projection per range that some stack holds: reserved up
  // front, so that the pool is not copied as it grows (nor shrunk after).
  {
    std::vector<bool> held(p.ranges.size());
    size_t instances = 0;
    for (uint32_t s = 0; s < attribution.distinct_stacks(); ++s) {
      for (uint32_t r : attribution.StackAt(s)) {
        if (r < held.size() && !held[r]) {
          held[r] = true;
          ++instances;
        }
      }
    }
    pool_.reserve(instances);
    building.reserve(instances);
  }
  for (;;) {
    int kind = -1;
    uint32_t index = 0;
    uint64_t start = 0;
    for (int k = 0; k < 3; ++k) {
      if (next[k] == sizes[k]) continue;
      const uint32_t i = index_of(k, next[k]);
      const uint64_t s = start_of(k, i);
      // Strictly earlier only: on a tie the lower kind, already held, wins.
      if (kind < 0 || s < start) {
        kind = k;
        index = i;
        start = s;
      }
    }
    if (kind < 0) break;
    ++next[kind];
    uint64_t end = 0;
    uint32_t stream = 0;
    if (kind == 0) {
      const KernelRecord k = p.kernels[index];
      end = k.end_ns;
      stream = k.stream;
    } else if (kind == 1) {
      end = p.memcpys[index].end_ns;
      stream = p.memcpys[index].stream;
    } else {
      end = p.memsets[index].end_ns;
      stream = p.memsets[index].stream;
    }
    end = std::max(end, start);
    const bool kernel = kind == 0;
    for (uint32_t r : attribution.Stack(static_cast<OpKind>(kind), index)) {
      if (r >= slot_.size()) continue;
      uint32_t& slot = slot_[r];
      if (slot == kNoSlot) {
        slot = static_cast<uint32_t>(pool_.size());
        pool_.emplace_back();
        building.push_back({stream, kNoNode});
      }
      Building& bl = building[slot];
      GpuSpan& total = pool_[slot].total;
      if (bl.first_node == kNoNode && stream != bl.first_stream) {
        // A second stream: the first one's span so far is the total.
        bl.first_node = static_cast<uint32_t>(nodes.size());
        StreamNode& first = nodes.emplace_back(StreamNode{{}, kNoNode});
        static_cast<GpuSpan&>(first.span) = total;
        first.span.stream = bl.first_stream;
      }
      Add(&total, start, end, kernel);
      if (bl.first_node == kNoNode) continue;
      // A handful of streams per range: a linear scan beats hashing.
      uint32_t n = bl.first_node;
      while (n != kNoNode && nodes[n].span.stream != stream) n = nodes[n].next;
      if (n == kNoNode) {
        n = static_cast<uint32_t>(nodes.size());
        nodes.push_back({{}, bl.first_node});
        nodes.back().span.stream = stream;
        bl.first_node = n;
      }
      Add(&nodes[n].span, start, end, kernel);
    }
  }
  size_t spans = nodes.size();
  for (const Building& bl : building) spans += bl.first_node == kNoNode ? 1 : 0;
  streams_.reserve(spans);  // no reallocation: the spans below stay valid
  for (size_t slot = 0; slot < pool_.size(); ++slot) {
    const size_t begin = streams_.size();
    const Building& bl = building[slot];
    if (bl.first_node == kNoNode) {
      StreamSpan& only = streams_.emplace_back();
      static_cast<GpuSpan&>(only) = pool_[slot].total;
      only.stream = bl.first_stream;
    } else {
      for (uint32_t n = bl.first_node; n != kNoNode; n = nodes[n].next) {
        streams_.push_back(nodes[n].span);
      }
      std::sort(streams_.begin() + static_cast<std::ptrdiff_t>(begin), streams_.end(),
                [](const StreamSpan& a, const StreamSpan& b) { return a.stream < b.stream; });
    }
    pool_[slot].streams =
        std::span<const StreamSpan>(streams_.data() + begin, streams_.size() - begin);
  }
}

const InstanceProjection* Projection::Of(uint32_t range_index) const {
  if (range_index >= slot_.size() || slot_[range_index] == kNoSlot) return nullptr;
  return &pool_[slot_[range_index]];
}

}  // namespace tracer::analysis
