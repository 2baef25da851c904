#include "libtracer/analysis/reports/report_model.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace tracer::analysis::reports {
namespace {

// Names of memory ops, as Nsight Systems labels them. They get ids above the
// trace's string table (see Name()).
const char* const kMemoryOpNames[] = {
    "[CUDA memcpy Unknown]",          "[CUDA memcpy Host-to-Device]",
    "[CUDA memcpy Device-to-Host]",   "[CUDA memcpy Host-to-Array]",
    "[CUDA memcpy Array-to-Host]",    "[CUDA memcpy Array-to-Array]",
    "[CUDA memcpy Array-to-Device]",  "[CUDA memcpy Device-to-Array]",
    "[CUDA memcpy Device-to-Device]", "[CUDA memcpy Host-to-Host]",
    "[CUDA memcpy Peer-to-Peer]",     "[CUDA memset]"};
constexpr uint32_t kMemsetName = 11;
constexpr uint32_t kCopyKinds = 11;

}  // namespace

std::string_view ReportModel::Name(uint32_t id) const {
  const size_t n = trace_->strings.size();
  if (id >= n) {
    const size_t k = id - n;
    return k < synthetic_names_.size() ? std::string_view(synthetic_names_[k]) : "";
  }
  std::string_view s = trace_->strings.Get(id);
  return s.empty() ? std::string_view("(unnamed)") : s;
}

