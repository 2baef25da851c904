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

// Each op's attribution stack as global range indexes, ops in the order
// they were added: stack k is ranges[offsets[k], offsets[k + 1]).
struct OpStacks {
  std::vector<uint32_t> offsets = {0};
  std::vector<uint32_t> ranges;
};

// A process's ranges as RangeFacts; their parents offset by range_base.
void AppendRanges(const ProcessAnalysis& pa, uint32_t p, std::vector<RangeFact>* out) {
  const ProcessTrace& pt = *pa.process;
  const uint32_t range_base = static_cast<uint32_t>(out->size());
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
    out->push_back(f);
  }
}

// Launching API call by correlation id: a dense table when the ids are
// compact (CUPTI hands them out sequentially), else a hash map.
class LaunchIndex {
 public:
  explicit LaunchIndex(const std::vector<ApiRecord>& api_calls) {
    for (const ApiRecord& a : api_calls) {
      if (a.correlation_id == 0) continue;
      min_corr_ = std::min(min_corr_, a.correlation_id);
      max_corr_ = std::max(max_corr_, a.correlation_id);
    }
    dense_ = min_corr_ <= max_corr_ && max_corr_ - min_corr_ < 4 * api_calls.size() + 1024;
    if (dense_) {
      dense_calls_.assign(max_corr_ - min_corr_ + 1, nullptr);
    } else {
      sparse_calls_.reserve(api_calls.size());
    }
    for (const ApiRecord& a : api_calls) {
      if (a.correlation_id == 0) continue;
      if (dense_) {
        dense_calls_[a.correlation_id - min_corr_] = &a;
      } else {
        sparse_calls_.emplace(a.correlation_id, &a);
      }
    }
  }

  // The call of this correlation id, or nullptr.
  const ApiRecord* Of(uint64_t correlation) const {
    if (correlation == 0) return nullptr;
    if (dense_) {
      return correlation >= min_corr_ && correlation <= max_corr_
                 ? dense_calls_[correlation - min_corr_]
                 : nullptr;
    }
    auto it = sparse_calls_.find(correlation);
    return it == sparse_calls_.end() ? nullptr : it->second;
  }

 private:
  uint64_t min_corr_ = UINT64_MAX, max_corr_ = 0;
  bool dense_ = false;
  std::vector<const ApiRecord*> dense_calls_;
  std::unordered_map<uint64_t, const ApiRecord*> sparse_calls_;
};

// Where AppendOps puts the ops and what it counts.
struct OpsOut {
  explicit OpsOut(std::vector<OpFact>* ops_out) : ops(ops_out) {}
  std::vector<OpFact>* ops;
  OpStacks stacks;
  uint64_t unattributed = 0;
  uint64_t inherited = 0;
};

// A process's GPU ops in (kind, record) order, with their launching call's
// times and their stacks mapped to global range indexes (range_base on).
// Memory ops are named by the synthetic names from base_name on.
void AppendOps(const ProcessAnalysis& pa, uint32_t p, uint32_t range_base, uint32_t base_name,
               OpsOut* out) {
  const ProcessTrace& pt = *pa.process;
  const LaunchIndex launches(pt.api_calls);
  const size_t op_total = pt.kernels.size() + pt.memcpys.size() + pt.memsets.size();
  out->ops->reserve(out->ops->size() + op_total);
  out->stacks.offsets.reserve(out->stacks.offsets.size() + op_total);
  out->stacks.ranges.reserve(out->stacks.ranges.size() + op_total * 4);
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
    if (const ApiRecord* api = launches.Of(correlation)) {
      op.launch_start_ns = api->start_ns;
      op.launch_end_ns = std::max(api->end_ns, api->start_ns);
    }
    out->ops->push_back(op);
    const OpAttribution& a = pa.attribution.Of(kind, i);
    if (a.source == AttributionSource::kNone) ++out->unattributed;
    if (a.inherited) ++out->inherited;
    for (uint32_t r : pa.attribution.Stack(kind, i)) out->stacks.ranges.push_back(range_base + r);
    out->stacks.offsets.push_back(static_cast<uint32_t>(out->stacks.ranges.size()));
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

// Sorts ops by start (stable) and returns the old index of each op in its
// new place.
std::vector<uint32_t> SortOpsByStart(std::vector<OpFact>* ops) {
  std::vector<uint32_t> order(ops->size());
  std::iota(order.begin(), order.end(), 0u);
  const bool sorted =
      std::is_sorted(ops->begin(), ops->end(),
                     [](const OpFact& a, const OpFact& b) { return a.start_ns < b.start_ns; });
  if (sorted) return order;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return (*ops)[a].start_ns < (*ops)[b].start_ns; });
  std::vector<OpFact> by_start;
  by_start.reserve(ops->size());
  for (uint32_t o : order) by_start.push_back((*ops)[o]);
  *ops = std::move(by_start);
  return order;
}

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
  OpsOut out(&ops_);
  for (uint32_t p = 0; p < analyzed.size(); ++p) {
    const uint32_t range_base = static_cast<uint32_t>(ranges_.size());
    AppendRanges(analyzed.process(p), p, &ranges_);
    AppendOps(analyzed.process(p), p, range_base, base_name, &out);
  }
  unattributed_ops_ += out.unattributed;
  inherited_ops_ += out.inherited;

  // op_index_ lists each range's ops in start order.
  const std::vector<uint32_t> order = SortOpsByStart(&ops_);
  const OpStacks& stacks = out.stacks;
  op_offsets_.assign(ranges_.size() + 1, 0);
  for (uint32_t r : stacks.ranges) ++op_offsets_[r + 1];
  for (size_t r = 0; r < ranges_.size(); ++r) op_offsets_[r + 1] += op_offsets_[r];
  op_index_.assign(stacks.ranges.size(), 0);
  std::vector<uint32_t> fill(op_offsets_.begin(), op_offsets_.end() - 1);
  for (uint32_t new_index = 0; new_index < order.size(); ++new_index) {
    const uint32_t old = order[new_index];
    for (uint32_t s = stacks.offsets[old]; s < stacks.offsets[old + 1]; ++s) {
      op_index_[fill[stacks.ranges[s]]++] = new_index;
    }
  }
}

}  // namespace tracer::analysis::reports
