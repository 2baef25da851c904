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
template <typename Records>
std::vector<uint32_t> StartOrder(const Records& records) {
  const auto by_start = [&](uint32_t x, uint32_t y) {
    return records[x].start_ns != records[y].start_ns ? records[x].start_ns < records[y].start_ns
                                                      : x < y;
  };
  std::vector<uint32_t> order;
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].start_ns < records[i - 1].start_ns) {
      order.resize(records.size());
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
  const std::vector<uint32_t> order[3] = {StartOrder(p.kernels), StartOrder(p.memcpys),
                                          StartOrder(p.memsets)};
  const size_t sizes[3] = {p.kernels.size(), p.memcpys.size(), p.memsets.size()};
  size_t next[3] = {0, 0, 0};
  const auto index_of = [&](int kind, size_t pos) -> uint32_t {
    return order[kind].empty() ? static_cast<uint32_t>(pos) : order[kind][pos];
  };
  const auto start_of = [&](int kind, uint32_t i) -> uint64_t {
    return kind == 0   ? p.kernels[i].start_ns
           : kind == 1 ? p.memcpys[i].start_ns
                       : p.memsets[i].start_ns;
  };
  const auto end_of = [&](int kind, uint32_t i) -> uint64_t {
    return kind == 0 ? p.kernels[i].end_ns : kind == 1 ? p.memcpys[i].end_ns : p.memsets[i].end_ns;
  };
  const auto stream_of = [&](int kind, uint32_t i) -> uint32_t {
    return kind == 0 ? p.kernels[i].stream : kind == 1 ? p.memcpys[i].stream : p.memsets[i].stream;
  };

  // Each range's projection is accumulated where it is kept: no running
  // copy per range beside it (that doubled the projection's peak memory).
  slot_.assign(p.ranges.size(), kNoSlot);
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
    const uint64_t end = std::max(end_of(kind, index), start);
    const uint32_t stream = stream_of(kind, index);
    const bool kernel = kind == 0;
    for (uint32_t r : attribution.Stack(static_cast<OpKind>(kind), index)) {
      if (r >= slot_.size()) continue;
      uint32_t& slot = slot_[r];
      if (slot == kNoSlot) {
        slot = static_cast<uint32_t>(pool_.size());
        pool_.emplace_back();
      }
      InstanceProjection* proj = &pool_[slot];
      Add(&proj->total, start, end, kernel);
      // A handful of streams per range: a linear scan beats hashing.
      auto& streams = proj->streams;
      auto it = std::find_if(streams.begin(), streams.end(),
                             [&](const StreamSpan& e) { return e.stream == stream; });
      if (it == streams.end()) {
        streams.emplace_back();
        it = streams.end() - 1;
        it->stream = stream;
      }
      Add(&*it, start, end, kernel);
    }
  }
  pool_.shrink_to_fit();
  for (InstanceProjection& proj : pool_) {
    proj.streams.shrink_to_fit();
    std::sort(proj.streams.begin(), proj.streams.end(),
              [](const StreamSpan& a, const StreamSpan& b) { return a.stream < b.stream; });
  }
}

const InstanceProjection* Projection::Of(uint32_t range_index) const {
  if (range_index >= slot_.size() || slot_[range_index] == kNoSlot) return nullptr;
  return &pool_[slot_[range_index]];
}

}  // namespace tracer::analysis
