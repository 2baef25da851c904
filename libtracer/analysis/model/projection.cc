#include "libtracer/analysis/model/projection.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace tracer::analysis {
namespace {

// Running projection of one key. Ops arrive in start order, so the union of
// their intervals grows at the right end only: busy adds the part of each op
// that lies beyond the furthest end seen so far.
constexpr uint64_t kMaxNs = static_cast<uint64_t>(INT64_MAX);

struct Acc {
  GpuSpan span;
  uint64_t covered_to = 0;
  void Add(uint64_t start, uint64_t end, bool kernel) {
    if (span.op_count == 0) {
      span.start_ns = start;
      span.end_ns = end;
      covered_to = start;
    }
    span.end_ns = std::max(span.end_ns, end);
    if (end > covered_to) {
      span.busy_ns += end - std::max(start, covered_to);
      covered_to = end;
    }
    ++span.op_count;
    if (kernel) {
      ++span.kernel_count;
      // Saturated at INT64_MAX (the tables' totals are int64): only crafted
      // traces get there.
      const uint64_t d = end - start;
      span.kernel_ns = d > kMaxNs - span.kernel_ns ? kMaxNs : span.kernel_ns + d;
    }
  }
};

struct OpRef {
  uint64_t start, end;
  uint32_t stream;
  OpKind kind;
  uint32_t index;
};

}  // namespace

Projection::Projection(const ProcessTrace& p, const Attribution& attribution) {
  std::vector<OpRef> ops;
  ops.reserve(p.kernels.size() + p.memcpys.size() + p.memsets.size());
  for (uint32_t i = 0; i < p.kernels.size(); ++i) {
    ops.push_back(
        {p.kernels[i].start_ns, p.kernels[i].end_ns, p.kernels[i].stream, OpKind::kKernel, i});
  }
  for (uint32_t i = 0; i < p.memcpys.size(); ++i) {
    ops.push_back(
        {p.memcpys[i].start_ns, p.memcpys[i].end_ns, p.memcpys[i].stream, OpKind::kMemcpy, i});
  }
  for (uint32_t i = 0; i < p.memsets.size(); ++i) {
    ops.push_back(
        {p.memsets[i].start_ns, p.memsets[i].end_ns, p.memsets[i].stream, OpKind::kMemset, i});
  }
  // Start order (ties broken by kind and index, so results never depend on
  // the sort's stability).
  const auto before = [](const OpRef& a, const OpRef& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.index < b.index;
  };
  if (!std::is_sorted(ops.begin(), ops.end(), before)) std::sort(ops.begin(), ops.end(), before);

  std::vector<Acc> totals(p.ranges.size());
  // Per range, its streams: a handful each, so a linear scan beats hashing.
  std::vector<std::vector<std::pair<uint32_t, Acc>>> per_stream(p.ranges.size());
  for (const OpRef& op : ops) {
    const uint64_t end = std::max(op.end, op.start);
    const bool kernel = op.kind == OpKind::kKernel;
    for (uint32_t r : attribution.Stack(op.kind, op.index)) {
      if (r >= totals.size()) continue;
      totals[r].Add(op.start, end, kernel);
      auto& streams = per_stream[r];
      auto it = std::find_if(streams.begin(), streams.end(),
                             [&](const auto& e) { return e.first == op.stream; });
      if (it == streams.end()) {
        streams.emplace_back(op.stream, Acc());
        it = streams.end() - 1;
      }
      it->second.Add(op.start, end, kernel);
    }
  }

  by_range_.resize(p.ranges.size());
  for (size_t r = 0; r < totals.size(); ++r) {
    if (totals[r].span.op_count == 0) continue;
    auto proj = std::make_unique<InstanceProjection>();
    proj->total = totals[r].span;
    by_range_[r] = std::move(proj);
    ++with_gpu_;
  }
  for (size_t r = 0; r < per_stream.size(); ++r) {
    auto& proj = by_range_[r];
    if (!proj) continue;
    for (const auto& [stream, acc] : per_stream[r]) {
      StreamSpan s;
      static_cast<GpuSpan&>(s) = acc.span;
      s.stream = stream;
      proj->streams.push_back(s);
    }
    std::sort(proj->streams.begin(), proj->streams.end(),
              [](const StreamSpan& a, const StreamSpan& b) { return a.stream < b.stream; });
  }
}

const InstanceProjection* Projection::Of(uint32_t range_index) const {
  return range_index < by_range_.size() ? by_range_[range_index].get() : nullptr;
}

}  // namespace tracer::analysis
