#include "libtracer/analysis/tables/row_builder.h"

#include <algorithm>

#include "libtracer/analysis/tables/demangle.h"
#include "libtracer/analysis/tables/table_util.h"

namespace tracer::analysis {
namespace {

constexpr size_t kCacheSize = 256;
constexpr size_t kMaxThreadsShown = 8;

const char* CopyKindName(uint32_t kind) {
  static const char* const kNames[] = {
      "memcpy (unknown)", "memcpy HtoD", "memcpy DtoH", "memcpy HtoA", "memcpy AtoH", "memcpy AtoA",
      "memcpy AtoD",      "memcpy DtoA", "memcpy DtoD", "memcpy HtoH", "memcpy PtoP"};
  return kind < std::size(kNames) ? kNames[kind] : "memcpy (unknown)";
}

// Rows of several processes (or of domain ids with one name) add up.
void MergeRangeRow(RangeRow&& from, RangeRow* to) {
  to->cpu.Merge(from.cpu);
  to->push_pop |= from.push_pop;
  to->start_end |= from.start_end;
  to->min_depth = std::min(to->min_depth, from.min_depth);
  to->max_depth = std::max(to->max_depth, from.max_depth);
  to->proj.Merge(from.proj);
  if (to->busy.has_value() && from.busy.has_value()) {
    *to->busy = SaturatingAdd(*to->busy, *from.busy);
  } else {
    to->busy.reset();
  }
  to->ops += from.ops;
  to->kernel_count += from.kernel_count;
  to->kernel_ns = SaturatingAdd(to->kernel_ns, from.kernel_ns);
  to->max_streams = std::max(to->max_streams, from.max_streams);
  for (const auto& [kernel, ns] : from.kernel_time) {
    int64_t& t = to->kernel_time[kernel];
    t = SaturatingAdd(t, ns);
  }
}

}  // namespace

RowBuilder::RowBuilder(TableRows* rows, const ReportOptions& o)
    : rows_(rows), options_(o), cache_(kCacheSize) {}

void RowBuilder::BeginProcess(size_t process) {
  process_ = process;
  row_process_ = options_.by_process ? process : 0;
  ranges_.clear();
  range_index_.clear();
  range_by_name_.clear();
  cells_.clear();
  cell_index_.clear();
  std::fill(cache_.begin(), cache_.end(), CacheEntry());
  kernel_rows_.clear();
  for (auto& rows : api_rows_) rows.clear();
}

RowBuilder::RangeRef RowBuilder::Range(uint32_t domain, uint32_t name) {
  if (domain == 0) {
    // The default domain, by far the most common: a slot per name id
    // (string ids are dense) instead of a hash map node per name.
    if (name >= range_by_name_.size()) {
      range_by_name_.resize(std::max<size_t>(name + 1, 2 * range_by_name_.size()), kNoRef);
    }
    RangeRef& slot = range_by_name_[name];
    if (slot == kNoRef) {
      slot = static_cast<RangeRef>(ranges_.size());
      RangeBuild& b = ranges_.emplace_back();
      b.name = name;
    }
    return slot;
  }
  const uint64_t key = (static_cast<uint64_t>(domain) << 32) | name;
  auto [it, inserted] = range_index_.emplace(key, static_cast<RangeRef>(ranges_.size()));
  if (inserted) {
    RangeBuild& b = ranges_.emplace_back();
    b.domain = domain;
    b.name = name;
  }
  return it->second;
}

void RowBuilder::AddCpu(RangeRef r, uint32_t thread, uint64_t cpu_ns, uint32_t depth,
                        RangeKind kind) {
  RangeBuild& b = ranges_[r];
  b.row.cpu.Add(static_cast<int64_t>(cpu_ns));
  (kind == RangeKind::kStartEnd ? b.row.start_end : b.row.push_pop) = true;
  b.row.min_depth = std::min(b.row.min_depth, depth);
  b.row.max_depth = std::max(b.row.max_depth, depth);
  if (b.threads.size() < kMaxThreadsShown &&
      std::find(b.threads.begin(), b.threads.end(), thread) == b.threads.end()) {
    b.threads.push_back(thread);
  }
}

void RowBuilder::AddGpu(RangeRef r, const InstanceGpu& gpu) {
  RangeRow& row = ranges_[r].row;
  row.proj.Add(static_cast<int64_t>(gpu.span_ns));
  // Sums saturate (aggregate/duration_accumulator.h SaturatingAdd).
  *row.busy =
      SaturatingAdd(*row.busy, static_cast<int64_t>(std::min<uint64_t>(gpu.busy_ns, INT64_MAX)));
  row.ops += gpu.ops;
  row.kernel_count += gpu.kernels;
  row.kernel_ns = SaturatingAdd(row.kernel_ns, gpu.kernel_ns);
  row.max_streams = std::max(row.max_streams, gpu.streams);
}

RowBuilder::KernelCell& RowBuilder::Cell(RangeRef r, uint32_t kernel) {
  const uint64_t key = (static_cast<uint64_t>(r) << 32) | kernel;
  CacheEntry& e = cache_[(key * 0x9E3779B97F4A7C15ull) >> 56];
  if (e.key != key) {
    auto [it, inserted] = cell_index_.emplace(key, static_cast<uint32_t>(cells_.size()));
    if (inserted) cells_.push_back({key, {}});
    e = {key, it->second};
  }
  return cells_[e.cell];
}

void RowBuilder::AddInstanceKernel(RangeRef r, uint32_t kernel, int64_t duration_ns, bool first) {
  KernelCell& c = Cell(r, kernel);
  c.row.durations.Add(duration_ns);
  if (first) ++c.row.instances;
}

void RowBuilder::MergeInstanceKernels(RangeRef r, uint32_t kernel,
                                      const DurationAccumulator& durations) {
  KernelCell& c = Cell(r, kernel);
  c.row.durations.Merge(durations);
  ++c.row.instances;
}

void RowBuilder::AddKernel(uint32_t kernel, int64_t duration_ns) {
  // Map values keep their address: one tree lookup per kernel name.
  if (kernel >= kernel_rows_.size()) kernel_rows_.resize(kernel + 1, nullptr);
  DurationAccumulator*& row = kernel_rows_[kernel];
  if (row == nullptr) row = &rows_->kernels[{row_process_, kernel}];
  row->Add(duration_ns);
  rows_->all_kernel_ns = SaturatingAdd(rows_->all_kernel_ns, duration_ns);
}

void RowBuilder::AddApi(const ApiRecord& a) {
  const bool driver = a.domain == ApiDomain::kDriver;
  // Map values keep their address: one name and tree lookup per function
  // name id and domain, not per call.
  std::vector<DurationAccumulator*>& by_name = api_rows_[driver ? 1 : 0];
  DurationAccumulator** cached = nullptr;
  if (a.name != 0) {
    if (a.name >= by_name.size()) by_name.resize(a.name + 1, nullptr);
    cached = &by_name[a.name];
  }
  DurationAccumulator* row = cached != nullptr ? *cached : nullptr;
  if (row == nullptr) {
    std::string name(ApiDisplayName(rows_->strings->Get(a.name)));
    if (name.empty()) name = "cbid " + std::to_string(a.cbid);
    row = &rows_->api[{row_process_, std::move(name), driver ? "driver" : "runtime"}];
    // An empty display name depends on the cbid: not cached.
    if (cached != nullptr && !ApiDisplayName(rows_->strings->Get(a.name)).empty()) *cached = row;
  }
  row->Add(static_cast<int64_t>(a.end_ns - a.start_ns));
}

void RowBuilder::AddMemcpy(const MemcpyRecord& m) {
  MemoryRow& g = rows_->memory[{row_process_, CopyKindName(m.copy_kind)}];
  g.durations.Add(static_cast<int64_t>(m.end_ns - m.start_ns));
  g.sizes.Add(static_cast<int64_t>(std::min<uint64_t>(m.bytes, INT64_MAX)));
  g.bytes = SaturatingAdd(g.bytes, static_cast<int64_t>(std::min<uint64_t>(m.bytes, INT64_MAX)));
}

void RowBuilder::AddMemset(const MemsetRecord& m) {
  MemoryRow& g = rows_->memory[{row_process_, "memset"}];
  g.durations.Add(static_cast<int64_t>(m.end_ns - m.start_ns));
  g.sizes.Add(static_cast<int64_t>(std::min<uint64_t>(m.bytes, INT64_MAX)));
  g.bytes = SaturatingAdd(g.bytes, static_cast<int64_t>(std::min<uint64_t>(m.bytes, INT64_MAX)));
}

void RowBuilder::EndProcess(const ProcessTrace& p, const Trace& trace,
                            const ProcessCounts& counts) {
  const StringTable& strings = trace.strings;
  if (rows_->process_labels.size() <= process_) rows_->process_labels.resize(process_ + 1);
  rows_->process_labels[process_] = ProcessLabelOf(p);

  // Keys to names, through the --filter / --domain rules (once per distinct
  // name, not per instance).
  const RangeFilter filter(options_);
  std::vector<RangeRow*> row_of(ranges_.size(), nullptr);
  std::vector<std::string> name_of(ranges_.size());
  for (RangeRef r = 0; r < ranges_.size(); ++r) {
    RangeBuild& b = ranges_[r];
    std::string domain;
    if (b.domain != 0) {
      auto it = p.domain_names.find(b.domain);
      if (it != p.domain_names.end()) domain = std::string(strings.Get(it->second));
    }
    const std::string_view raw = strings.Get(b.name);
    name_of[r] = raw.empty() ? "(unnamed)" : std::string(raw);
    if (!filter.AcceptsName(domain, name_of[r])) continue;
    RangeRow& row = rows_->ranges[RangeRowKey(row_process_, domain, name_of[r])];
    for (uint32_t t : b.threads) {
      if (row.threads.size() < kMaxThreadsShown) row.threads.insert(ThreadLabel(trace, p, t));
    }
    MergeRangeRow(std::move(b.row), &row);
    row_of[r] = &row;
  }
  // range-kernels is keyed by range name alone (instances of every domain
  // the filter keeps); the ranges table lists each row's kernel time.
  for (KernelCell& c : cells_) {
    const RangeRef r = static_cast<RangeRef>(c.key >> 32);
    const uint32_t kernel = static_cast<uint32_t>(c.key);
    if (row_of[r] == nullptr) continue;
    int64_t& kernel_time = row_of[r]->kernel_time[kernel];
    kernel_time = SaturatingAdd(kernel_time, c.row.durations.total());
    RangeKernelRow& out = rows_->range_kernels[{row_process_, name_of[r]}][kernel];
    out.durations.Merge(c.row.durations);
    out.instances += c.row.instances;
  }

  std::vector<std::string>& notes = rows_->summary_notes;
  SummaryRow row = SummaryRowOf(p, &notes);
  row.ranges = counts.ranges;
  row.marks = counts.marks;
  row.kernels = counts.kernels;
  row.memcpys = counts.memcpys;
  row.memsets = counts.memsets;
  row.api_calls = counts.api_calls;
  row.unattributed = counts.unattributed;
  row.outside_ranges = counts.outside_ranges;
  row.inherited = counts.inherited;
  if (counts.main_thread != 0) row.main_thread = ThreadLabel(trace, p, counts.main_thread);
  rows_->summary.push_back(std::move(row));

  BeginProcess(process_ + 1);  // frees this process's builds
}

}  // namespace tracer::analysis