ReportModel::ReportModel(const AnalyzedTrace& analyzed) : trace_(&analyzed.trace()) {
  const uint32_t base_name = static_cast<uint32_t>(trace_->strings.size());
  synthetic_names_.assign(std::begin(kMemoryOpNames), std::end(kMemoryOpNames));
  name_count_ = base_name + synthetic_names_.size();

  // Ops in (process, kind, record) order with their stacks mapped to global
  // range indexes; sorted by start afterwards.
  std::vector<uint32_t> stack_offsets = {0};
  std::vector<uint32_t> stacks;
  for (uint32_t p = 0; p < analyzed.size(); ++p) {
    const ProcessAnalysis& pa = analyzed.process(p);
    const ProcessTrace& pt = *pa.process;
    const uint32_t range_base = static_cast<uint32_t>(ranges_.size());
    for (uint32_t i = 0; i < pt.ranges.size(); ++i) {
      const RangeRecord& r = pt.ranges[i];
      RangeFact f;
      f.name = r.name;
      f.process = p;
      f.thread = r.thread;
      f.local = i;
      f.start_ns = r.start_ns;
      f.end_ns = std::max(r.end_ns, r.start_ns);
      f.depth = pa.ranges.Depth(i);
      const uint32_t parent = pa.ranges.Parent(i);
      f.parent = parent == kNoRange ? -1 : static_cast<int32_t>(range_base + parent);
      f.push_pop = r.kind == RangeKind::kPushPop;
      if (const InstanceProjection* proj = pa.projection().Of(i)) {
        f.has_gpu = true;
        f.gpu_start_ns = proj->total.start_ns;
        f.gpu_end_ns = proj->total.end_ns;
        f.busy_ns = proj->total.busy_ns;
        f.kernel_ns = proj->total.kernel_ns;
        f.op_count = proj->total.op_count;
        f.kernel_count = proj->total.kernel_count;
      }
      ranges_.push_back(f);
    }
    // Launching API call by correlation id: a dense table when the ids are
    // compact (CUPTI hands them out sequentially), else a hash map.
    uint64_t min_corr = UINT64_MAX, max_corr = 0;
    for (const ApiRecord& a : pt.api_calls) {
      if (a.correlation_id == 0) continue;
      min_corr = std::min(min_corr, a.correlation_id);
      max_corr = std::max(max_corr, a.correlation_id);
    }
    const bool dense = min_corr <= max_corr && max_corr - min_corr < 4 * pt.api_calls.size() + 1024;
    std::vector<const ApiRecord*> api_dense;
    std::unordered_map<uint64_t, const ApiRecord*> api_sparse;
    if (dense) {
      api_dense.assign(max_corr - min_corr + 1, nullptr);
    } else {
      api_sparse.reserve(pt.api_calls.size());
    }
    for (const ApiRecord& a : pt.api_calls) {
      if (a.correlation_id == 0) continue;
      if (dense) {
        api_dense[a.correlation_id - min_corr] = &a;
      } else {
        api_sparse.emplace(a.correlation_id, &a);
      }
    }
    auto api_of = [&](uint64_t correlation) -> const ApiRecord* {
      if (correlation == 0) return nullptr;
      if (dense) {
        return correlation >= min_corr && correlation <= max_corr
                   ? api_dense[correlation - min_corr]
                   : nullptr;
      }
      auto it = api_sparse.find(correlation);
      return it == api_sparse.end() ? nullptr : it->second;
    };
    const size_t op_total = pt.kernels.size() + pt.memcpys.size() + pt.memsets.size();
    ops_.reserve(ops_.size() + op_total);
    stack_offsets.reserve(stack_offsets.size() + op_total);
    stacks.reserve(stacks.size() + op_total * 4);
    auto add = [&](OpKind kind, size_t i, uint64_t start, uint64_t end, uint32_t name,
                   uint32_t stream, uint64_t correlation) {
      OpFact op;
      op.start_ns = start;
      op.end_ns = std::max(end, start);
      op.name = name;
      op.process = p;
      op.stream = stream;
      op.kind = kind;
      op.record = static_cast<uint32_t>(i);
      if (const ApiRecord* api = api_of(correlation)) {
        op.launch_start_ns = api->start_ns;
        op.launch_end_ns = std::max(api->end_ns, api->start_ns);
      }
      ops_.push_back(op);
      const OpAttribution& a = pa.attribution.Of(kind, i);
      if (a.source == AttributionSource::kNone) ++unattributed_ops_;
      if (a.inherited) ++inherited_ops_;
      for (uint32_t r : pa.attribution.Stack(kind, i)) stacks.push_back(range_base + r);
      stack_offsets.push_back(static_cast<uint32_t>(stacks.size()));
    };
    for (size_t i = 0; i < pt.kernels.size(); ++i) {
      const KernelRecord& k = pt.kernels[i];
      add(OpKind::kKernel, i, k.start_ns, k.end_ns, k.name, k.stream, k.correlation_id);
    }
    for (size_t i = 0; i < pt.memcpys.size(); ++i) {
      const MemcpyRecord& m = pt.memcpys[i];
      add(OpKind::kMemcpy, i, m.start_ns, m.end_ns,
          base_name + (m.copy_kind < kCopyKinds ? m.copy_kind : 0), m.stream, m.correlation_id);
    }
    for (size_t i = 0; i < pt.memsets.size(); ++i) {
      const MemsetRecord& m = pt.memsets[i];
      add(OpKind::kMemset, i, m.start_ns, m.end_ns, base_name + kMemsetName, m.stream,
          m.correlation_id);
    }
  }

  // Sort ops by start; op_index_ then lists each range's ops in start order.
  std::vector<uint32_t> order(ops_.size());
  std::iota(order.begin(), order.end(), 0u);
  const bool sorted =
      std::is_sorted(ops_.begin(), ops_.end(),
                     [](const OpFact& a, const OpFact& b) { return a.start_ns < b.start_ns; });
  if (!sorted) {
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return ops_[a].start_ns < ops_[b].start_ns; });
    std::vector<OpFact> by_start;
    by_start.reserve(ops_.size());
    for (uint32_t o : order) by_start.push_back(ops_[o]);
    ops_ = std::move(by_start);
  }
  op_offsets_.assign(ranges_.size() + 1, 0);
  for (uint32_t r : stacks) ++op_offsets_[r + 1];
  for (size_t r = 0; r < ranges_.size(); ++r) op_offsets_[r + 1] += op_offsets_[r];
  op_index_.assign(stacks.size(), 0);
  std::vector<uint32_t> fill(op_offsets_.begin(), op_offsets_.end() - 1);
  for (uint32_t new_index = 0; new_index < order.size(); ++new_index) {
    const uint32_t old = order[new_index];
    for (uint32_t s = stack_offsets[old]; s < stack_offsets[old + 1]; ++s) {
      op_index_[fill[stacks[s]]++] = new_index;
    }
  }
}

}  // namespace tracer::analysis::reports
